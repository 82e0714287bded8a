package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Esplora mode (-esplora): the same closed-loop sessions speak HTTP/1.1
// to an Esplora API, one keep-alive connection per session, so that the
// API and an Electrum server can be loaded alike on the same scripts.

// maxBlocks bounds the block hashes the Esplora mix draws headers from: the
// newest ones.
const maxBlocks = 10000

// maxBody bounds an answer the tool reads, as -timeout bounds its time.
const maxBody = 256 << 20

// esploraTarget is an Esplora API at base (its path prefix included).
type esploraTarget struct {
	base    string
	timeout time.Duration
}

func newEsploraTarget(base string, timeout time.Duration) *esploraTarget {
	return &esploraTarget{base: strings.TrimRight(base, "/"), timeout: timeout}
}

func (t *esploraTarget) wait() time.Duration { return t.timeout }

// esploraSession is one keep-alive connection: a transport of its own
// that never holds more than one.
type esploraSession struct {
	t      *esploraTarget
	tr     *http.Transport
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc
	body   []byte
}

// open connects with a request for the tip.
func (t *esploraTarget) open(ctx context.Context) (session, string, error) {
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true,
		ResponseHeaderTimeout: t.timeout, IdleConnTimeout: time.Minute}
	sctx, cancel := context.WithCancel(context.Background())
	s := &esploraSession{t: t, tr: tr, client: &http.Client{Transport: tr, Timeout: t.timeout}, ctx: sctx, cancel: cancel}
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if _, err := s.get("/blocks/tip/height"); err != nil {
		s.Close()
		return nil, "", err
	}
	return s, quoted("Esplora API"), nil
}

// Close ends the session, and a request in flight with it.
func (s *esploraSession) Close() error {
	s.cancel()
	s.tr.CloseIdleConnections()
	return nil
}

// httpError is an answer other than 200 OK.
type httpError struct {
	status int
	text   string
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.text) }

// get requests path and returns the body of a 200 answer (valid until the
// next get); another status is an *httpError.
func (s *esploraSession) get(path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.t.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	buf := bytes.NewBuffer(s.body[:0])
	_, err = buf.ReadFrom(io.LimitReader(resp.Body, maxBody+1))
	s.body = buf.Bytes()
	if err != nil {
		return nil, err
	}
	if len(s.body) > maxBody {
		return nil, fmt.Errorf("%s: answer over %d bytes", path, maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		text := strings.TrimSpace(string(s.body))
		if len(text) > 80 {
			text = text[:80] + "…"
		}
		return nil, &httpError{status: resp.StatusCode, text: text}
	}
	return s.body, nil
}

func (s *esploraSession) do(spec methodSpec, params []string) (answer, error) {
	if !spec.esplora() {
		return answer{}, fmt.Errorf("%s is not an Esplora request", spec.Name)
	}
	path := spec.Path
	if spec.Arg != argNone && len(params) > 0 {
		arg, err := strconv.Unquote(params[0])
		if err != nil {
			arg = params[0]
		}
		if spec.Arg == argScript {
			// Electrum's script hashes are byte-reversed; Esplora's
			// are not.
			arg = reverseHex(arg)
		}
		path = fmt.Sprintf(spec.Path, arg)
	}
	body, err := s.get(path)
	var he *httpError
	if errors.As(err, &he) {
		return answer{errKind: he.Error(), entries: -1}, nil
	}
	if err != nil {
		return answer{}, err
	}
	return answer{entries: arrayLen(body), bytes: len(body)}, nil
}

// arrayLen returns the number of elements of a JSON array, -1 for any other
// value.
func arrayLen(b []byte) int {
	if len(b) == 0 || b[0] != '[' {
		return -1
	}
	var a []json.RawMessage
	if json.Unmarshal(b, &a) != nil {
		return -1
	}
	return len(a)
}

// reverseHex reverses the bytes of a hex string; anything else is returned
// as it is.
func reverseHex(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		return s
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return hex.EncodeToString(b)
}

// call opens a session for one request.
func (t *esploraTarget) call(ctx context.Context, path string) ([]byte, error) {
	s, _, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.(*esploraSession).get(path)
}

func (t *esploraTarget) tip(ctx context.Context) (int64, error) {
	b, err := t.call(ctx, "/blocks/tip/height")
	if err != nil {
		return 0, err
	}
	h, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || h < 0 {
		return 0, fmt.Errorf("/blocks/tip/height: %q", b)
	}
	return h, nil
}

// harvest reads the first page of confirmed transactions of each script.
func (t *esploraTarget) harvest(ctx context.Context, scripts *hashList, n int) (*hashList, error) {
	s, _, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	l := &hashList{}
	for i := 0; i < n && i < len(scripts.Raw) && len(l.Raw) < maxHarvest; i++ {
		body, err := s.(*esploraSession).get("/scripthash/" + reverseHex(scripts.Raw[i]) + "/txs/chain")
		var he *httpError
		if errors.As(err, &he) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("collecting txids: %w", err)
		}
		var page []struct {
			TxID   string `json:"txid"`
			Status struct {
				BlockHeight int64 `json:"block_height"`
			} `json:"status"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("collecting txids: %w", err)
		}
		for _, tx := range page {
			l.add(tx.TxID)
			l.Heights = append(l.Heights, tx.Status.BlockHeight)
		}
	}
	if len(l.Raw) == 0 {
		return nil, errors.New("no confirmed txids in the heavy scripts' histories")
	}
	return l, nil
}

func (t *esploraTarget) blocks(ctx context.Context, from, to int64) (*hashList, error) {
	s, _, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	l := &hashList{}
	for h := from; h <= to && ctx.Err() == nil; h++ {
		b, err := s.(*esploraSession).get("/block-height/" + strconv.FormatInt(h, 10))
		if err != nil {
			return nil, fmt.Errorf("block hash at %d: %w", h, err)
		}
		l.add(string(b))
	}
	return l, ctx.Err()
}

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// Client name and protocol version sent in server.version.
const (
	clientName      = "electrum-load"
	protocolVersion = "1.4"
)

// errMalformed is a response the scanner could not read as one JSON
// object, or one whose id is not the request's.
var errMalformed = errors.New("malformed response")

// target is what the tool loads: an Electrum server (dialer) or an
// Esplora HTTP API (esploraTarget).
type target interface {
	// open opens a session; version is what the server says of itself.
	open(ctx context.Context) (s session, version string, err error)
	// tip returns the server's tip height.
	tip(ctx context.Context) (int64, error)
	// harvest collects confirmed txids, with their heights, from the
	// histories of the first n scripts.
	harvest(ctx context.Context, scripts *hashList, n int) (*hashList, error)
	// blocks returns the hashes of the blocks at heights from..to.
	blocks(ctx context.Context, from, to int64) (*hashList, error)
	// wait is the longest the tool waits to connect or for an answer.
	wait() time.Duration
}

// session is one connection to the target, one request at a time.
type session interface {
	// do sends a request of spec with params and waits for its answer.
	// An error means the session is unusable.
	do(spec methodSpec, params []string) (answer, error)
	Close() error
}

// answer is what a request got: errKind names an error answer (empty
// for a result); entries is the number of elements of an array result
// (-1 for other results), bytes the result's size.
type answer struct {
	errKind string
	entries int
	bytes   int
}

// conn is one Electrum session over TCP (or TLS): newline-delimited
// JSON-RPC, one request at a time. Responses are scanned, not decoded.
type conn struct {
	nc      net.Conn
	r       *bufio.Reader
	w       []byte // request buffer, reused
	nextID  int64
	sc      scanner
	timeout time.Duration
}

// dialer opens sessions to one address, the only one the tool talks to.
type dialer struct {
	addr    string
	tls     bool
	timeout time.Duration // connect, and each request
}

// dial connects and negotiates the protocol version. It returns the
// server.version result.
func (d *dialer) dial(ctx context.Context) (*conn, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return nil, nil, err
	}
	if d.tls {
		host, _, _ := net.SplitHostPort(d.addr)
		// Benchmark servers run self-signed certificates; the tool
		// measures speed, it does not authenticate the server.
		tc := tls.Client(nc, &tls.Config{ServerName: host, InsecureSkipVerify: true})
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, nil, err
		}
		nc = tc
	}
	c := &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), timeout: d.timeout}
	m, err := c.call("server.version", true, quoted(clientName), quoted(protocolVersion))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("server.version: %w", err)
	}
	if m.Error != nil {
		nc.Close()
		e := parseError(m.Error)
		return nil, nil, fmt.Errorf("server.version: error %d: %s", e.Code, e.Message)
	}
	return c, append([]byte(nil), m.Result...), nil
}

// Close closes the connection.
func (c *conn) Close() error { return c.nc.Close() }

func (d *dialer) open(ctx context.Context) (session, string, error) {
	c, version, err := d.dial(ctx)
	if err != nil {
		return nil, "", err
	}
	return c, string(version), nil
}

func (d *dialer) wait() time.Duration { return d.timeout }

func (c *conn) do(spec methodSpec, params []string) (answer, error) {
	m, err := c.call(spec.RPC, false, params...)
	if err != nil {
		return answer{}, err
	}
	if m.Error != nil {
		return answer{errKind: errorKind(parseError(m.Error)), entries: -1}, nil
	}
	return answer{entries: m.ResultEntries, bytes: m.ResultBytes}, nil
}

// quoted returns s as a JSON string.
func quoted(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// call sends one request whose params are the given raw JSON values and
// reads its response, skipping notifications. keepResult asks for the
// result bytes (small results only). The returned message is valid until
// the next call. An error means the session is unusable: the connection
// failed, timed out, or the server answered something unreadable.
func (c *conn) call(method string, keepResult bool, params ...string) (*message, error) {
	id, err := c.send(method, params)
	if err != nil {
		return nil, err
	}
	for {
		m, err := c.readMessage(keepResult, nil)
		if err != nil {
			return nil, err
		}
		if done, err := c.isAnswer(m, id); done || err != nil {
			return m, err
		}
	}
}

// callFull is call returning the whole response line (at most limit
// bytes), for the rare answer the tool decodes.
func (c *conn) callFull(method string, limit int, params ...string) ([]byte, error) {
	id, err := c.send(method, params)
	if err != nil {
		return nil, err
	}
	for {
		var line []byte
		m, err := c.readMessage(false, func(p []byte) error {
			if len(line)+len(p) > limit {
				return fmt.Errorf("%s: answer over %d bytes", method, limit)
			}
			line = append(line, p...)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if done, err := c.isAnswer(m, id); done || err != nil {
			return line, err
		}
	}
}

// send writes a request and returns its id.
func (c *conn) send(method string, params []string) (int64, error) {
	c.nextID++
	id := c.nextID
	w := append(c.w[:0], `{"jsonrpc":"2.0","id":`...)
	w = strconv.AppendInt(w, id, 10)
	w = append(w, `,"method":"`...)
	w = append(w, method...)
	w = append(w, `","params":[`...)
	for i, p := range params {
		if i > 0 {
			w = append(w, ',')
		}
		w = append(w, p...)
	}
	w = append(w, "]}\n"...)
	c.w = w
	if err := c.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	_, err := c.nc.Write(w)
	return id, err
}

// isAnswer says whether m answers request id (true) or is to be skipped
// (a notification or an empty line); an error means the session cannot go
// on.
func (c *conn) isAnswer(m *message, id int64) (bool, error) {
	if m.Bytes == 0 {
		return false, nil // an empty line
	}
	if m.Malformed {
		return false, errMalformed
	}
	if m.ID == nil || string(m.ID) == "null" {
		if m.Method != nil {
			return false, nil // a notification
		}
		if m.Error != nil {
			// An error the server could not tie to a request (a
			// parse error): it answers this one.
			return true, nil
		}
		return false, errMalformed
	}
	if got, ok := parseID(m.ID); !ok || got != id {
		return false, fmt.Errorf("%w: id %s, want %d", errMalformed, m.ID, id)
	}
	if m.Error == nil && !m.HasResult {
		return false, errMalformed
	}
	return true, nil
}

// readMessage scans the next line; keep, when set, also gets its pieces.
func (c *conn) readMessage(keepResult bool, keep func([]byte) error) (*message, error) {
	c.sc.reset(keepResult)
	for {
		line, err := c.r.ReadSlice('\n')
		if err == nil {
			line = line[:len(line)-1]
		}
		if len(line) > 0 && (err == nil || errors.Is(err, bufio.ErrBufferFull)) {
			c.sc.feed(line)
			if keep != nil {
				if kerr := keep(line); kerr != nil {
					return nil, kerr
				}
			}
		}
		switch {
		case err == nil:
			return c.sc.finish(), nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

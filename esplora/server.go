package esplora

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"math"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/listen"
)

// Defaults of Config's zero fields.
const (
	// DefaultMaxUtxos is the largest unspent set /utxo returns; larger
	// ones fail as electrs' --utxos-limit makes them fail (Blockstream's
	// public servers use 500).
	DefaultMaxUtxos = 50_000
	// DefaultMaxHistory is the longest confirmed history the address
	// endpoints read.
	DefaultMaxHistory = 1_000_000
	// DefaultMaxBody is the largest request body: the hex of a
	// transaction of the largest block.
	DefaultMaxBody = 8_000_000
	// DefaultIdleTimeout closes keep-alive connections idle this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultReadTimeout bounds reading a request's headers and body.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds writing an answer to a slow client.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultMaxAnswerBytes bounds the bytes of the answers being written
	// to all clients at once, as the Electrum server bounds its sessions'
	// backlog (four times its per-session 16,000,000).
	DefaultMaxAnswerBytes = 64_000_000
	// DefaultMaxConnections bounds the open connections of all clients
	// together, as the Electrum server's DefaultMaxSessions bounds its
	// sessions.
	DefaultMaxConnections = 1000
)

// Esplora's paging and caching constants (electrs' rest.rs).
const (
	chainTxsPerPage = 25
	maxMempoolTxs   = 50
	blockLimit      = 10
	recentTxs       = 10
	ttlLong         = 157_784_630
	ttlShort        = 10
	ttlRecent       = 5
	confFinal       = 10
)

// Config configures a Server. Zero fields take the Default values.
type Config struct {
	// Listen are the addresses (host:port) to listen on; Listeners are
	// listeners already bound (tests pass port-0 listeners).
	Listen    []string
	Listeners []net.Listener
	// TLSListen are addresses served over TLS (1.2 or newer) with the
	// certificate GetCertificate returns at each handshake, else the one
	// in TLSCertFile and TLSKeyFile.
	TLSListen      []string
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	TLSCertFile    string
	TLSKeyFile     string
	// PathPrefix serves the API under a path such as "/api" (as
	// blockstream.info does); empty serves it at the root. Start refuses
	// a prefix without a leading slash or with a space, "?" or "#": no
	// request path would match it.
	PathPrefix string

	// MaxRequestsPerIP bounds the requests of one client address answered
	// at once (DefaultMaxRequestsPerIP when zero; negative: no bound);
	// addresses in ExemptNets are not bounded, and a request from them
	// with X-Forwarded-For counts against the forwarded address.
	MaxRequestsPerIP int
	ExemptNets       []*net.IPNet
	// MaxConnections bounds the open connections of all clients not in
	// ExemptNets together (DefaultMaxConnections when zero; negative: no
	// bound): each holds a goroutine and a descriptor until the timeouts,
	// and the per-address bound alone does not limit many addresses.
	MaxConnections int

	// CostSoftLimit, CostHardLimit, RequestSleep and BandwidthUnit are the
	// Electrum server's cost limits (cost.go), applied per client address;
	// zero takes the Electrum server's default, a negative CostHardLimit
	// disables them. Clients in ExemptNets are not charged unless
	// ThrottleExempt.
	CostSoftLimit, CostHardLimit float64
	RequestSleep                 time.Duration
	BandwidthUnit                int
	ThrottleExempt               bool

	// CORS, when set, is sent as Access-Control-Allow-Origin with every
	// answer (electrs' --cors), so web pages of those origins may call
	// the API: "*" for any.
	CORS string

	MaxUtxos   int
	MaxHistory int
	MaxBody    int64
	// MaxAnswerBytes bounds the bytes of the answers being written to all
	// clients at once (answerBudget); zero takes DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	IdleTimeout    time.Duration
	ReadTimeout    time.Duration
	WriteTimeout   time.Duration

	// Logf, when set, receives the server's log lines.
	Logf func(format string, args ...any)
}

// Server serves Esplora's HTTP API from the Electrum index with its view of
// unconfirmed transactions, and btcd's chain.
type Server struct {
	cfg    Config
	index  Index
	chain  Chain
	prefix string
	stats  *statsCache
	// histories is the cache of long histories (address.go).
	histories historyCache
	// flights are the history reads under way, which requests for the
	// same script at the same tip share (address.go).
	flights  historyFlights
	inFlight inFlight
	answers  answerBudget
	bodies   answerBudget // the request bodies being read (readBody)
	// conns counts the open connections by client address and in all,
	// connKeys the address each counted connection is counted against
	// (connState).
	conns    openConns
	connKeys sync.Map
	// limits and costs are the cost limits and the clients' accounts
	// (cost.go).
	limits costLimits
	costs  costAccounts
	mx     *metrics
	// readers bounds the goroutines reading the transactions of long
	// histories for their stats, histReaders those reading scripts'
	// histories, each across all requests: apart, so that stats reading
	// transactions never hold up a history another request needs.
	readers     chan struct{}
	histReaders chan struct{}

	mu        sync.Mutex
	srv       *http.Server
	listeners []net.Listener
	tls       []bool // listeners[i] serves HTTPS
	done      sync.WaitGroup
	// closed is set by Shutdown: a shut-down server does not start again,
	// as the Electrum server does not.
	closed bool
}

// New returns a server over the given parts; Start starts listening.
func New(cfg Config, index Index, chain Chain) *Server {
	if cfg.MaxUtxos <= 0 {
		cfg.MaxUtxos = DefaultMaxUtxos
	}
	if cfg.MaxHistory <= 0 {
		cfg.MaxHistory = DefaultMaxHistory
	}
	if cfg.MaxRequestsPerIP == 0 {
		cfg.MaxRequestsPerIP = DefaultMaxRequestsPerIP
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxAnswerBytes <= 0 {
		cfg.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Server{
		cfg: cfg, index: index, chain: chain,
		prefix: strings.TrimRight(cfg.PathPrefix, "/"),
		stats:  newStatsCache(statsCacheEntries),
		limits: limitsOf(&cfg),
		// Twice the processors: the reads wait for block files as
		// much as they compute.
		readers:     make(chan struct{}, 2*runtime.GOMAXPROCS(0)),
		histReaders: make(chan struct{}, 2*runtime.GOMAXPROCS(0)),
	}
}

// Start binds the configured addresses and serves them; it returns an
// error when an address cannot be bound. A server starts at most once, and
// not after Shutdown.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch p := s.cfg.PathPrefix; {
	case s.closed:
		return errors.New("esplora: server shut down")
	case s.srv != nil:
		return errors.New("esplora: server already started")
	case p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsAny(p, " ?#")):
		return fmt.Errorf("esplora: path prefix %q: want a path such as /api", p)
	}
	ls := append([]net.Listener(nil), s.cfg.Listeners...)
	isTLS := make([]bool, len(ls))
	fail := func(err error) error {
		for _, l := range ls[len(s.cfg.Listeners):] {
			_ = l.Close()
		}
		return err
	}
	var tlsConfig *tls.Config
	if len(s.cfg.TLSListen) > 0 && s.cfg.GetCertificate != nil {
		tlsConfig = &tls.Config{GetCertificate: s.cfg.GetCertificate, MinVersion: tls.VersionTLS12}
	} else if len(s.cfg.TLSListen) > 0 {
		pair, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
		if err != nil {
			return fmt.Errorf("Esplora TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	for i, addr := range append(append([]string(nil), s.cfg.Listen...), s.cfg.TLSListen...) {
		opened, err := listen.Listen(addr)
		if err != nil {
			return fail(fmt.Errorf("Esplora listener %s: %w", addr, err))
		}
		for _, l := range opened {
			secure := i >= len(s.cfg.Listen)
			if secure {
				l = tls.NewListener(l, tlsConfig)
			}
			ls, isTLS = append(ls, l), append(isTLS, secure)
		}
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         s.connState,
		ErrorLog:          stdlog.New(httpErrorLog{s}, "", 0),
	}
	s.listeners, s.tls, s.srv = ls, isTLS, srv
	for _, u := range s.urls() {
		s.cfg.Logf("Esplora HTTP API listening on %s", u)
	}
	for _, l := range ls {
		s.done.Add(1)
		go func(l net.Listener) {
			defer s.done.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.cfg.Logf("Esplora listener %s: %v", l.Addr(), err)
			}
		}(l)
	}
	return nil
}

// URLs returns the server's address for a client, one a listener: the
// scheme, the address and the path it serves under (after Start).
func (s *Server) URLs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.urls()
}

func (s *Server) urls() []string {
	out := make([]string, len(s.listeners))
	for i, l := range s.listeners {
		scheme := "http"
		if s.tls[i] {
			scheme = "https"
		}
		out[i] = scheme + "://" + l.Addr().String() + s.prefix
	}
	return out
}

// Addrs returns the addresses the server listens on (after Start).
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, len(s.listeners))
	for i, l := range s.listeners {
		out[i] = l.Addr()
	}
	return out
}

// Shutdown stops listening and waits, until ctx ends, for the requests
// being answered; connections still open then are closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.closed = true
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	s.done.Wait()
	return err
}

// httpError is an answer with a status other than 200: Esplora sends the
// message as plain text.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(msg string) *httpError { return &httpError{http.StatusBadRequest, msg} }
func notFound(msg string) *httpError   { return &httpError{http.StatusNotFound, msg} }

// Esplora's messages for malformed input.
var (
	errInvalidHex    = badRequest("Invalid hex string")
	errInvalidNumber = badRequest("Invalid number")
	errBlockNotFound = notFound("Block not found")
	errTxNotFound    = notFound("Transaction not found")
)

// internalError turns a failed read into a 500 whose text says what
// failed; the client is not at fault.
func internalError(err error) *httpError {
	return &httpError{http.StatusInternalServerError, err.Error()}
}

// reply is a successful answer.
type reply struct {
	contentType string
	body        []byte
	ttl         int
}

func textReply(s string, ttl int) *reply { return &reply{"text/plain", []byte(s), ttl} }

// jsonReply encodes v as electrs' serde_json does: '<', '>' and '&' as they
// are (the assembly of a script that does not parse ends in "<push past
// end>"), where encoding/json would escape them for HTML.
func jsonReply(v any, ttl int) (*reply, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, internalError(err)
	}
	return &reply{"application/json", bytes.TrimSuffix(b.Bytes(), []byte("\n")), ttl}, nil
}

// request is one request being answered: its context (done when the
// client goes), and a cache of the transactions read for it.
type request struct {
	ip     string // the client's key for the per-address limits
	ctx    context.Context
	method string
	parts  []string
	query  url.Values
	// body is read by the endpoint that takes one (readBody), within the
	// server's MaxBody.
	body     io.Reader
	bodyHeld int // the bytes of body read, taken from Server.bodies
	txs      map[[32]byte]*cachedTx
	// endpoint is the path pattern route matched, "/tx/:/hex": the
	// metrics' label, "" (unknown) for a request no endpoint took.
	endpoint string
}

// ServeHTTP answers one request as electrs' REST server does: the path is
// split on "/" after the prefix and matched segment by segment.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if s.cfg.CORS != "" {
		w.Header().Set("Access-Control-Allow-Origin", s.cfg.CORS)
	}
	path := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(path, s.prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		s.writeError(w, noEndpoint(path), "")
		s.mx.observe("", http.StatusNotFound, false, time.Since(start))
		return
	}
	if rest == "" {
		rest = "/"
	}
	if r.Method == http.MethodOptions {
		s.preflight(w, r)
		s.mx.observe("", http.StatusNoContent, false, time.Since(start))
		return
	}
	ip, exempt := s.clientIP(r)
	// The per-address shares of the budgets: none for an exempt client
	// (an onion service or proxy on loopback speaks for many).
	share := ip
	if exempt {
		share = ""
	}
	body := &countingBody{ReadCloser: r.Body}
	if !exempt && s.cfg.MaxRequestsPerIP > 0 {
		if !s.inFlight.acquire(ip, s.cfg.MaxRequestsPerIP) {
			s.writeError(w, errTooManyRequests, share)
			s.mx.observe("", errTooManyRequests.status, false, time.Since(start))
			return
		}
		defer s.inFlight.release(ip)
	}
	if s.limits.hard > 0 && (!exempt || s.cfg.ThrottleExempt) {
		if err := s.costs.admit(r.Context(), ip, s.limits); err != nil {
			if he, ok := err.(*httpError); ok {
				s.writeError(w, he, share)
				s.mx.observe("", he.status, false, time.Since(start))
			} else {
				s.mx.observe("", 0, true, time.Since(start)) // gone while it waited
			}
			return
		}
		// The bytes read and written, as they are: a chunked body has
		// no length, and a declared one may never come. (r.Body itself
		// stays: net/http decides by its type whether to read what the
		// handler left.)
		cw := &countingWriter{ResponseWriter: w}
		w = cw
		defer func() { s.costs.charge(ip, s.limits, body.n+cw.n) }()
	}
	method := r.Method
	if method == http.MethodHead {
		// Answered as GET; net/http sends the headers only.
		method = http.MethodGet
	}
	req := &request{
		ip:     share,
		ctx:    r.Context(),
		method: method,
		parts:  strings.Split(rest, "/")[1:],
		query:  r.URL.Query(),
		txs:    make(map[[32]byte]*cachedTx),
		body:   http.MaxBytesReader(w, body, s.cfg.MaxBody),
	}
	defer func() { s.bodies.give(share, req.bodyHeld) }()
	rep, err := s.route(req, rest)
	if req.ctx.Err() != nil {
		s.mx.observe(req.endpoint, 0, true, time.Since(start))
		return // the client has gone
	}
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			he = internalError(err)
		}
		if he == errBodiesBusy {
			// The body left unread is not waited for.
			w.Header().Set("Connection", "close")
		}
		s.writeError(w, he, share)
		s.mx.observe(req.endpoint, he.status, false, time.Since(start))
		return
	}
	if !s.answers.take(share, len(rep.body), s.cfg.MaxAnswerBytes) {
		s.writeError(w, errBusy, share)
		s.mx.observe(req.endpoint, errBusy.status, false, time.Since(start))
		return
	}
	defer s.answers.give(share, len(rep.body))
	defer func() { s.mx.observe(req.endpoint, http.StatusOK, false, time.Since(start)) }()
	h := w.Header()
	h.Set("Content-Type", rep.contentType)
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(rep.ttl))
	h.Set("Content-Length", strconv.Itoa(len(rep.body)))
	_, _ = w.Write(rep.body)
}

// preflight answers OPTIONS: the methods the API takes and, with CORS set,
// a browser's preflight, so that a web page may POST JSON (/txs/package)
// or send headers of its own.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	const methods = "GET, HEAD, POST, OPTIONS"
	h := w.Header()
	h.Set("Allow", methods)
	if s.cfg.CORS != "" {
		h.Set("Access-Control-Allow-Methods", methods)
		if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
			h.Set("Access-Control-Allow-Headers", asked)
		}
		h.Set("Access-Control-Max-Age", "86400")
	}
	w.WriteHeader(http.StatusNoContent)
}

// httpErrorLog takes net/http's own lines, which would go to stderr: a TLS
// handshake's failure is the client's (a browser refusing the certificate,
// a scanner) and is dropped, as the Electrum server drops it; others go to
// Logf.
type httpErrorLog struct{ s *Server }

func (w httpErrorLog) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte("TLS handshake error")) {
		w.s.cfg.Logf("Esplora: %s", bytes.TrimSpace(p))
	}
	return len(p), nil
}

func (s *Server) writeError(w http.ResponseWriter, e *httpError, ip string) {
	// Held until the client takes it, an error answer counts as any
	// answer does (the refusal itself, a few dozen bytes, excepted).
	if e != errBusy {
		if n := len(e.msg); !s.answers.take(ip, n, s.cfg.MaxAnswerBytes) {
			e = errBusy
		} else {
			defer s.answers.give(ip, n)
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain")
	h.Set("Content-Length", strconv.Itoa(len(e.msg)))
	w.WriteHeader(e.status)
	_, _ = io.WriteString(w, e.msg)
}

// seg returns path segment i, ok false past the end (electrs' path.get(i)).
func (q *request) seg(i int) (string, bool) {
	if i < len(q.parts) {
		return q.parts[i], true
	}
	return "", false
}

// is reports whether the path is exactly the given segments, "*" matching
// any one segment.
func (q *request) is(method string, segs ...string) bool {
	if q.method != method || len(q.parts) != len(segs) {
		return false
	}
	for i, s := range segs {
		if s != "*" && s != q.parts[i] {
			return false
		}
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		if s == "*" {
			s = ":"
		}
		b.WriteString(s)
	}
	q.endpoint = b.String()
	return true
}

// readBody reads the request's body, refused over MaxBody bytes. Bodies
// being read take their bytes from one budget for all clients, four bodies
// of MaxBody (ServeHTTP gives them back): a client may leave a body one
// byte short until the read timeout, and a thousand such clients held
// MaxBody each. A body that fails to arrive (a timeout, a connection cut)
// is answered without the network error's text, which names the server's
// sockets.
func (s *Server) readBody(q *request) ([]byte, error) {
	var body []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := q.body.Read(buf)
		if n > 0 {
			if !s.bodies.take(q.ip, n, 4*s.cfg.MaxBody) {
				return nil, errBodiesBusy
			}
			q.bodyHeld += n
			body = append(body, buf[:n]...)
		}
		switch {
		case err == io.EOF:
			return body, nil
		case errors.As(err, new(*http.MaxBytesError)):
			return nil, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than %d bytes", s.cfg.MaxBody)}
		case err != nil:
			return nil, badRequest("Request body could not be read")
		}
	}
}

// route dispatches a request to its endpoint.
func (s *Server) route(q *request, path string) (*reply, error) {
	const get, post = http.MethodGet, http.MethodPost
	p0, _ := q.seg(0)
	switch {
	case q.is(get, "blocks", "tip", "hash"):
		return s.tipHash()
	case q.is(get, "blocks", "tip", "height"):
		return s.tipHeight()
	case q.is(get, "blocks"), q.is(get, "blocks", "*"):
		start, _ := q.seg(1)
		return s.blocks(q, start)
	case q.is(get, "block-height", "*"):
		return s.blockHeight(q.parts[1])
	case q.is(get, "block", "*"):
		return s.block(q.parts[1])
	case q.is(get, "block", "*", "status"):
		return s.blockStatus(q.parts[1])
	case q.is(get, "block", "*", "txids"):
		return s.blockTxids(q.parts[1])
	case q.is(get, "block", "*", "header"):
		return s.blockHeader(q.parts[1])
	case q.is(get, "block", "*", "raw"):
		return s.blockRaw(q.parts[1])
	case q.is(get, "block", "*", "txid", "*"):
		return s.blockTxid(q.parts[1], q.parts[3])
	case q.is(get, "block", "*", "txs"), q.is(get, "block", "*", "txs", "*"):
		start, _ := q.seg(3)
		return s.blockTxs(q, q.parts[1], start)
	case q.is(get, "address-prefix", "*"):
		// electrs' answer with address search off, its default.
		return nil, badRequest("address search disabled")
	case (p0 == "address" || p0 == "scripthash") && q.method == get && len(q.parts) >= 2 && len(q.parts) <= 5:
		if r, err, ok := s.routeScript(q, p0); ok {
			return r, err
		}
	case q.is(get, "tx", "*"):
		return s.tx(q, q.parts[1])
	case q.is(get, "tx", "*", "hex"), q.is(get, "tx", "*", "raw"):
		return s.txRaw(q, q.parts[1], q.parts[2] == "hex")
	case q.is(get, "tx", "*", "status"):
		return s.txStatus(q.parts[1])
	case q.is(get, "tx", "*", "merkle-proof"):
		return s.merkleProof(q.parts[1])
	case q.is(get, "tx", "*", "merkleblock-proof"):
		return s.merkleBlockProof(q.parts[1])
	case q.is(get, "tx", "*", "outspend", "*"):
		return s.outspend(q, q.parts[1], q.parts[3])
	case q.is(get, "tx", "*", "outspends"):
		return s.outspends(q, q.parts[1])
	case q.is(post, "tx"):
		body, err := s.readBody(q)
		if err != nil {
			return nil, err
		}
		return s.broadcast(string(body))
	case q.is(post, "txs", "package"):
		return s.submitPackage(q)
	case q.is(get, "broadcast"):
		hexTx := q.query.Get("tx")
		if !q.query.Has("tx") {
			return nil, badRequest("Missing tx")
		}
		return s.broadcast(hexTx)
	case q.is(get, "mempool"):
		return s.mempoolStats()
	case q.is(get, "mempool", "txids"):
		return s.mempoolTxids()
	case q.is(get, "mempool", "recent"):
		return s.mempoolRecent()
	case q.is(get, "fee-estimates"):
		return s.feeEstimates()
	}
	return nil, noEndpoint(path)
}

// noEndpoint is electrs' 404 for a path that is no endpoint, the path cut
// at 200 bytes: escaped and quoted, a request line of 64 KiB would be
// answered with three times its size.
func noEndpoint(path string) *httpError {
	if len(path) > 200 {
		path = path[:200] + "..."
	}
	return notFound("endpoint does not exist " + strconv.Quote(path))
}

// routeScript dispatches the address and scripthash endpoints; ok false
// when the path is none of them.
func (s *Server) routeScript(q *request, kind string) (*reply, error, bool) {
	const get = http.MethodGet
	switch {
	case q.is(get, kind, "*"):
		r, err := s.scriptStats(q, kind, q.parts[1])
		return r, err, true
	case q.is(get, kind, "*", "txs"):
		r, err := s.scriptTxs(q, kind, q.parts[1])
		return r, err, true
	case q.is(get, kind, "*", "txs", "chain"), q.is(get, kind, "*", "txs", "chain", "*"):
		last, _ := q.seg(4)
		r, err := s.scriptChainTxs(q, kind, q.parts[1], last)
		return r, err, true
	case q.is(get, kind, "*", "txs", "mempool"):
		r, err := s.scriptMempoolTxs(q, kind, q.parts[1])
		return r, err, true
	case q.is(get, kind, "*", "utxo"):
		r, err := s.scriptUtxo(q, kind, q.parts[1])
		return r, err, true
	}
	return nil, nil, false
}

// ttlByDepth is electrs' cache lifetime: long for answers about blocks
// buried confFinal deep, short otherwise.
func ttlByDepth(height, tip int32, confirmed bool) int {
	if confirmed && tip-height >= confFinal {
		return ttlLong
	}
	return ttlShort
}

// jsonFloat is a number written as serde_json writes an f64: integral
// values keep a ".0".
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) { return []byte(formatFloat(float64(f), 64)), nil }

// jsonFloat32 is a number written as serde_json writes an f32.
type jsonFloat32 float32

func (f jsonFloat32) MarshalJSON() ([]byte, error) { return []byte(formatFloat(float64(f), 32)), nil }

// formatFloat writes f as serde_json does (with the ryu crate): its
// shortest digits, in plain notation while the decimal point falls within
// 16 digits of them (13 for an f32) or at most 4 zeros after it (5), in
// exponent notation otherwise.
func formatFloat(f float64, bits int) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "null"
	}
	maxPoint, minPoint := 16, -5
	if bits == 32 {
		maxPoint, minPoint = 13, -6
	}
	var b strings.Builder
	if math.Signbit(f) {
		b.WriteByte('-')
	}
	if f == 0 {
		b.WriteString("0.0")
		return b.String()
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(math.Abs(f), 'e', -1, bits), "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	point, n := x+1, len(digits) // the value is 0.digits × 10^point
	switch {
	case n <= point && point <= maxPoint:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", point-n))
		b.WriteString(".0")
	case 0 < point && point <= maxPoint:
		b.WriteString(digits[:point])
		b.WriteByte('.')
		b.WriteString(digits[point:])
	case minPoint < point && point <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if n > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		b.WriteString(strconv.Itoa(point - 1))
	}
	return b.String()
}

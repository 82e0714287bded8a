package rpcext

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/listen"
)

// Server is the node's btcd-compatible JSON-RPC server: HTTP POST at "/"
// and websocket at "/ws" on every configured listener.
type Server struct {
	cfg       Config
	tlsConfig *tls.Config
	started   time.Time

	// authUser and authPass are SHA-256 digests of the configured
	// credentials, compared in constant time.
	authUser [32]byte
	authPass [32]byte
	authOn   bool
	// limitUser and limitPass are the limited user's (limited.go).
	limitUser [32]byte
	limitPass [32]byte
	limitOn   bool

	// requestSlots bounds concurrently served HTTP requests.
	requestSlots chan struct{}
	// clients counts HTTP requests in flight (MaxClients).
	clients atomic.Int32

	// quit is closed by Shutdown; everything long-lived watches it.
	quit     chan struct{}
	quitOnce sync.Once

	mu        sync.Mutex
	listeners []net.Listener
	servers   []*http.Server
	ws        map[*wsClient]struct{}
	closing   bool
	// wsAuthed counts the websocket clients holding a slot of
	// MaxWebsockets; wsPending and wsPendingIP count those that have not
	// authenticated yet, which hold none, in all and by address.
	wsAuthed    int
	wsPending   int
	wsPendingIP map[string]int

	// wsWG tracks websocket client goroutines, which the HTTP servers do
	// not wait for once a connection is upgraded.
	wsWG sync.WaitGroup
	// serveWG tracks the Serve goroutines of the HTTP servers.
	serveWG sync.WaitGroup

	ntfn *notifier

	// gbt is getblocktemplate's template and long pollers (gbt.go).
	gbt *gbtState
}

// New checks cfg, fills in defaults and loads (or creates) the TLS key
// pair. The server does not listen until Start. Make it before the chain
// connects blocks, or while it connects none: its block notifications
// start at the chain's tip as New reads it.
func New(cfg *Config) (*Server, error) {
	c := *cfg
	if c.Params == nil || c.Chain == nil || c.Mempool == nil || c.Backend == nil {
		return nil, errors.New("rpcext: Params, Chain, Mempool and Backend are required")
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxConcurrentRequests <= 0 {
		c.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	c.MaxClients = noneOrDefault(c.MaxClients, DefaultMaxClients)
	if c.MaxBatchRequests <= 0 {
		c.MaxBatchRequests = DefaultMaxBatchRequests
	}
	c.MaxWebsockets = noneOrDefault(c.MaxWebsockets, DefaultMaxWebsockets)
	if c.MaxWebsocketSubscriptions <= 0 {
		c.MaxWebsocketSubscriptions = DefaultMaxWebsocketSubscriptions
	}
	if c.Version == 0 {
		c.Version = DefaultVersion
	}
	if c.writeWait <= 0 {
		c.writeWait = wsWriteWait
	}
	s := &Server{
		cfg:          c,
		started:      time.Now(),
		requestSlots: make(chan struct{}, c.MaxConcurrentRequests),
		quit:         make(chan struct{}),
		ws:           make(map[*wsClient]struct{}),
		wsPendingIP:  make(map[string]int),
	}
	if c.User != "" || c.Pass != "" {
		s.authOn = true
		s.authUser = sha256.Sum256([]byte(c.User))
		s.authPass = sha256.Sum256([]byte(c.Pass))
	}
	if c.LimitUser != "" || c.LimitPass != "" {
		s.authOn = true
		s.limitOn = true
		s.limitUser = sha256.Sum256([]byte(c.LimitUser))
		s.limitPass = sha256.Sum256([]byte(c.LimitPass))
	}
	if !c.DisableTLS {
		tc, err := loadTLS(c.CertFile, c.KeyFile, c.Listen)
		if err != nil {
			return nil, err
		}
		s.tlsConfig = tc
	}
	s.ntfn = newNotifier(s)
	s.gbt = newGBTState()
	return s, nil
}

// noneOrDefault is a bound of the configuration: zero takes the default,
// a negative value none at all (btcd's 0: every client refused).
func noneOrDefault(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// Start listens on every configured address and serves in the background.
// If any address cannot be bound, nothing is left listening.
func (s *Server) Start() error {
	if len(s.cfg.Listen) == 0 {
		return errors.New("rpcext: no listen addresses")
	}
	var lns []net.Listener
	for _, addr := range s.cfg.Listen {
		ls, err := listen.Listen(addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("rpcext: listen %s: %w", addr, err)
		}
		for _, ln := range ls {
			if s.tlsConfig != nil {
				ln = tls.NewListener(ln, s.tlsConfig)
			}
			lns = append(lns, ln)
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/", s.serveHTTP)
	mux.HandleFunc("/ws", s.serveWebsocket)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || len(s.servers) > 0 {
		for _, l := range lns {
			l.Close()
		}
		if s.closing {
			return errors.New("rpcext: server is shut down")
		}
		return errors.New("rpcext: server already started")
	}
	s.ntfn.start()
	for _, ln := range lns {
		// ReadTimeout bounds a request's body as well: a client
		// sending one slowly holds a slot of MaxClients meanwhile.
		hs := &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       requestReadTimeout,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    1 << 16,
			ErrorLog:          stdlog.New(httpErrorLog{}, "", 0),
		}
		s.listeners = append(s.listeners, ln)
		s.servers = append(s.servers, hs)
		s.serveWG.Add(1)
		go func(ln net.Listener) {
			defer s.serveWG.Done()
			err := hs.Serve(ln)
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Errorf("RPC server on %s: %v", ln.Addr(), err)
			}
		}(ln)
		log.Infof("RPC server listening on %s", ln.Addr())
	}
	return nil
}

// Addrs returns the addresses the server listens on (after Start).
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	addrs := make([]net.Addr, len(s.listeners))
	for i, ln := range s.listeners {
		addrs[i] = ln.Addr()
	}
	return addrs
}

// Shutdown stops accepting connections, disconnects websocket clients,
// waits for in-flight HTTP requests until ctx is done and stops the
// notification queue. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	servers := s.servers
	clients := make([]*wsClient, 0, len(s.ws))
	for c := range s.ws {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	s.quitOnce.Do(func() { close(s.quit) })

	var firstErr error
	for _, hs := range servers {
		if err := hs.Shutdown(ctx); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, c := range clients {
		c.close()
	}
	done := make(chan struct{})
	go func() {
		s.serveWG.Wait()
		s.wsWG.Wait()
		s.ntfn.wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		for _, hs := range servers {
			hs.Close()
		}
		if firstErr == nil {
			firstErr = ctx.Err()
		}
	}
	return firstErr
}

// credentialsMatch compares credentials in constant time.
func (s *Server) credentialsMatch(user, pass string) bool {
	u := sha256.Sum256([]byte(user))
	p := sha256.Sum256([]byte(pass))
	okU := subtle.ConstantTimeCompare(u[:], s.authUser[:])
	okP := subtle.ConstantTimeCompare(p[:], s.authPass[:])
	return okU&okP == 1
}

// refuse answers an HTTP request with an error status and has the
// connection closed after the answer, as btcd closes every connection:
// nothing counts idle connections, so a refused client must not keep one.
func refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// authFail answers an unauthenticated HTTP request.
func authFail(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="btcd-electrum RPC"`)
	refuse(w, "401 Unauthorized.", http.StatusUnauthorized)
}

// serveHTTP answers JSON-RPC over HTTP: one request or a batch per body,
// on any path but /ws and whatever the method, as btcd serves it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.setWriteDeadline(w)
	if n := s.clients.Add(1); int(n) > s.cfg.MaxClients {
		s.clients.Add(-1)
		refuse(w, fmt.Sprintf("503 Service Unavailable: over %d RPC clients at once.", s.cfg.MaxClients),
			http.StatusServiceUnavailable)
		return
	}
	defer s.clients.Add(-1)
	ok, limited := s.checkAuthLevel(r)
	if !ok {
		authFail(w)
		return
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(w, fmt.Sprintf("413 Request Entity Too Large: limit is %d bytes",
				s.cfg.MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		}
		refuse(w, "400 Bad Request: "+err.Error(), http.StatusBadRequest)
		return
	}

	// A getblocktemplate long poll, which waits for the next block, takes
	// no processing slot, as over websockets: parked polls would keep every
	// other request (submitblock among them) waiting until then.
	if !isLongPoll(body) {
		select {
		case s.requestSlots <- struct{}{}:
			defer func() { <-s.requestSlots }()
		case <-r.Context().Done():
			return
		case <-s.quit:
			refuse(w, "503 Service Unavailable: shutting down.", http.StatusServiceUnavailable)
			return
		}
	}

	reply := s.processBodyAs(body, nil, limited, r.Context().Done())
	w.Header().Set("Content-Type", "application/json")
	// The answer's time starts once it is ready (a long poll may have
	// waited for minutes). The newline is written apart rather than
	// appended, which could copy an answer of up to maxAnswerBytes.
	s.setWriteDeadline(w)
	if reply != nil {
		if _, err := w.Write(reply); err == nil {
			w.Write([]byte{'\n'})
		}
	}
}

// setWriteDeadline gives the client writeWait from now to take the answer
// to its request: one that does not read it loses the connection then,
// and the request its place among MaxClients. The deadline holds on the
// connection until the next request's, so each request sets it first.
func (s *Server) setWriteDeadline(w http.ResponseWriter) {
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.writeWait)); err != nil {
		log.Debugf("RPC HTTP: cannot set a write deadline: %v", err)
	}
}

// httpErrorLog sends net/http's own messages (TLS handshake failures and
// the like, caused by clients) to the debug log.
type httpErrorLog struct{}

// Write logs one message.
func (httpErrorLog) Write(p []byte) (int, error) {
	log.Debugf("RPC HTTP: %s", bytes.TrimSpace(p))
	return len(p), nil
}

// isLongPoll reports whether body is a getblocktemplate request with a
// longpollid, or a batch holding one, read as the request's own parsing
// reads it: member by member, keys in any case.
func isLongPoll(body []byte) bool {
	// A body naming no getblocktemplate, escapes aside, is none: most are
	// (a submitblock's megabytes are not decoded twice).
	if !bytes.Contains(body, []byte("getblocktemplate")) && bytes.IndexByte(body, '\\') < 0 {
		return false
	}
	// (A json.RawMessage decodes into its own bytes: body itself is never
	// decoded into, as the request is read from it after this.)
	var members []json.RawMessage
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(t, &members) != nil {
			return false
		}
	} else {
		members = []json.RawMessage{t}
	}
	for _, m := range members {
		var c struct {
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		var p struct {
			LongPollID string `json:"longpollid"`
		}
		if json.Unmarshal(m, &c) == nil && c.Method == "getblocktemplate" && len(c.Params) > 0 &&
			json.Unmarshal(c.Params[0], &p) == nil && p.LongPollID != "" {
			return true
		}
	}
	return false
}

package electrum

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/listen"
	"github.com/btcsuite/btcd/wire/v2"
)

// Server is an Electrum protocol server. Create it with New, then Start it;
// feed it chain and mempool events with NotifyTip, NotifyScriptHashes and
// NotifyMempool; stop it with Shutdown.
type Server struct {
	cfg     Config
	backend Backend

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	tlsConfig *tls.Config
	headers   *headerMerkle
	notifier  *notifier
	methods   map[string]*method

	// requests counts the requests answered (RequestCount).
	requests atomic.Uint64
	// backlog is the bytes queued for all sessions (maxBacklogTotal).
	backlog atomic.Int64
	// building bounds the bytes of large answers being built at once
	// (buildBudget).
	building *semaphore.Weighted
	// lines bounds the bytes of the buffers of long messages being read
	// (lineBudget).
	lines *semaphore.Weighted
	// gate bounds the request handlers running at once (workgate.go).
	gate *workGate
	// workers run the requests (workers.go).
	workers *workers
	// answers caches header chunks and histories (answercache.go).
	answers *answerCache
	// counters are the event counts behind Stats (refusals.go).
	counters counters
	// refusals rate-limits the log lines of refused connections.
	refusals refusalLog
	// groups holds the per-subnet cost groups (subnet.go).
	groups costGroups
	// certs is the TLS certificate in use, replaced by ReloadTLS.
	certs certStore
	// mx holds the Prometheus metrics; nil until RegisterMetrics.
	mx *metrics

	mu      sync.Mutex
	started bool
	// closed is set by Shutdown: a shut-down server's context is
	// cancelled, so it cannot serve again.
	closed      bool
	listeners   []Listener
	httpServers []*http.Server
	sessions    map[*session]struct{}
	perIP       map[string]*ipState
	totalSubs   int
	nextID      uint64
	// handshakes counts TLS handshakes in progress, all and by address
	// (holdHandshake).
	handshakes   int
	handshakesBy map[string]int
}

// ipState is the accounting for one client IP address.
type ipState struct {
	sessions int
	subs     int
}

// New returns a server for backend configured by cfg (zero fields take
// their defaults).
func New(cfg Config, backend Backend) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:      cfg.withDefaults(),
		backend:  backend,
		ctx:      ctx,
		cancel:   cancel,
		headers:  newHeaderMerkle(),
		sessions: make(map[*session]struct{}),
		perIP:    make(map[string]*ipState),

		handshakesBy: make(map[string]int),
	}
	s.building = semaphore.NewWeighted(s.cfg.buildBudget())
	s.lines = semaphore.NewWeighted(s.cfg.lineBudget())
	s.gate = newWorkGate(s.cfg.Workers)
	s.workers = newWorkers(ctx.Done(), &s.wg)
	s.answers = newAnswerCache(s.cfg.AnswerCache)
	s.methods = methodTable()
	s.notifier = newNotifier(s)
	return s
}

// Start opens the configured listeners and begins serving. It returns once
// every listener is open. A server starts at most once, and not after
// Shutdown.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("electrum: server shut down")
	}
	if s.started {
		return errors.New("electrum: server already started")
	}
	ls := append([]Listener(nil), s.cfg.Listeners...)
	open := func(addrs []string, t Transport) error {
		for _, a := range addrs {
			opened, err := listen.Listen(a)
			if err != nil {
				return fmt.Errorf("electrum: listening on %s (%s): %w", a, t, err)
			}
			for _, l := range opened {
				ls = append(ls, Listener{Transport: t, Listener: l})
			}
		}
		return nil
	}
	closeAll := func() {
		for _, l := range ls {
			l.Listener.Close()
		}
	}
	for _, set := range []struct {
		addrs []string
		t     Transport
	}{{s.cfg.TCPListen, TCP}, {s.cfg.TLSListen, TLS}, {s.cfg.WSListen, WS}, {s.cfg.WSSListen, WSS}} {
		if err := open(set.addrs, set.t); err != nil {
			closeAll()
			return err
		}
	}
	needTLS := s.cfg.ShareTLS
	for _, l := range ls {
		needTLS = needTLS || l.Transport == TLS || l.Transport == WSS
	}
	if needTLS {
		if err := s.certs.load(&s.cfg); err != nil {
			closeAll()
			return err
		}
		s.tlsConfig = s.certs.tlsConfig()
	}
	s.started = true
	s.listeners = ls
	s.wg.Add(1)
	go s.notifier.run()
	for _, l := range ls {
		s.wg.Add(1)
		switch l.Transport {
		case TCP:
			go s.serveStream(l.Listener, false)
		case TLS:
			go s.serveStream(l.Listener, true)
		case WS:
			go s.serveWS(l.Listener, WS)
		case WSS:
			go s.serveWS(l.Listener, WSS)
		}
		s.logf("electrum: serving %s on %s", l.Transport, l.Listener.Addr())
	}
	return nil
}

// Addrs returns the listening addresses by transport, once started.
func (s *Server) Addrs() map[Transport][]net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Transport][]net.Addr)
	for _, l := range s.listeners {
		out[l.Transport] = append(out[l.Transport], l.Listener.Addr())
	}
	return out
}

// Shutdown stops accepting connections, closes every session and waits for
// the server's goroutines until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, l := range s.listeners {
		l.Listener.Close()
	}
	hss := s.httpServers
	sessions := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	s.cancel()
	for _, hs := range hss {
		hs.Close()
	}
	// Apart: a TLS session's close sends close_notify, which waits up to
	// 5 s for a client that reads nothing; one after another, a hundred
	// such clients held Shutdown for minutes.
	var closing sync.WaitGroup
	for _, ss := range sessions {
		closing.Add(1)
		go func() {
			defer closing.Done()
			ss.close()
		}()
	}
	done := make(chan struct{})
	go func() {
		closing.Wait()
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RequestCount returns the number of requests the server has handled.
func (s *Server) RequestCount() uint64 { return s.requests.Load() }

// SessionCount returns the number of open sessions.
func (s *Server) SessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// SubscriptionCount returns the number of script hash subscriptions held by
// all sessions.
func (s *Server) SubscriptionCount() int {
	n := s.notifier
	n.rmu.RLock()
	defer n.rmu.RUnlock()
	total := 0
	for _, sessions := range n.byHash {
		total += len(sessions)
	}
	return total
}

// NotifyTip tells the server about a new index tip (after a block is
// connected or disconnected, reorgs included), once the mempool view has
// been reconciled with that commit: statuses read at a later tip are read
// again after its own NotifyTip. It never blocks.
func (s *Server) NotifyTip(header wire.BlockHeader, height int32) {
	s.notifier.push(event{tip: &tipEvent{header: header, height: height}})
}

// NotifyScriptHashes tells the server that the confirmed history of these
// script hashes changed (indexers.Commit.Touched of a commit of the index's
// writer). It never blocks.
func (s *Server) NotifyScriptHashes(shs []indexers.ScriptHash) {
	if len(shs) == 0 {
		return
	}
	s.notifier.push(event{touched: shs})
}

// NotifyAllScriptHashes tells the server that the confirmed history of any
// script may have changed (the index caught up blocks it did not report one
// by one): every subscribed status is recomputed and sent where it changed.
// It never blocks.
func (s *Server) NotifyAllScriptHashes() {
	s.notifier.push(event{all: true})
}

// NotifyMempool tells the server that the mempool part of these script
// hashes changed (transactions added or removed). It never blocks.
func (s *Server) NotifyMempool(shs []indexers.ScriptHash) {
	if len(shs) == 0 {
		return
	}
	s.notifier.push(event{touched: shs})
}

// flushNotifications waits until every event queued before the call has
// been turned into notifications (handed to the sessions' send queues).
func (s *Server) flushNotifications(ctx context.Context) error {
	done := make(chan struct{})
	s.notifier.push(event{done: done})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// logf logs through Config.Logf when set.
func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// errorf logs a failure (Config.Errorf).
func (s *Server) errorf(format string, args ...any) {
	if s.cfg.Errorf != nil {
		s.cfg.Errorf(format, args...)
		return
	}
	s.logf(format, args...)
}

// exempt reports whether ip is exempt from per-IP limits.
func (s *Server) exempt(ip net.IP) bool {
	for _, n := range s.cfg.ExemptNets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// admit registers a new session or explains why it may not run.
func (s *Server) admit(ss *session) (*RPCError, RefusalReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ctx.Err() != nil {
		return rpcErrorf(codeServerBusy, "server shutting down"), RefusedShuttingDown
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		return rpcErrorf(codeServerBusy, "server busy - too many sessions"), RefusedMaxSessions
	}
	st := s.perIP[ss.ipKey]
	if st == nil {
		st = &ipState{}
		s.perIP[ss.ipKey] = st
	}
	if s.cfg.MaxSessionsPerIP > 0 && !ss.exempt && st.sessions >= s.cfg.MaxSessionsPerIP {
		if st.sessions == 0 && st.subs == 0 {
			delete(s.perIP, ss.ipKey)
		}
		return rpcErrorf(codeExcessiveUsage, "excessive resource usage: too many sessions from %s", ss.ipKey), RefusedPerIP
	}
	st.sessions++
	s.nextID++
	ss.id = s.nextID
	ss.free = !s.cfg.throttled() || (ss.exempt && !s.cfg.ThrottleExempt)
	if !ss.exempt && s.cfg.throttled() {
		ss.group = s.groups.join(subnetKey(ss.ip, ss.ipKey), ss.started, s.cfg.groupDecay())
	}
	s.sessions[ss] = struct{}{}
	// Shutdown waits for the session (WebSocket ones run on net/http's
	// goroutines), which runSession ends.
	s.wg.Add(1)
	return nil, 0
}

// release forgets a closed session and its subscriptions.
func (s *Server) release(ss *session, subs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[ss]; !ok {
		return
	}
	delete(s.sessions, ss)
	s.totalSubs -= subs
	if st := s.perIP[ss.ipKey]; st != nil {
		st.sessions--
		st.subs -= subs
		if st.sessions <= 0 && st.subs <= 0 {
			delete(s.perIP, ss.ipKey)
		}
	}
}

// reserveSub accounts one new subscription of ss against the per-IP and
// global limits.
func (s *Server) reserveSub(ss *session) *RPCError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.totalSubs >= s.cfg.MaxSubs {
		s.counters.subsRefused.Add(1)
		return rpcErrorf(codeLimitExceeded, "subscription limit reached")
	}
	st := s.perIP[ss.ipKey]
	if st != nil && !ss.exempt && st.subs >= s.cfg.MaxSubsPerIP {
		s.counters.subsRefused.Add(1)
		return rpcErrorf(codeLimitExceeded, "subscription limit reached for %s", ss.ipKey)
	}
	if st != nil {
		st.subs++
	}
	s.totalSubs++
	return nil
}

// releaseSubs returns n subscriptions of ss.
func (s *Server) releaseSubs(ss *session, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.totalSubs -= n
	if st := s.perIP[ss.ipKey]; st != nil {
		st.subs -= n
	}
}

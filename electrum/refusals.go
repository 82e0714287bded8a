package electrum

import (
	"sync"
	"sync/atomic"
	"time"
)

// A connection the server will not serve, and a session that ends, leave a
// trace: a counter by reason (Server.Stats, the Prometheus metrics) and, for
// refusals, a log line. Refusals come in floods (a client retrying in a
// loop), so their log lines are rate-limited: one line, then at most one
// summary per refusalLogEvery.

// RefusalReason is why a connection was refused before its session began.
type RefusalReason int

// The reasons a connection is refused.
const (
	// RefusedMaxSessions: the server holds MaxSessions sessions.
	RefusedMaxSessions RefusalReason = iota
	// RefusedPerIP: the address holds MaxSessionsPerIP sessions.
	RefusedPerIP
	// RefusedShuttingDown: the server is stopping.
	RefusedShuttingDown
	numRefusalReasons
)

// String is the reason's label in metrics and getelectruminfo.
func (r RefusalReason) String() string {
	switch r {
	case RefusedMaxSessions:
		return "max_sessions"
	case RefusedPerIP:
		return "max_sessions_per_ip"
	case RefusedShuttingDown:
		return "shutting_down"
	}
	return "unknown"
}

// DisconnectReason is why a session ended.
type DisconnectReason int

// The reasons a session ends. The first reason recorded wins.
const (
	// DisconnectClient: the client closed the connection (or it broke).
	DisconnectClient DisconnectReason = iota
	// DisconnectIdle: nothing arrived within IdleTimeout.
	DisconnectIdle
	// DisconnectCost: the session reached CostHardLimit.
	DisconnectCost
	// DisconnectNotReading: the client let MaxSendBacklog bytes pile up.
	DisconnectNotReading
	// DisconnectWriteFailed: a write failed or did not finish within
	// WriteTimeout.
	DisconnectWriteFailed
	// DisconnectProtocol: the client broke the protocol (no
	// server.version first, no common version, a WebSocket message over
	// MaxRecv).
	DisconnectProtocol
	// DisconnectAdmin: an operator closed the session
	// (Server.DisconnectSession).
	DisconnectAdmin
	// DisconnectShutdown: the server stopped.
	DisconnectShutdown
	numDisconnectReasons
)

// String is the reason's label in metrics and getelectruminfo.
func (r DisconnectReason) String() string {
	switch r {
	case DisconnectClient:
		return "client_closed"
	case DisconnectIdle:
		return "idle_timeout"
	case DisconnectCost:
		return "excessive_usage"
	case DisconnectNotReading:
		return "not_reading"
	case DisconnectWriteFailed:
		return "write_failed"
	case DisconnectProtocol:
		return "protocol_error"
	case DisconnectAdmin:
		return "admin"
	case DisconnectShutdown:
		return "shutdown"
	}
	return "unknown"
}

// reasonCost is the close reason set when a session reaches the hard
// cost limit (shorthand used by cost.go).
const reasonCost = DisconnectCost

// counters are the server's event counts, kept whether or not Prometheus
// metrics are registered.
type counters struct {
	refused      [numRefusalReasons]atomic.Uint64
	disconnected [numDisconnectReasons]atomic.Uint64
	// throttled counts requests delayed above CostSoftLimit,
	// sessionsSlowed the sessions delayed at least once.
	throttled, sessionsSlowed atomic.Uint64
	// subsRefused counts subscriptions refused by a limit.
	subsRefused atomic.Uint64
	// bytesIn and bytesOut count frame bytes by transport.
	bytesIn, bytesOut [numTransports]atomic.Uint64
	// cacheHits and cacheMisses count answers of cacheable size served
	// from the answer cache and built (answercache.go).
	cacheHits, cacheMisses atomic.Uint64
}

// Stats are the server's event counts since it started.
type Stats struct {
	// Refused counts connections refused, by RefusalReason.String.
	Refused map[string]uint64
	// Disconnected counts ended sessions, by DisconnectReason.String.
	Disconnected map[string]uint64
	// Throttled counts requests delayed by cost-based throttling,
	// SessionsThrottled the sessions delayed at least once.
	Throttled, SessionsThrottled uint64
	// SubscriptionsRefused counts subscriptions refused by a limit.
	SubscriptionsRefused uint64
}

// Stats returns the server's event counts.
func (s *Server) Stats() Stats {
	st := Stats{Refused: map[string]uint64{}, Disconnected: map[string]uint64{}}
	for r := RefusalReason(0); r < numRefusalReasons; r++ {
		st.Refused[r.String()] = s.counters.refused[r].Load()
	}
	for r := DisconnectReason(0); r < numDisconnectReasons; r++ {
		st.Disconnected[r.String()] = s.counters.disconnected[r].Load()
	}
	st.Throttled = s.counters.throttled.Load()
	st.SessionsThrottled = s.counters.sessionsSlowed.Load()
	st.SubscriptionsRefused = s.counters.subsRefused.Load()
	return st
}

// refusalLogEvery is the shortest interval between two refusal log lines.
const refusalLogEvery = 10 * time.Second

// refusalLog rate-limits the log lines of refused connections.
type refusalLog struct {
	mu   sync.Mutex
	last time.Time
	// suppressed counts refusals not logged since the last line.
	suppressed int
}

// refused counts and logs one refused connection.
func (s *Server) refused(r RefusalReason, addr string) {
	s.counters.refused[r].Add(1)
	l := &s.refusals
	now := time.Now()
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < refusalLogEvery {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.suppressed = 0
	l.last = now
	l.mu.Unlock()
	if n > 0 {
		s.logf("electrum: refused a connection from %s (%s); %d more refused since the last such line", addr, r, n)
	} else {
		s.logf("electrum: refused a connection from %s (%s)", addr, r)
	}
}

// setCloseReason records why the session is ending, unless a reason was
// recorded already.
func (ss *session) setCloseReason(r DisconnectReason) {
	ss.closeReason.CompareAndSwap(0, int32(r)+1)
}

// reason returns the recorded close reason (DisconnectClient when none).
func (ss *session) reason() DisconnectReason {
	if v := ss.closeReason.Load(); v > 0 {
		return DisconnectReason(v - 1)
	}
	return DisconnectClient
}

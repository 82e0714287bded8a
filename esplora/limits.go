package esplora

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

// DefaultMaxRequestsPerIP is the number of requests of one client address
// answered at once; more are refused with 429 until one ends.
const DefaultMaxRequestsPerIP = 16

// errTooManyRequests is the answer to a client over its share, as the
// public Esplora servers' proxies answer.
var errTooManyRequests = &httpError{http.StatusTooManyRequests, "Too Many Requests"}

// inFlight counts the requests being answered per client address.
type inFlight struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes a place for ip, false when it has max already.
func (f *inFlight) acquire(ip string, max int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = make(map[string]int)
	}
	if f.n[ip] >= max {
		return false
	}
	f.n[ip]++
	return true
}

func (f *inFlight) release(ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[ip]--; f.n[ip] <= 0 {
		delete(f.n, ip)
	}
}

// errBusy answers a request whose answer would take the answers being
// written past MaxAnswerBytes.
var errBusy = &httpError{http.StatusServiceUnavailable, "Service Unavailable: too many answers waiting for slow clients"}

// errBodiesBusy refuses a request body past the budget of bodies being read.
var errBodiesBusy = &httpError{http.StatusServiceUnavailable, "Service Unavailable: too many request bodies being read"}

// answerBudget counts the bytes of the answers being written, to all
// clients together: an answer is held until the client has taken it (or
// the write timeout ends it), so slow readers of large answers (the pool's
// txids, raw blocks, long unspent lists) would otherwise hold any amount of
// memory between them. Every answer counts, small ones too: clients that
// never read can ask for any number of them. One client address holds at
// most a quarter of the bound, so that one slow reader cannot have every
// other client's answers refused.
type answerBudget struct {
	mu   sync.Mutex
	held int64
	by   map[string]int64 // by client address ("" is none in particular)
}

// take counts an answer of n bytes for the client ip (exempt: ""); false when it would
// take the bytes held past max, or ip's past a quarter of max. An answer
// while nothing is held (or, for ip's share, ip holds nothing) is never
// refused, however large: there is one such answer at a time, so the
// exception cannot be multiplied.
func (b *answerBudget) take(ip string, n int, max int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held > 0 && b.held+int64(n) > max {
		return false
	}
	if own := b.by[ip]; ip != "" && own > 0 && own+int64(n) > max/4 {
		return false
	}
	b.held += int64(n)
	if ip != "" && n != 0 {
		if b.by == nil {
			b.by = make(map[string]int64)
		}
		b.by[ip] += int64(n)
	}
	return true
}

// give returns an answer's bytes once it is written.
func (b *answerBudget) give(ip string, n int) {
	b.mu.Lock()
	b.held -= int64(n)
	if ip != "" && n != 0 {
		if b.by[ip] -= int64(n); b.by[ip] <= 0 {
			delete(b.by, ip)
		}
	}
	b.mu.Unlock()
}

// openConns counts the open connections of the clients not exempt, by
// address and in all.
type openConns struct {
	mu    sync.Mutex
	by    map[string]int
	total int
	// refused counts the connections closed at the total bound since
	// logged, the last time they were logged.
	refused int
	logged  time.Time
}

// fullLogEvery spaces the log lines about connections closed at the total
// bound: they come in floods, from clients retrying in a loop.
const fullLogEvery = time.Minute

// acquire counts a connection from key; false when key has perAddr open
// already or all clients have total (a bound of 0 or less is none). full
// is the number of connections closed at the total bound to log now, 0
// while the last line is recent.
func (o *openConns) acquire(key string, perAddr, total int) (ok bool, full int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by = make(map[string]int)
	}
	if perAddr > 0 && o.by[key] >= perAddr {
		return false, 0
	}
	if total > 0 && o.total >= total {
		o.refused++
		if now := time.Now(); now.Sub(o.logged) >= fullLogEvery {
			full, o.refused, o.logged = o.refused, 0, now
		}
		return false, full
	}
	o.by[key]++
	o.total++
	return true, 0
}

func (o *openConns) release(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total--
	if o.by[key]--; o.by[key] <= 0 {
		delete(o.by, key)
	}
}

// connState bounds the open connections of one client address to twice
// the requests it may have answered at once (keep-alive connections wait
// between requests), and those of all clients to MaxConnections: each
// holds a goroutine and a descriptor until the timeouts, so one past a
// bound is closed at once. Exempt addresses (a reverse proxy, the
// operator's tools) count against neither bound.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		host, ip := electrum.HostIP(c.RemoteAddr().String())
		if (s.cfg.MaxRequestsPerIP <= 0 && s.cfg.MaxConnections <= 0) || (ip != nil && s.exempt(ip)) {
			return
		}
		key := electrum.AddrKey(host, ip)
		ok, full := s.conns.acquire(key, 2*s.cfg.MaxRequestsPerIP, s.cfg.MaxConnections)
		if !ok {
			c.Close()
			if full > 0 {
				s.cfg.Logf("Esplora: closed %d new connections: %d are open, the most --esploramaxconnections allows",
					full, s.cfg.MaxConnections)
			}
			return
		}
		s.connKeys.Store(c, key)
	case http.StateClosed, http.StateHijacked:
		if key, ok := s.connKeys.LoadAndDelete(c); ok {
			s.conns.release(key.(string))
		}
	}
}

// exempt reports whether ip is in one of the exempt networks.
func (s *Server) exempt(ip net.IP) bool {
	for _, n := range s.cfg.ExemptNets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// clientIP returns the address a request is counted against, and whether
// it is exempt from the per-address limit. A request from an exempt network
// (a reverse proxy on loopback) that carries X-Forwarded-For is counted
// against the address the proxy appended last; without the header it is
// the proxy's own, exempt.
func (s *Server) clientIP(r *http.Request) (string, bool) {
	host, ip := electrum.HostIP(r.RemoteAddr)
	if ip == nil || !s.exempt(ip) {
		return electrum.AddrKey(host, ip), false
	}
	fip := electrum.ForwardedClient(r)
	if fip == nil {
		return host, true
	}
	return electrum.AddrKey(fip.String(), fip), s.exempt(fip)
}

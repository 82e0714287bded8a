package node

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/btcsuite/btcd/v2transport"
	"golang.org/x/time/rate"
)

// Bounds on what inbound connections may cost before their handshake
// completes, as btcd bounds them: a connection that never sends its
// version holds a goroutine and a descriptor until the negotiation
// timeout, and the first bytes of a v2 handshake make the node generate a
// key pair and, next, agree on a secret, work an attacker gets for free.
const (
	// maxPendingPerSource is how many connections of one source network
	// (a /24 of IPv4, a /64 of IPv6) may be between accept and verack.
	maxPendingPerSource = 8
	// v2 handshakes: per source a burst of 4, then 2 a second; in all a
	// burst of 40, then 20 a second; at most 4 responder phases at once.
	v2SourceBurst, v2SourceRate = 4, 2
	v2TotalBurst, v2TotalRate   = 40, 20
	v2Concurrent                = 4
)

// errV2Busy refuses a v2 responder phase over the admission's rates; the
// handshake, and the connection, end.
var errV2Busy = errors.New("too many inbound v2 handshakes")

// admission holds the pending inbound handshakes by source network. A
// source is kept while it has a pending handshake or its v2 rate has not
// refilled, so that connecting one at a time does not reset its rate.
type admission struct {
	mu      sync.Mutex
	sources map[string]*source
	v2Total *rate.Limiter
	v2Slots chan struct{}
	// admits counts admissions since the last sweep of idle sources.
	admits int
}

// sweepEvery is how many admissions pass between sweeps of the sources
// with nothing pending and their rate refilled.
const sweepEvery = 256

// source is one source network's pending handshakes and v2 rate.
type source struct {
	pending int
	v2      *rate.Limiter
}

func newAdmission() *admission {
	return &admission{
		sources: make(map[string]*source),
		v2Total: rate.NewLimiter(v2TotalRate, v2TotalBurst),
		v2Slots: make(chan struct{}, v2Concurrent),
	}
}

// admit counts a connection from addr as pending: done ends the count (at
// verack or disconnection), and v2 rate-limits its v2 responder phases.
// ok is false when its source has maxPendingPerSource pending already.
func (a *admission) admit(addr net.Addr) (done func(), v2 v2transport.HandshakeAdmission, ok bool) {
	key := sourceKey(addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.admits++; a.admits >= sweepEvery {
		a.admits = 0
		for k, s := range a.sources {
			if s.pending == 0 && s.v2.Tokens() >= v2SourceBurst {
				delete(a.sources, k)
			}
		}
	}
	s := a.sources[key]
	if s == nil {
		s = &source{v2: rate.NewLimiter(v2SourceRate, v2SourceBurst)}
		a.sources[key] = s
	} else if s.pending >= maxPendingPerSource {
		return nil, nil, false
	}
	s.pending++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if s.pending--; s.pending == 0 && s.v2.Tokens() >= v2SourceBurst {
				delete(a.sources, key)
			}
		})
	}, &v2Phase{a: a, source: s.v2}, true
}

// v2Phase is the admission of one inbound peer's v2 responder phases: its
// first phase is charged to the rates, as btcd charges a handshake once;
// every phase takes a place among those at once.
type v2Phase struct {
	a        *admission
	source   *rate.Limiter
	mu       sync.Mutex
	admitted bool
}

// Acquire implements v2transport.HandshakeAdmission.
func (p *v2Phase) Acquire() (func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case p.a.v2Slots <- struct{}{}:
	default:
		return nil, errV2Busy
	}
	release := func() { <-p.a.v2Slots }
	if p.admitted {
		return release, nil
	}
	// The source's token goes back when the node-wide rate refuses.
	now := time.Now()
	if r := p.source.ReserveN(now, 1); r.DelayFrom(now) > 0 || !p.a.v2Total.AllowN(now, 1) {
		r.CancelAt(now)
		release()
		return nil, errV2Busy
	}
	p.admitted = true
	return release, nil
}

// sourceKey is the source network of addr: its /24 for IPv4, its /64 for
// IPv6, the address itself otherwise.
func sourceKey(addr net.Addr) string {
	host := hostOf(addr.String())
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.Mask(net.CIDRMask(24, 32)).String() + "/24"
	default:
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
}

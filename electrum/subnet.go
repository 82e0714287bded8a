package electrum

import (
	"net"
	"sync"
	"time"
)

// Cost is also accounted per subnet, as ElectrumX does: every session from
// a /24 (IPv4) or /48 (IPv6) shares one costGroup, charged with everything
// its sessions are charged. A session is throttled on the larger of its own
// cost and its group's, so opening more sessions from one host (or from
// neighbouring addresses) buys no more resources than one session has. The
// group decays at the rate of a session without subscriptions and keeps
// its cost after its sessions close, so reconnecting does not reset it.
//
// Sessions from ExemptNets (a reverse proxy or a Tor daemon on loopback,
// where every client shares one address) are in no group: with
// Config.ThrottleExempt each is throttled on its own cost only, else not
// at all.

// Subnet prefix lengths that group sessions for cost.
const (
	subnetBitsV4 = 24
	subnetBitsV6 = 48
)

// subnetKey is the subnet an address is grouped in: "198.51.100.0/24" or
// "2001:db8:1::/48". Addresses that do not parse group by their text.
func subnetKey(ip net.IP, fallback string) string {
	if ip == nil {
		return fallback
	}
	if v4 := ip.To4(); v4 != nil {
		n := net.IPNet{IP: v4.Mask(net.CIDRMask(subnetBitsV4, 32)), Mask: net.CIDRMask(subnetBitsV4, 32)}
		return n.String()
	}
	n := net.IPNet{IP: ip.Mask(net.CIDRMask(subnetBitsV6, 128)), Mask: net.CIDRMask(subnetBitsV6, 128)}
	return n.String()
}

// costGroup is the shared cost of the sessions of one subnet.
type costGroup struct {
	key string

	mu    sync.Mutex
	cost  float64
	stamp time.Time
	// sessions is the number of open sessions in the group; guarded by
	// the registry's mutex, not mu.
	sessions int
}

// add charges c to the group.
func (g *costGroup) add(c float64, now time.Time, rate float64) {
	g.mu.Lock()
	g.decayLocked(now, rate)
	g.cost += c
	g.mu.Unlock()
}

// current returns the decayed cost.
func (g *costGroup) current(now time.Time, rate float64) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.decayLocked(now, rate)
	return g.cost
}

// decayLocked applies the decay since the last update at rate per second.
func (g *costGroup) decayLocked(now time.Time, rate float64) {
	dt := now.Sub(g.stamp).Seconds()
	g.stamp = now
	if dt <= 0 {
		return
	}
	g.cost -= dt * rate
	if g.cost < 0 {
		g.cost = 0
	}
}

// costGroups is the registry of subnet groups. Groups without sessions are
// kept while they still carry cost and swept once it has decayed.
type costGroups struct {
	mu     sync.Mutex
	groups map[string]*costGroup
	// joins counts joins since the last sweep.
	joins int
}

// sweepEvery is how many joins pass between sweeps of idle groups.
const sweepEvery = 256

// join returns the group of key with one more session in it.
func (r *costGroups) join(key string, now time.Time, rate float64) *costGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.groups == nil {
		r.groups = make(map[string]*costGroup)
	}
	r.joins++
	if r.joins >= sweepEvery {
		r.joins = 0
		r.sweepLocked(now, rate)
	}
	g := r.groups[key]
	if g == nil {
		g = &costGroup{key: key, stamp: now}
		r.groups[key] = g
	}
	g.sessions++
	return g
}

// leave takes one session out of g; the group is forgotten once it has
// neither sessions nor cost.
func (r *costGroups) leave(g *costGroup, now time.Time, rate float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.sessions--
	if g.sessions <= 0 && g.current(now, rate) == 0 {
		delete(r.groups, g.key)
	}
}

// sweepLocked forgets the groups without sessions whose cost has decayed.
func (r *costGroups) sweepLocked(now time.Time, rate float64) {
	for k, g := range r.groups {
		if g.sessions <= 0 && g.current(now, rate) == 0 {
			delete(r.groups, k)
		}
	}
}

// len returns the number of groups held with sessions or cost, sweeping
// the others.
func (r *costGroups) len(now time.Time, rate float64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(now, rate)
	return len(r.groups)
}

package node

import (
	"net"
	"sync"
	"time"
)

// banList holds the hosts banned for misbehaving, until when.
type banList struct {
	mu     sync.Mutex
	banned map[string]time.Time
}

// newBanList returns an empty ban list.
func newBanList() *banList { return &banList{banned: make(map[string]time.Time)} }

// ban bans host until now+d.
func (b *banList) ban(host string, d time.Duration) {
	b.mu.Lock()
	b.banned[host] = time.Now().Add(d)
	b.mu.Unlock()
}

// isBanned reports whether host is banned now, forgetting expired bans.
func (b *banList) isBanned(host string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.banned[host]
	if !ok {
		return false
	}
	if time.Now().After(until) {
		delete(b.banned, host)
		return false
	}
	return true
}

// hostOf returns the host part of a host:port address.
func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

// addBanScore raises the peer's ban score as btcd does (a persistent part
// and a transient part that decays by half every minute) and bans and
// disconnects it above --banthreshold, unless --nobanning. It reports
// whether the peer was disconnected.
func (sp *serverPeer) addBanScore(persistent, transient uint32, reason string) bool {
	cfg := sp.node.cfg
	if cfg.DisableBanning || (persistent == 0 && transient == 0) {
		return false
	}
	if cfg.isWhitelisted(sp.Addr()) {
		srvrLog.Debugf("Misbehaving whitelisted peer %s: %s", sp, reason)
		return false
	}
	score := sp.banScore.Increase(persistent, transient)
	if score <= cfg.BanThreshold/2 {
		return false
	}
	srvrLog.Warnf("Misbehaving peer %s: %s -- ban score increased to %d", sp, reason, score)
	if score <= cfg.BanThreshold {
		return false
	}
	srvrLog.Warnf("Misbehaving peer %s -- banning and disconnecting for %v", sp, cfg.BanDuration)
	sp.node.bans.ban(hostOf(sp.Addr()), cfg.BanDuration)
	sp.Disconnect()
	return true
}

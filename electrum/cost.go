package electrum

import (
	"context"
	"time"
)

// Cost-based throttling after ElectrumX (PROTOCOL.md §9.1): every request,
// every byte in and out and every error add to a session's cost, which
// decays over time (more slowly for sessions holding many subscriptions).
// Above CostSoftLimit each request is delayed by up to RequestSleep; at
// CostHardLimit the session is answered -101 and disconnected.

// charge adds c to the session's cost.
func (ss *session) charge(c float64) {
	if !ss.srv.cfg.throttled() {
		return
	}
	ss.costMu.Lock()
	ss.decayLocked(time.Now())
	ss.cost += c
	ss.costMu.Unlock()
}

// decayLocked applies the decay since the last update.
func (ss *session) decayLocked(now time.Time) {
	dt := now.Sub(ss.costStamp).Seconds()
	ss.costStamp = now
	if dt <= 0 {
		return
	}
	nsubs := ss.nsubs.Load()
	rate := ss.srv.cfg.CostHardLimit / (10000 + 5*float64(nsubs))
	ss.cost -= dt * rate
	if ss.cost < 0 {
		ss.cost = 0
	}
}

// currentCost returns the decayed cost.
func (ss *session) currentCost() float64 {
	ss.costMu.Lock()
	defer ss.costMu.Unlock()
	ss.decayLocked(time.Now())
	return ss.cost
}

// checkHardLimit disconnects a session at the hard limit with -101; false
// means it was disconnected.
func (ss *session) checkHardLimit() bool {
	cfg := &ss.srv.cfg
	if !cfg.throttled() || ss.currentCost() < cfg.CostHardLimit {
		return true
	}
	ss.srv.logf("electrum: session %d (%s) disconnected: excessive resource usage", ss.id, ss.ipKey)
	ss.sendAndClose(encodeResponse(true, nil, nil, rpcErrorf(codeExcessiveUsage, "excessive resource usage")))
	return false
}

// throttle delays a request in proportion to how far the session's cost
// is above the soft limit; at the hard limit it answers -101 and closes
// the session once the answer is written.
func (ss *session) throttle(ctx context.Context) *RPCError {
	cfg := &ss.srv.cfg
	if !cfg.throttled() {
		return nil
	}
	cost := ss.currentCost()
	if cost < cfg.CostSoftLimit {
		return nil
	}
	if cost >= cfg.CostHardLimit {
		ss.overLimit.Store(true)
		return rpcErrorf(codeExcessiveUsage, "excessive resource usage")
	}
	frac := (cost - cfg.CostSoftLimit) / (cfg.CostHardLimit - cfg.CostSoftLimit)
	t := time.NewTimer(time.Duration(frac * float64(cfg.RequestSleep)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return rpcErrorf(codeServerBusy, "server busy - request timed out")
	}
}

package electrum

import (
	"context"
	"errors"
	"time"
)

// Cost-based throttling after ElectrumX (docs/PROTOCOL.md §9.1): every request,
// every byte in and out (out: when queued, so a client that does not read
// pays too) and every error add to a session's cost, which
// decays over time (more slowly for sessions holding many subscriptions).
// Above CostSoftLimit each request is delayed by up to RequestSleep; at
// CostHardLimit the session is answered -101 and disconnected.

// charge adds c to the session's cost and to its subnet's (subnet.go).
func (ss *session) charge(c float64) {
	if ss.free {
		return
	}
	now := time.Now()
	ss.costMu.Lock()
	ss.decayLocked(now)
	ss.cost += c
	ss.costMu.Unlock()
	if g := ss.group; g != nil {
		g.add(c, now, ss.srv.cfg.groupDecay())
	}
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

// ownCost returns the session's own decayed cost.
func (ss *session) ownCost() float64 {
	ss.costMu.Lock()
	defer ss.costMu.Unlock()
	ss.decayLocked(time.Now())
	return ss.cost
}

// currentCost returns the cost the session is throttled on: the larger of
// its own and its subnet's.
func (ss *session) currentCost() float64 {
	c := ss.ownCost()
	if g := ss.group; g != nil {
		c = max(c, g.current(time.Now(), ss.srv.cfg.groupDecay()))
	}
	return c
}

// errCostLimit ends the reading of a session at the hard cost limit
// (received).
var errCostLimit = errors.New("excessive resource usage")

// checkHardLimit disconnects a session at the hard limit with -101; false
// means it was disconnected.
func (ss *session) checkHardLimit() bool {
	cfg := &ss.srv.cfg
	if ss.free {
		return true
	}
	cost := ss.currentCost()
	if cost < cfg.CostHardLimit {
		return true
	}
	ss.finishAnswers(true)
	return false
}

// cutOff answers -101 and closes the session once the answer is written.
func (ss *session) cutOff(cost float64) {
	if !ss.cutLogged.Swap(true) {
		ss.srv.logf("electrum: session %d (%s) disconnected: excessive resource usage (cost %.0f, hard limit %.0f)",
			ss.id, ss.ipKey, cost, ss.srv.cfg.CostHardLimit)
	}
	ss.setCloseReason(reasonCost)
	ss.sendAndClose(encodeResponse(true, nil, nil, rpcErrorf(codeExcessiveUsage, "excessive resource usage")))
}

// throttle delays a request in proportion to how far the session's cost
// is above the soft limit; at the hard limit it answers -101 and closes
// the session once the answer is written.
func (ss *session) throttle(ctx context.Context) *RPCError {
	cfg := &ss.srv.cfg
	if ss.free {
		return nil
	}
	cost := ss.currentCost()
	if cost < cfg.CostSoftLimit {
		return nil
	}
	if cost >= cfg.CostHardLimit {
		ss.overLimit.Store(true)
		ss.setCloseReason(reasonCost)
		// Logged once: every member of a batch left comes here.
		if !ss.cutLogged.Swap(true) {
			ss.srv.logf("electrum: session %d (%s) disconnected: excessive resource usage (cost %.0f, hard limit %.0f)",
				ss.id, ss.ipKey, cost, cfg.CostHardLimit)
		}
		return rpcErrorf(codeExcessiveUsage, "excessive resource usage")
	}
	ss.srv.counters.throttled.Add(1)
	if !ss.slowed.Swap(true) {
		ss.srv.counters.sessionsSlowed.Add(1)
		ss.srv.logf("electrum: session %d (%s) slowed: cost %.0f over the soft limit %.0f", ss.id, ss.ipKey,
			cost, cfg.CostSoftLimit)
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

// enterGate waits for a place among the server's running requests
// (workgate.go), ahead of the sessions of higher cost.
func (ss *session) enterGate(ctx context.Context) (func(), error) {
	cfg := &ss.srv.cfg
	cost := 0.0
	if !ss.free {
		cost = ss.currentCost()
	}
	return ss.srv.gate.enter(ctx, cost, !ss.free && cost >= cfg.CostSoftLimit, len(ss.sem) <= 1)
}

// pauseReading delays reading a session's next message after one refused
// without running (malformed, oversized, an over-limit batch) by what
// throttle delays a request at the session's cost: such messages take no
// request slot, so without it a client above the soft limit could keep
// the server reading and refusing at the speed of its link. False when
// the session ended meanwhile.
func (ss *session) pauseReading() bool {
	cfg := &ss.srv.cfg
	if ss.free {
		return true
	}
	cost := ss.currentCost()
	if cost < cfg.CostSoftLimit {
		return true
	}
	frac := min((cost-cfg.CostSoftLimit)/(cfg.CostHardLimit-cfg.CostSoftLimit), 1)
	t := time.NewTimer(time.Duration(frac * float64(cfg.RequestSleep)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ss.ctx.Done():
		return false
	}
}

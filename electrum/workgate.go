package electrum

import (
	"container/heap"
	"context"
	"sync"
)

// workGate bounds the request handlers running at once across the whole
// server (Config.Workers places, by default one per core) and decides who
// runs next. The per-session and per-subnet costs throttle one client;
// without a server-wide bound, many clients each within their own
// allowance (a flood from many addresses) still fill every core, and a
// wallet's request waits in the Go scheduler's queue behind all of theirs.
//
// A free place goes to the waiting request of the session with the lowest
// cost (cost.go: its own or its subnet's, whichever is higher), first come
// first served between equals. Sessions at or above the soft cost limit,
// the ones already being throttled, hold at most all places but one, so a
// client in good standing never waits for a heavy request of theirs to
// finish: it waits at most for other clients in good standing.
//
// One more place, the spare, is for a request of a session in good
// standing that has no other request in flight and whose cost is lower than
// that of every request holding a place.
// Requests are not preempted, so without it such a request waited for the
// first of the running ones to end: under a flood of subscriptions from
// sessions still in good standing, each computing the status of a history
// of tens of thousands of entries, a wallet's request waited 3 to 9 ms for
// a place. With the spare it runs at once, beside them; the node's spare
// scheduler processor (node.ServeProcs) gives it a thread to run on.
type workGate struct {
	mu    sync.Mutex
	total int // places
	busy  int // places held, the spare not counted
	heavy int // places held by heavy requests
	// held are the costs of the requests holding the places; spare
	// reports whether the spare place is held.
	held  map[*gateHold]struct{}
	spare bool
	seq   uint64
	// light and heavy hold the waiting requests of sessions below and at
	// or above the soft cost limit.
	light, heavyQ gateQueue
}

// gateWaiter is a request waiting for a place.
type gateWaiter struct {
	cost  float64
	heavy bool
	alone bool
	seq   uint64
	ready chan struct{} // closed when the place is handed over
	hold  *gateHold     // the place handed over
	index int           // in the queue; -1 once out of it
}

// gateHold is one place held.
type gateHold struct {
	cost         float64
	heavy, spare bool
	once         sync.Once
}

// newWorkGate returns a gate of n places (at least 1), and the spare.
func newWorkGate(n int) *workGate {
	return &workGate{total: max(n, 1), held: make(map[*gateHold]struct{})}
}

// spareFits reports whether a request of the given cost may take the spare
// place now: it is free, every other place is held, the request is not
// heavy and costs less than every request holding a place. g.mu is held.
func (g *workGate) spareFits(cost float64, heavy bool) bool {
	if g.spare || heavy || g.busy < g.total {
		return false
	}
	for h := range g.held {
		if !h.spare && h.cost <= cost {
			return false
		}
	}
	return true
}

// heavyPlaces is how many places heavy requests may hold together.
func (g *workGate) heavyPlaces() int {
	return max(g.total-1, 1)
}

// fits reports whether a request may take a free place now; g.mu is held.
func (g *workGate) fits(heavy bool) bool {
	return g.busy < g.total && (!heavy || g.heavy < g.heavyPlaces())
}

// enter waits for a place for a request of the given cost; heavy marks a
// session at or above the soft cost limit, alone one with no other request
// in flight (only such a request may take the spare). It returns the
// function that gives the place back, or ctx's error when ctx ends first.
func (g *workGate) enter(ctx context.Context, cost float64, heavy, alone bool) (func(), error) {
	g.mu.Lock()
	// After every change the waiters left are heavy ones over their share,
	// so a request fits now if a place is free and none of its own kind
	// waits.
	if g.fits(heavy) && g.light.Len() == 0 && (!heavy || g.heavyQ.Len() == 0) {
		h := g.take(cost, heavy, false)
		g.mu.Unlock()
		return g.leaver(h), nil
	}
	if alone && g.spareFits(cost, heavy) && (g.light.Len() == 0 || cost < g.light[0].cost) {
		h := g.take(cost, false, true)
		g.mu.Unlock()
		return g.leaver(h), nil
	}
	g.seq++
	w := &gateWaiter{cost: cost, heavy: heavy, alone: alone, seq: g.seq, ready: make(chan struct{})}
	q := g.queueOf(heavy)
	heap.Push(q, w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return g.leaver(w.hold), nil
	case <-ctx.Done():
		g.mu.Lock()
		if w.index >= 0 {
			heap.Remove(q, w.index)
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		g.mu.Unlock()
		// The place was handed over meanwhile: give it back.
		g.leave(w.hold)
		return nil, ctx.Err()
	}
}

// take marks a place (or the spare) held; g.mu is held.
func (g *workGate) take(cost float64, heavy, spare bool) *gateHold {
	h := &gateHold{cost: cost, heavy: heavy, spare: spare}
	g.held[h] = struct{}{}
	if spare {
		g.spare = true
		return h
	}
	g.busy++
	if heavy {
		g.heavy++
	}
	return h
}

// leaver returns the function that gives h back, once.
func (g *workGate) leaver(h *gateHold) func() {
	return func() { h.once.Do(func() { g.leave(h) }) }
}

// leave gives h back and hands free places to waiters.
func (g *workGate) leave(h *gateHold) {
	g.mu.Lock()
	delete(g.held, h)
	switch {
	case h.spare:
		g.spare = false
	case h.heavy:
		g.busy--
		g.heavy--
	default:
		g.busy--
	}
	g.handOut()
	g.mu.Unlock()
}

// queueOf returns the queue of light or heavy waiters.
func (g *workGate) queueOf(heavy bool) *gateQueue {
	if heavy {
		return &g.heavyQ
	}
	return &g.light
}

// handOut gives free places to waiters in order of cost, heavy waiters
// only while heavy requests hold fewer than their share. g.mu is held.
func (g *workGate) handOut() {
	for g.busy < g.total {
		q := &g.light
		if g.heavyQ.Len() > 0 && g.fits(true) && (q.Len() == 0 || g.heavyQ.before(0, q, 0)) {
			q = &g.heavyQ
		}
		if q.Len() == 0 {
			return
		}
		w := heap.Pop(q).(*gateWaiter)
		w.hold = g.take(w.cost, w.heavy, false)
		close(w.ready)
	}
	if g.spare || g.busy < g.total {
		return
	}
	// The spare goes to the cheapest waiter, if it may take it.
	if g.light.Len() > 0 && g.light[0].alone && g.spareFits(g.light[0].cost, false) {
		w := heap.Pop(&g.light).(*gateWaiter)
		w.hold = g.take(w.cost, false, true)
		close(w.ready)
	}
}

// waiting returns the number of requests waiting for a place.
func (g *workGate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.light.Len() + g.heavyQ.Len()
}

// gateQueue orders waiters by cost, then arrival (container/heap).
type gateQueue []*gateWaiter

func (q gateQueue) Len() int { return len(q) }

func (q gateQueue) Less(i, j int) bool { return q.before(i, &q, j) }

// before reports whether q[i] goes before r[j].
func (q gateQueue) before(i int, r *gateQueue, j int) bool {
	a, b := q[i], (*r)[j]
	if a.cost != b.cost {
		return a.cost < b.cost
	}
	return a.seq < b.seq
}

func (q gateQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}

func (q *gateQueue) Push(x any) {
	w := x.(*gateWaiter)
	w.index = len(*q)
	*q = append(*q, w)
}

func (q *gateQueue) Pop() any {
	old := *q
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.index = -1
	*q = old[:n-1]
	return w
}

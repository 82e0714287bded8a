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
type workGate struct {
	mu    sync.Mutex
	total int // places
	busy  int // places held
	heavy int // places held by heavy requests
	seq   uint64
	// light and heavy hold the waiting requests of sessions below and at
	// or above the soft cost limit.
	light, heavyQ gateQueue
}

// gateWaiter is a request waiting for a place.
type gateWaiter struct {
	cost  float64
	heavy bool
	seq   uint64
	ready chan struct{} // closed when the place is handed over
	index int           // in the queue; -1 once out of it
}

// newWorkGate returns a gate of n places (at least 1).
func newWorkGate(n int) *workGate {
	return &workGate{total: max(n, 1)}
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
// session at or above the soft cost limit. It returns the function that
// gives the place back, or ctx's error when ctx ends first.
func (g *workGate) enter(ctx context.Context, cost float64, heavy bool) (func(), error) {
	g.mu.Lock()
	// After every change the waiters left are heavy ones over their share,
	// so a request fits now if a place is free and none of its own kind
	// waits.
	if g.fits(heavy) && g.light.Len() == 0 && (!heavy || g.heavyQ.Len() == 0) {
		g.take(heavy)
		g.mu.Unlock()
		return g.leaver(heavy), nil
	}
	g.seq++
	w := &gateWaiter{cost: cost, heavy: heavy, seq: g.seq, ready: make(chan struct{})}
	q := g.queueOf(heavy)
	heap.Push(q, w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return g.leaver(heavy), nil
	case <-ctx.Done():
		g.mu.Lock()
		if w.index >= 0 {
			heap.Remove(q, w.index)
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		g.mu.Unlock()
		// The place was handed over meanwhile: give it back.
		g.leave(heavy)
		return nil, ctx.Err()
	}
}

// take marks a place held; g.mu is held.
func (g *workGate) take(heavy bool) {
	g.busy++
	if heavy {
		g.heavy++
	}
}

// leaver returns the function that gives one place back, once.
func (g *workGate) leaver(heavy bool) func() {
	var once sync.Once
	return func() { once.Do(func() { g.leave(heavy) }) }
}

// leave gives a place back and hands free places to waiters.
func (g *workGate) leave(heavy bool) {
	g.mu.Lock()
	g.busy--
	if heavy {
		g.heavy--
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
		g.take(w.heavy)
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

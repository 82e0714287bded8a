package electrum

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkGateBoundsRunning checks that no more requests than places run at
// once, whatever their kind.
func TestWorkGateBoundsRunning(t *testing.T) {
	g := newWorkGate(3)
	var in, peak atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			leave, err := g.enter(context.Background(), float64(i%7), i%3 == 0, i%2 == 0)
			if err != nil {
				t.Error(err)
				return
			}
			n := in.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			in.Add(-1)
			leave()
			leave() // a second call gives nothing back
		}(i)
	}
	wg.Wait()
	if p := peak.Load(); p > 3+1 || p < 1 {
		t.Fatalf("peak %d requests inside a gate of 3 and its spare", p)
	}
	if g.busy != 0 || g.heavy != 0 || g.spare || len(g.held) != 0 || g.waiting() != 0 {
		t.Fatalf("gate not empty afterwards: busy %d heavy %d spare %v held %d waiting %d", g.busy, g.heavy, g.spare, len(g.held), g.waiting())
	}
}

// TestWorkGateSpare checks the spare place: taken at once by a request of a
// session in good standing, with no other request in flight, whose cost is
// below every running request's; by nobody else, and by one at a time.
func TestWorkGateSpare(t *testing.T) {
	g := newWorkGate(2)
	enter := func(cost float64, heavy bool) func() {
		t.Helper()
		select {
		case l := <-enterAsync(t, g, cost, heavy):
			return l
		case <-time.After(5 * time.Second):
			t.Fatalf("a request of cost %v did not get in", cost)
			return nil
		}
	}
	h100 := enter(100, false)
	h200 := enter(200, false)
	s50 := enter(50, false) // below both: the spare, at once
	if !g.spare {
		t.Fatal("the request of cost 50 is in, but not on the spare")
	}
	w10 := enterAsync(t, g, 10, false) // the spare is taken
	waitQueued(t, g, 1)
	w100 := enterAsync(t, g, 100, false) // not below every holder
	waitQueued(t, g, 2)
	w0 := enterAsync(t, g, 5000, true)
	waitQueued(t, g, 3)
	g.mu.Lock()
	heavyFits := g.spareFits(0, true)
	g.mu.Unlock()
	if heavyFits {
		t.Fatal("the spare would take a heavy request")
	}
	s50()
	var s10 func()
	select {
	case s10 = <-w10:
	case <-time.After(5 * time.Second):
		t.Fatal("the spare did not go to the waiting request of cost 10")
	}
	if len(w100) > 0 || len(w0) > 0 || !g.spare {
		t.Fatal("the spare went to a request not below every holder, or to a heavy one")
	}
	h200()
	var r100 func()
	select {
	case r100 = <-w100:
	case <-time.After(5 * time.Second):
		t.Fatal("the freed place did not go to the cheapest waiter in good standing")
	}
	h100()
	var r0 func()
	select {
	case r0 = <-w0:
	case <-time.After(5 * time.Second):
		t.Fatal("the heavy request did not get the freed place")
	}
	for _, l := range []func(){s10, r100, r0} {
		l()
	}

	// A request of a session with others in flight never takes the spare.
	h100, h200 = enter(100, false), enter(200, false)
	busy := make(chan func(), 1)
	go func() {
		l, err := g.enter(context.Background(), 1, false, false)
		if err != nil {
			t.Error(err)
			return
		}
		busy <- l
	}()
	waitQueued(t, g, 1)
	if len(busy) > 0 || g.spare {
		t.Fatal("a request of a session with others in flight took the spare")
	}
	h200()
	select {
	case l := <-busy:
		l()
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not get the freed place")
	}
	h100()
	if g.busy != 0 || g.heavy != 0 || g.spare || len(g.held) != 0 || g.waiting() != 0 {
		t.Fatalf("gate not empty afterwards: busy %d heavy %d spare %v held %d waiting %d", g.busy, g.heavy, g.spare, len(g.held), g.waiting())
	}
}

// enterAsync enters g on a goroutine and reports on the returned channel
// once inside, with the function that leaves.
func enterAsync(t *testing.T, g *workGate, cost float64, heavy bool) chan func() {
	ch := make(chan func(), 1)
	go func() {
		leave, err := g.enter(context.Background(), cost, heavy, true)
		if err != nil {
			t.Error(err)
			return
		}
		ch <- leave
	}()
	return ch
}

// waitQueued waits until n requests wait at the gate.
func waitQueued(t *testing.T, g *workGate, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.waiting() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting, want %d", g.waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWorkGateLowestCostFirst checks that a freed place goes to the waiting
// request of the lowest cost, in arrival order between equal costs.
func TestWorkGateLowestCostFirst(t *testing.T) {
	g := newWorkGate(1)
	hold, err := g.enter(context.Background(), 0, false, true)
	if err != nil {
		t.Fatal(err)
	}
	costs := []float64{500, 20, 300, 20, 0}
	chans := make([]chan func(), len(costs))
	for i, c := range costs {
		chans[i] = enterAsync(t, g, c, false)
		waitQueued(t, g, i+1)
	}
	want := []int{4, 1, 3, 2, 0}
	leave := hold
	for _, i := range want {
		leave()
		select {
		case leave = <-chans[i]:
		case <-time.After(5 * time.Second):
			t.Fatalf("the request of cost %v did not get the place", costs[i])
		}
		for j, ch := range chans {
			if len(ch) > 0 {
				t.Fatalf("request %d (cost %v) got a place beside %d", j, costs[j], i)
			}
		}
	}
	leave()
}

// TestWorkGateHeavyLeaveOnePlace checks that requests of sessions at or
// above the soft cost limit never hold the last place, and that a light
// request passes heavy ones waiting for their share.
func TestWorkGateHeavyLeaveOnePlace(t *testing.T) {
	g := newWorkGate(2)
	h1, err := g.enter(context.Background(), 5000, true, true)
	if err != nil {
		t.Fatal(err)
	}
	h2 := enterAsync(t, g, 5000, true)
	waitQueued(t, g, 1) // a place is free, but not for a heavy request
	light := enterAsync(t, g, 9000, false)
	var l func()
	select {
	case l = <-light:
	case <-time.After(5 * time.Second):
		t.Fatal("a light request waited behind heavy ones with a place free")
	}
	if len(h2) > 0 {
		t.Fatal("a second heavy request took the last place")
	}
	l()
	if len(h2) > 0 {
		t.Fatal("a second heavy request took the place kept for light ones")
	}
	h1()
	select {
	case l = <-h2:
	case <-time.After(5 * time.Second):
		t.Fatal("the heavy request did not get the heavy place once free")
	}
	l()

	// With one place, heavy requests may use it.
	one := newWorkGate(1)
	l, err = one.enter(context.Background(), 5000, true, true)
	if err != nil {
		t.Fatal(err)
	}
	l()
}

// TestWorkGateCancel checks that a request whose context ends while it
// waits leaves the queue and keeps no place.
func TestWorkGateCancel(t *testing.T) {
	g := newWorkGate(1)
	hold, err := g.enter(context.Background(), 0, false, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.enter(ctx, 1, false, true); err == nil {
		t.Fatal("entered a full gate")
	}
	if g.waiting() != 0 {
		t.Fatalf("%d waiting after the cancel", g.waiting())
	}
	hold()
	l, err := g.enter(context.Background(), 0, false, true)
	if err != nil {
		t.Fatal(err)
	}
	l()
	if g.busy != 0 {
		t.Fatalf("%d places held", g.busy)
	}
}

// TestWorkersKeepPlaceForGoodStanding runs the gate in the server: a
// client above the soft cost limit whose requests each take a second
// holds one of the two places, and a client in good standing that asks
// meanwhile is answered before the first of them.
func TestWorkersKeepPlaceForGoodStanding(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.Workers = 2
		c.CostSoftLimit = 50
		c.CostHardLimit = 10000
		c.RequestSleep = time.Millisecond
	})
	heavy := dialFrom(t, fx.addr, net.IPv4(127, 0, 2, 1))
	heavy.negotiate("1.4")
	// An unknown method costs 100: above the soft limit from here on.
	if _, rerr := heavy.call("no.such.method"); rerr == nil {
		t.Fatal("unknown method answered")
	}
	good := dialFrom(t, fx.addr, net.IPv4(127, 0, 3, 1))
	good.negotiate("1.4")

	fx.f.slow = time.Second
	var slow []chan rpcResponse
	for i := 0; i < 3; i++ {
		slow = append(slow, heavy.start("blockchain.scripthash.get_history", fx.shA.String()))
	}
	// Let the heavy requests reach the gate first.
	deadline := time.Now().Add(5 * time.Second)
	for fx.s.gate.waiting() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("heavy requests waiting: %d, want 2", fx.s.gate.waiting())
		}
		time.Sleep(time.Millisecond)
	}
	ping := good.start("server.ping")
	select {
	case r := <-ping:
		if r.Error != nil {
			t.Fatalf("ping: %v", r.Error)
		}
	case r := <-slow[0]:
		t.Fatalf("a heavy request (%s) was answered before the client in good standing", r.ID)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	for _, ch := range slow {
		if r := heavy.await(ch); r.Error != nil {
			t.Fatalf("heavy request: %v", r.Error)
		}
	}
}

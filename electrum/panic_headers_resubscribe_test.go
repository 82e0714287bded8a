package electrum

import "testing"

// TestPanickedHeadersResubscribeKeepsTips: a headers subscriber repeats
// blockchain.headers.subscribe and the handler panics after taking its
// claim. The claim is settled all the same, and the next tip is notified
// (PROTOCOL.md §6), the subscription having been answered before.
func TestPanickedHeadersResubscribeKeepsTips(t *testing.T) {
	fx := newFixtureChain(t)
	// The next ChainTip read panics once armed (run recovers and answers
	// an internal error).
	armed := make(oneShot, 1)
	sb := &hookedBackend{fakeBackend: fx.f, onChainTip: func() {
		armed.panicIfFired(": tip read failed")
	}}
	fx.s, fx.addr = startServer(t, sb, nil)

	lc := dialNegotiated(t, fx.addr)
	first := lc.ask(`{"jsonrpc":"2.0","id":"first","method":"blockchain.headers.subscribe","params":[]}`)
	if first.Error != nil {
		t.Fatalf("test setup: first subscribe %v", first.Error)
	}
	armed.arm()
	again := lc.ask(`{"jsonrpc":"2.0","id":"again","method":"blockchain.headers.subscribe","params":[]}`)
	if again.Error == nil {
		t.Fatalf("test setup: the re-subscribe did not fail: %s", again.Result)
	}
	h1 := fx.mineAndNotify(p2wpkh(0xdd))
	fx.flush(t)
	told := tipsToPing(t, lc)
	if len(told) == 0 || told[len(told)-1] != h1 {
		t.Fatalf("new tip %d after a failed headers re-subscribe; the client was told heights %v", h1, told)
	}
}

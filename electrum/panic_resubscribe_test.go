package electrum

import (
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestPanickedResubscribeKeepsSubscription: a client subscribed to A
// re-subscribes, and the handler panics after it took its claim (the
// request is answered an internal error). The claim is settled all the
// same: the client keeps the subscription it was answered before (a
// failed re-subscribe does not end it, as in ElectrumX, whose
// hashX_subscribe replaces hashX_subs only once the status computes), and
// A's next change is told (PROTOCOL.md, scripthash.subscribe:
// "Notification ... whenever status changes").
func TestPanickedResubscribeKeepsSubscription(t *testing.T) {
	fx := newFixtureChain(t)
	// The next Status read (a subscribe's) panics once armed: a bug in a
	// backend read, which run() recovers from.
	armed := make(oneShot, 1)
	sb := &hookedBackend{fakeBackend: fx.f, onStatus: func(indexers.ScriptHash) {
		armed.panicIfFired(": status read failed")
	}}
	fx.s, fx.addr = startServer(t, sb, nil)

	lc := dialNegotiated(t, fx.addr)
	s0 := firstStatus(t, lc, fx.shA)

	armed.arm()
	if again, _ := lc.subscribeStatus("again", fx.shA); again.Error == nil {
		t.Fatalf("test setup: the re-subscribe did not fail: %s", again.Result)
	}

	fx.payAInMempool(t)
	told := statusesToPing(t, lc, fx.shA)
	if len(told) == 0 || told[len(told)-1] == *s0 {
		t.Fatalf("A's status changed after a failed re-subscribe; the client was told %q, nothing after %q", told, *s0)
	}
}

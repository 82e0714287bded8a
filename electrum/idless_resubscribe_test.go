package electrum

import (
	"fmt"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestIdlessResubscribeKeepsStatusChange: a client subscribed to A
// (told S0) sends a re-subscribe to A as a JSON-RPC notification (no id:
// it gets no answer). While that subscribe runs, A's status changes to S1.
// The client was never told S1, so the server owes it a notification of
// S1 once the subscribe's claim is settled (PROTOCOL.md §"scripthash.subscribe":
// "Notification ... whenever status changes").
func TestIdlessResubscribeKeepsStatusChange(t *testing.T) {
	fx := newFixtureChain(t)
	// The next Status read (the one a subscribe makes; the notifier reads
	// with Statuses) waits once armed.
	st := newStall(t)
	sb := &hookedBackend{fakeBackend: fx.f, onStatus: func(indexers.ScriptHash) { st.hold() }}
	fx.s, fx.addr = startServer(t, sb, func(c *Config) { c.Concurrency = 1 })

	lc := dialNegotiated(t, fx.addr)
	s0 := firstStatus(t, lc, fx.shA)

	st.arm()
	lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["%s"]}`, fx.shA))
	st.waitStalled(t, "id-less subscribe never read the status")
	fx.payAInMempool(t)
	st.release()

	// Concurrency 1: the ping runs once the id-less subscribe's worker,
	// its after included, is done; what that queued comes first.
	told := statusesToPing(t, lc, fx.shA)

	now := probeStatus(t, fx.addr, fx.shA)
	if now == nil || *now == *s0 {
		t.Fatalf("test setup: the broadcast did not change A's status")
	}
	if len(told) == 0 || told[len(told)-1] != *now {
		t.Fatalf("client was told %q of A (after its answer %q), never the current status %q", told, *s0, *now)
	}
}

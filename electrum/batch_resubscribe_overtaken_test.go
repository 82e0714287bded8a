package electrum

import (
	"fmt"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestBatchResubscribeAnswerNotOvertakenByNewerStatus: a session holds a
// subscription to A and re-subscribes in a batch (a wallet re-sending its
// subscriptions); while a later member of the batch runs, A's
// status changes, and the notifier must hold that change until the batch's
// array carrying the re-subscribe's older answer is queued, or the client
// would end with the older status. docs/PROTOCOL.md §6: "a status or tip is never
// replaced by one read earlier".
func TestBatchResubscribeAnswerNotOvertakenByNewerStatus(t *testing.T) {
	fx := newFixtureChain(t)
	z := indexers.ScriptHashFromScript(p2wpkh(0x5a))
	// z's Balance read is held: it keeps the batch's later member running,
	// its earlier answers held, while the test moves the chain on.
	st := newStall(t)
	st.arm()
	sb := &hookedBackend{fakeBackend: fx.f, onBalance: func(sh indexers.ScriptHash) {
		if sh == z {
			st.hold()
		}
	}}
	fx.s, fx.addr = startServer(t, sb, func(c *Config) { c.Concurrency = 1 })

	lc := dialNegotiated(t, fx.addr)
	s0 := firstStatus(t, lc, fx.shA)

	lc.send(fmt.Sprintf(`[{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.subscribe","params":["%s"]},`+
		`{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.get_balance","params":["%s"]}]`, fx.shA, z))
	st.waitStalled(t, "batch's second member never ran")
	// A's status changes while the batch holds the re-subscribe's answer.
	fx.payAInMempool(t)
	st.release()

	var told []string
	note := func(l []byte) {
		if s, ok := scriptNote(t, l, fx.shA); ok {
			told = append(told, s)
		}
	}
	for _, r := range lc.toBatch(note) {
		if string(r.ID) == "1" {
			var s *string
			decodeInto(t, r.Result, &s)
			if r.Error != nil || s == nil {
				t.Fatalf("test setup: re-subscribe answered %v", r.Error)
			}
			told = append(told, *s)
		}
	}
	lc.toPing(note)

	now := probeStatus(t, fx.addr, fx.shA)
	if now == nil || *now == *s0 {
		t.Fatalf("test setup: the broadcast did not change A's status")
	}
	if last := told[len(told)-1]; last != *now {
		t.Fatalf("client's last word on A is %q (read before the change), not the current %q; in order it was told %q", last, *now, told)
	}
}

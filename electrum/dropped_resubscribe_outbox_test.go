package electrum

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestDroppedResubscribeTellsStatusFromOutbox: the notifier found A's new
// status S1 for a session (recorded in its state, the note waiting in the
// pass's outbox until the pass's other chunk is read). Meanwhile another
// event is queued and the client re-subscribes to A; that subscribe reads
// S1 at the newer seq, and its answer is dropped (the request timed out).
// The pass's note is then left out (its seq is stale), so settling the
// subscribe's claim must tell S1: the client, last told S0, is owed it
// (PROTOCOL.md scripthash.subscribe: "Notification ... whenever status
// changes"). What was told is what was queued, not what was recorded.
func TestDroppedResubscribeTellsStatusFromOutbox(t *testing.T) {
	fx := newFixtureChain(t)
	// Two holds: the notifier's read of a chunk of statuses without A
	// waits once armed (a pass then keeps the notes it delivered for A's
	// chunk, unsent, until the other chunk is read), and the next
	// subscribe's Status read waits once armed.
	pass, sub := newStall(t), newStall(t)
	sb := &hookedBackend{fakeBackend: fx.f,
		onStatuses: func(shs []indexers.ScriptHash) {
			if !slices.Contains(shs, fx.shA) {
				pass.hold()
			}
		},
		onStatus: func(indexers.ScriptHash) { sub.hold() }}
	fx.s, fx.addr = startServer(t, sb, func(c *Config) { c.RequestTimeout = 300 * time.Millisecond })

	lc := dialNegotiated(t, fx.addr)
	s0 := firstStatus(t, lc, fx.shA)
	// 70 more subscriptions: the pass reads two chunks.
	touched := []indexers.ScriptHash{fx.shA}
	for i := range 70 {
		sh := indexers.ScriptHashFromScript(p2wpkh(byte(i + 1)))
		touched = append(touched, sh)
		r := lc.ask(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]}`, i, sh))
		if r.Error != nil {
			t.Fatalf("test setup: subscribe %d: %v", i, r.Error)
		}
	}
	ss := onlySession(fx.s)
	stateOfA := func() (*string, int) {
		ss.subMu.Lock()
		defer ss.subMu.Unlock()
		st := ss.subs[fx.shA]
		return st.status, st.claims
	}

	pass.arm()
	if err := fx.f.Broadcast(fx.payA()); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool(touched)
	pass.waitStalled(t, "hang guard: the pass never read the chunk without A")
	waitUntil(t, "A's new status delivered", func() bool { s, _ := stateOfA(); return s != nil && *s != *s0 })
	s1, _ := stateOfA()

	// Another event (an unsubscribed script): the sequence moves on.
	fx.s.NotifyMempool([]indexers.ScriptHash{indexers.ScriptHashFromScript(p2wpkh(0xee))})
	sub.arm()
	lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"again","method":"blockchain.scripthash.subscribe","params":["%s"]}`, fx.shA))
	sub.waitStalled(t, "hang guard: the re-subscribe never read the status")
	var again rpcResponse
	decodeInto(t, lc.line(), &again)
	if again.Error == nil || !strings.Contains(string(again.ID), "again") {
		t.Fatalf("test setup: want the re-subscribe timed out, got %s %s %v", again.ID, again.Result, again.Error)
	}
	sub.release()
	waitUntil(t, "the re-subscribe's claim settled", func() bool { _, c := stateOfA(); return c == 0 })
	pass.release()
	fx.flush(t)

	told := statusesToPing(t, lc, fx.shA)
	if len(told) == 0 || told[len(told)-1] != *s1 {
		t.Fatalf("A changed %q -> %q; after its answer the client was told %q of A", *s0, *s1, told)
	}
}

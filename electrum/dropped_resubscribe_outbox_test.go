package electrum

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// OutboxStall is the fake backend with two holds: the notifier's read of
// a chunk of statuses without sh waits once armed (a pass then keeps the
// notes it delivered for sh's chunk, unsent, until the other chunk is
// read), and the next subscribe's Status read waits once armed.
type OutboxStall struct {
	*fakeBackend
	sh indexers.ScriptHash

	armedN, stalledN, resumeN chan struct{}
	armedS, stalledS, resumeS chan struct{}
}

func (b *OutboxStall) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	if !slices.Contains(shs, b.sh) {
		select {
		case <-b.armedN:
			b.stalledN <- struct{}{}
			<-b.resumeN
		default:
		}
	}
	return b.fakeBackend.Statuses(shs, limit)
}

func (b *OutboxStall) Status(sh indexers.ScriptHash, limit int) (StatusHasher, indexers.Tip, error) {
	select {
	case <-b.armedS:
		b.stalledS <- struct{}{}
		<-b.resumeS
	default:
	}
	return b.fakeBackend.Status(sh, limit)
}

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
	sb := &OutboxStall{fakeBackend: fx.f, sh: fx.shA,
		armedN: make(chan struct{}, 1), stalledN: make(chan struct{}, 1), resumeN: make(chan struct{}),
		armedS: make(chan struct{}, 1), stalledS: make(chan struct{}, 1), resumeS: make(chan struct{})}
	t.Cleanup(func() {
		for _, ch := range []chan struct{}{sb.resumeN, sb.resumeS} {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	})
	fx.s, fx.addr = startServer(t, sb, func(c *Config) { c.RequestTimeout = 300 * time.Millisecond })

	lc := dialLines(t, fx.addr)
	lc.negotiate()
	lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"first","method":"blockchain.scripthash.subscribe","params":["%s"]}`, fx.shA))
	var first rpcResponse
	decodeInto(t, lc.line(), &first)
	var s0 *string
	decodeInto(t, first.Result, &s0)
	if first.Error != nil || s0 == nil {
		t.Fatalf("test setup: first subscribe %s %v", first.Result, first.Error)
	}
	// 70 more subscriptions: the pass reads two chunks.
	touched := []indexers.ScriptHash{fx.shA}
	for i := range 70 {
		sh := indexers.ScriptHashFromScript(p2wpkh(byte(i + 1)))
		touched = append(touched, sh)
		lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]}`, i, sh))
		var r rpcResponse
		decodeInto(t, lc.line(), &r)
		if r.Error != nil {
			t.Fatalf("test setup: subscribe %d: %v", i, r.Error)
		}
	}
	fx.s.mu.Lock()
	var ss *session
	for s := range fx.s.sessions {
		ss = s
	}
	fx.s.mu.Unlock()
	stateOfA := func() (*string, int) {
		ss.subMu.Lock()
		defer ss.subMu.Unlock()
		st := ss.subs[fx.shA]
		return st.status, st.claims
	}
	waitFor := func(what string, ok func() bool) {
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("hang guard: %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	sb.armedN <- struct{}{}
	pay := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(49_9999_0000, fx.a))
	if err := fx.f.Broadcast(pay); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool(touched)
	select {
	case <-sb.stalledN:
	case <-time.After(30 * time.Second):
		t.Fatal("hang guard: the pass never read the chunk without A")
	}
	waitFor("A's new status delivered", func() bool { s, _ := stateOfA(); return s != nil && *s != *s0 })
	s1, _ := stateOfA()

	// Another event (an unsubscribed script): the sequence moves on.
	fx.s.NotifyMempool([]indexers.ScriptHash{indexers.ScriptHashFromScript(p2wpkh(0xee))})
	sb.armedS <- struct{}{}
	lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"again","method":"blockchain.scripthash.subscribe","params":["%s"]}`, fx.shA))
	select {
	case <-sb.stalledS:
	case <-time.After(30 * time.Second):
		t.Fatal("hang guard: the re-subscribe never read the status")
	}
	var again rpcResponse
	decodeInto(t, lc.line(), &again)
	if again.Error == nil || !strings.Contains(string(again.ID), "again") {
		t.Fatalf("test setup: want the re-subscribe timed out, got %s %s %v", again.ID, again.Result, again.Error)
	}
	close(sb.resumeS)
	waitFor("the re-subscribe's claim settled", func() bool { _, c := stateOfA(); return c == 0 })
	close(sb.resumeN)
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}

	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	var told []string
	for {
		l := lc.line()
		if strings.Contains(string(l), `"id":"end"`) {
			break
		}
		var n rpcResponse
		decodeInto(t, l, &n)
		if n.Method == "blockchain.scripthash.subscribe" {
			var p []*string
			decodeInto(t, n.Params, &p)
			if len(p) == 2 && p[1] != nil && strings.EqualFold(*p[0], fx.shA.String()) {
				told = append(told, *p[1])
			}
		}
	}
	if len(told) == 0 || told[len(told)-1] != *s1 {
		t.Fatalf("A changed %q -> %q; after its answer the client was told %q of A", *s0, *s1, told)
	}
}

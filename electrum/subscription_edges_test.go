// Subscriptions at their edges: mempool rechecks, histories grown too large, a lagging mempool view.

package electrum

import (
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// laggingMempool is the fake chain whose mempool view has not caught up
// with the last block yet: it still lists the block's transactions as
// unconfirmed (height 0), as a Backend's mempool overlay may for a moment
// after the index commits a block.
type laggingMempool struct {
	*fakeBackend
	stale []MempoolEntry
	of    indexers.ScriptHash
}

func (l *laggingMempool) MempoolEntries(sh indexers.ScriptHash) []MempoolEntry {
	es := l.fakeBackend.MempoolEntries(sh)
	if sh == l.of {
		es = append(es, l.stale...)
	}
	return es
}

// TestConfirmedNotListedAgainAsMempool pins the server's own guard
// (methods_scripthash.go mempoolEntries; docs/PROTOCOL.md §6: status and
// history never list a transaction twice): a transaction the index holds as
// confirmed and the mempool view still lists is left out of the mempool
// part of get_history, get_mempool and the status.
func TestConfirmedNotListedAgainAsMempool(t *testing.T) {
	fx := newFixtureChain(t)
	// tx1 (block 4) pays B: the lagging view still has it at height 0.
	lag := &laggingMempool{fakeBackend: fx.f, of: fx.shB,
		stale: []MempoolEntry{{TxHash: fx.tx1.TxHash(), Height: 0, Fee: 10000}}}
	fx.s, fx.addr = startServer(t, lag, nil)
	c := fx.client(t, "1.4")

	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", fx.shB.String())
	seen := map[string]int{}
	for _, e := range hist {
		seen[e.TxHash]++
	}
	id := fx.tx1.TxHash().String()
	if seen[id] != 1 || len(hist) != 3 || hist[0].TxHash != id || hist[0].Height != 4 {
		t.Fatalf("B's history %+v: tx1 must be listed once, confirmed at height 4", hist)
	}
	var mem []historyItem
	c.must(&mem, "blockchain.scripthash.get_mempool", fx.shB.String())
	for _, e := range mem {
		if e.TxHash == id {
			t.Fatalf("B's mempool %+v lists the confirmed tx1", mem)
		}
	}
	var status *string
	c.must(&status, "blockchain.scripthash.subscribe", fx.shB.String())
	dg := indexers.NewStatusHasher()
	for _, e := range hist {
		dg.Add(mustHash(t, e.TxHash), e.Height)
	}
	if status == nil || *status != *statusHex(dg.Sum()) {
		t.Fatalf("B's status %v is not its history's", status)
	}
}

// TestSubscribeWithMempoolRechecked pins docs/PROTOCOL.md §6: "Scripts whose
// last status had mempool entries are recomputed on every new tip (-1
// becomes 0 when a parent confirms)", for a status the subscribe answer
// itself computed. D is paid by tx4, which spends C's output of the
// unconfirmed tx2 (height -1); a block then confirms tx2 alone. The block
// touches B and C, never D, yet D's status changed (tx4 is now at height
// 0): the subscriber must be told.
func TestSubscribeWithMempoolRechecked(t *testing.T) {
	fx := newFixture(t, nil)
	d := p2wpkh(0xd4)
	shD := indexers.ScriptHashFromScript(d)
	tx4 := spend([]wire.OutPoint{{Hash: fx.tx2.TxHash(), Index: 0}}, wire.NewTxOut(4_9990_0000, d))
	if err := fx.f.Broadcast(tx4); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool(fx.f.txScriptsLocked(tx4))
	if err := fx.s.flushNotifications(contextWithTimeout(30e9)); err != nil {
		t.Fatal(err)
	}

	c := fx.client(t, "1.4")
	var first *string
	c.must(&first, "blockchain.scripthash.subscribe", shD.String())
	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", shD.String())
	if first == nil || len(hist) != 1 || hist[0].Height != -1 {
		t.Fatalf("D before the block: status %v, history %+v", first, hist)
	}

	_, _, touched := fx.f.mine(p2wpkh(0xe5), fx.tx2)
	for _, sh := range touched {
		if sh == shD {
			t.Fatal("the block touches D: the test needs it not to")
		}
	}
	hdr, h := fx.f.tip()
	fx.s.NotifyTip(hdr, h)
	fx.s.NotifyScriptHashes(touched)

	notes := c.drain(fx.s)
	if len(notes) != 1 {
		t.Fatalf("%d notifications after the parent confirmed, want D's status: %s", len(notes), notesText(notes))
	}
	sh, status := statusOf(t, notes[0])
	c.must(&hist, "blockchain.scripthash.get_history", shD.String())
	if len(hist) != 1 || hist[0].Height != 0 {
		t.Fatalf("D after the block: history %+v", hist)
	}
	dg := indexers.NewStatusHasher()
	dg.Add(mustHash(t, hist[0].TxHash), 0)
	if sh != shD.String() || status == nil || *status != *statusHex(dg.Sum()) {
		t.Fatalf("notification %s %v, want D's status with tx4 at height 0", sh, status)
	}
}

// TestHistoryTooLargeEndsSubscription pins docs/PROTOCOL.md §6: "A
// subscribed script whose status can no longer be computed (history too
// large) is unsubscribed silently" (as ElectrumX): no notification is sent,
// the subscription is gone (unsubscribe answers false) and its place under
// the session's subscription limit is free again. The limit counts the
// confirmed and mempool entries together, as the subscribe answer's does.
func TestHistoryTooLargeEndsSubscription(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.MaxSubsPerSession = 1
		c.AnswerCache = -1
	})
	limit := fx.s.cfg.historyLimit()
	c := fx.client(t, "1.4.2")
	var st *string
	c.must(&st, "blockchain.scripthash.subscribe", fx.shA.String())
	if st == nil {
		t.Fatal("A has no status")
	}
	// A's history grows past the limit; the notifier reads it again.
	fx.f.setExtraHistory(fx.shA, limit+1)
	fx.s.NotifyScriptHashes(fx.f.txScriptsLocked(fx.tx1))
	if notes := c.drain(fx.s); len(notes) != 0 {
		t.Fatalf("notifications %s, want none", notesText(notes))
	}
	var had bool
	c.must(&had, "blockchain.scripthash.unsubscribe", fx.shA.String())
	if had {
		t.Fatal("the subscription to a script whose history became too large is still held")
	}
	// Its place is free: another script can be subscribed.
	c.must(&st, "blockchain.scripthash.subscribe", fx.shC.String())

	// B: confirmed history within the limit, over it only with its
	// mempool entries (tx2, tx3) counted.
	c2 := fx.client(t, "1.4.2")
	fx.f.setExtraHistory(fx.shB, limit-3) // tx1 + tx2 + tx3: the limit
	c2.must(&st, "blockchain.scripthash.subscribe", fx.shB.String())
	fx.f.setExtraHistory(fx.shB, limit-2)
	fx.s.NotifyScriptHashes(fx.f.txScriptsLocked(fx.tx2))
	if notes := c2.drain(fx.s); len(notes) != 0 {
		t.Fatalf("B: notifications %s, want none", notesText(notes))
	}
	c2.must(&had, "blockchain.scripthash.unsubscribe", fx.shB.String())
	if had {
		t.Fatal("the subscription to a script whose history with the mempool became too large is still held")
	}
}

// notesText formats notifications for a failure message.
func notesText(notes []rpcResponse) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString(n.Method + " " + string(n.Params) + "; ")
	}
	return b.String()
}

package electrum

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestNotifiedStatusReadAcrossTwoTips: the notifier reads a chunk's
// confirmed parts at one index tip and their mempool parts afterwards; when
// the index commits a block confirming X in between, the two parts describe
// two tips and X is in neither. Such a status is not sent but read again
// (docs/PROTOCOL.md §4.2: "The status is computed from the index and the
// mempool at one index tip").
func TestNotifiedStatusReadAcrossTwoTips(t *testing.T) {
	n, sb := newStallNode(t)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	payTo := p2wpkh(0x61)
	sh := indexers.ScriptHashFromScript(payTo)
	var st *string
	c.must(&st, "blockchain.scripthash.subscribe", sh.String())

	coinX, coinZ := n.coin(), n.coin()
	x := testchain.SpendTx([]testchain.Coin{coinX}, wire.NewTxOut(coinX.Value-10_000, payTo))
	z := testchain.SpendTx([]testchain.Coin{coinZ}, wire.NewTxOut(coinZ.Value-10_000, payTo))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(x))
	n.waitNotified()
	for len(c.notes) > 0 {
		<-c.notes
	}

	// Z's acceptance starts a pass for sh; it stops after reading the
	// index at tip T.
	sb.armed <- struct{}{}
	c.must(&txid, "blockchain.transaction.broadcast", txHex(z))
	<-sb.stalled
	// Meanwhile the chain connects a block with X and the index commits
	// it (its events are not queued yet: the writer waits in OnCommit).
	n.hold()
	blk := n.process(nil, time.Second, x)
	<-n.held
	close(sb.resume)

	xid, zid := x.TxHash().String(), z.TxHash().String()
	atT := []historyItem{{TxHash: xid, Height: 0}, {TxHash: zid, Height: 0}}
	if zid < xid {
		atT[0], atT[1] = atT[1], atT[0]
	}
	atT1 := []historyItem{{TxHash: xid, Height: blk.Height()}, {TxHash: zid, Height: 0}}
	wantT, wantT1 := statusFromHistory(t, atT), statusFromHistory(t, atT1)

	// Whatever the stopped pass sends, and what the block's events bring,
	// is a status of one tip: before the block or after it.
	n.release()
	// The writer queues the block's events once released: the notifier is
	// flushed after them.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if p := n.srv.notifier.settled.Load(); p != nil && p.hash == *blk.Hash() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the block's tip event was not queued")
		}
	}
	n.waitNotified()
	notes := c.drain(n.srv)
	if len(notes) == 0 {
		t.Fatal("no notification of the block")
	}
	onlyX := statusFromHistory(t, []historyItem{{TxHash: xid, Height: 0}})
	for i, note := range notes {
		_, got := statusOf(t, note)
		if i == 0 && equalStatus(got, onlyX) {
			continue // X's own notification, late
		}
		if !equalStatus(got, wantT) && !equalStatus(got, wantT1) {
			onlyZ := statusFromHistory(t, []historyItem{{TxHash: zid, Height: 0}})
			t.Errorf("notified status %s is neither the status before the block (%s: X,Z unconfirmed) nor after it "+
				"(%s: X confirmed at %d, Z unconfirmed); the status of Z alone is %s",
				showStatus(got), showStatus(wantT), showStatus(wantT1), blk.Height(), showStatus(onlyZ))
		}
		if i == len(notes)-1 && !equalStatus(got, wantT1) {
			t.Errorf("last notified status %s, want %s", showStatus(got), showStatus(wantT1))
		}
	}
	var fresh *string
	c.must(&fresh, "blockchain.scripthash.subscribe", sh.String())
	if !equalStatus(fresh, wantT1) {
		t.Fatalf("fresh subscribe %s, want %s", showStatus(fresh), showStatus(wantT1))
	}
}

// TestHeaderNotificationOlderThanSubscribeAnswer: a headers.subscribe
// answered with the index tip T2 while the notifier has yet to handle the
// tip event of T1 (queued before the answer read the sequence number, T2's
// not yet queued) must not be followed by a notification of T1, the
// client's tip going back a block without a reorganization (docs/PROTOCOL.md
// §6: a notification never carries what was computed before the answer).
func TestHeaderNotificationOlderThanSubscribeAnswer(t *testing.T) {
	n, sb := newStallNode(t)
	a := dial(t, n.addr)
	a.negotiate("1.4")
	payTo := p2wpkh(0x62)
	sh := indexers.ScriptHashFromScript(payTo)
	a.must(nil, "blockchain.scripthash.subscribe", sh.String())
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, payTo))

	// A pass busy with a's status (here stopped) while blocks come.
	sb.armed <- struct{}{}
	var txid string
	a.must(&txid, "blockchain.transaction.broadcast", txHex(tx))
	<-sb.stalled
	b1 := n.mine(nil) // T1 committed, its events queued behind the pass
	for seq := n.srv.notifier.currentSeq(); ; {
		time.Sleep(20 * time.Millisecond)
		if now := n.srv.notifier.currentSeq(); now == seq {
			break
		} else {
			seq = now
		}
	}
	n.hold()
	b2 := n.process(nil, time.Second)
	<-n.held // T2 committed, its events not queued

	c := dial(t, n.addr)
	c.negotiate("1.4")
	var hs headerResult
	c.must(&hs, "blockchain.headers.subscribe")
	if hs.Height != b2.Height() {
		t.Fatalf("headers.subscribe answered %d, want T2 %d", hs.Height, b2.Height())
	}
	close(sb.resume)
	// The notifier handles what is queued (T1's events); T2's come when
	// the writer goes on.
	notes := c.drain(n.srv)
	n.releaseHandled() // T2's events queued
	notes = append(notes, c.drain(n.srv)...)
	var heights []int32
	for _, note := range notes {
		var hdrs []headerResult
		json.Unmarshal(note.Params, &hdrs)
		if note.Method == "blockchain.headers.subscribe" && len(hdrs) == 1 {
			heights = append(heights, hdrs[0].Height)
		}
	}
	for _, h := range heights {
		if h < hs.Height {
			t.Fatalf("after answering headers.subscribe with height %d (T2), the server notified heights %v: "+
				"T1 (%d) after T2, the tip going back without a reorganization", hs.Height, heights, b1.Height())
		}
	}
}

// TestSubscribeAnswerFollowedByOlderStatus: a pass computed a status at
// sequence n; the index then committed a block (its event not yet queued)
// and a subscribe, reading the same sequence n, answered the newer status.
// The pass's older status must not follow the answer as a change.
func TestSubscribeAnswerFollowedByOlderStatus(t *testing.T) {
	n, sb := newStallNode(t)
	a := dial(t, n.addr)
	a.negotiate("1.4")
	payTo := p2wpkh(0x63)
	sh := indexers.ScriptHashFromScript(payTo)
	a.must(nil, "blockchain.scripthash.subscribe", sh.String())
	coinX, coinZ := n.coin(), n.coin()
	x := testchain.SpendTx([]testchain.Coin{coinX}, wire.NewTxOut(coinX.Value-10_000, payTo))
	z := testchain.SpendTx([]testchain.Coin{coinZ}, wire.NewTxOut(coinZ.Value-10_000, payTo))
	var txid string
	a.must(&txid, "blockchain.transaction.broadcast", txHex(x))
	n.waitNotified()

	// Z's acceptance starts a pass for sh; it computes the whole status
	// at T (X and Z unconfirmed) and stops before delivering it.
	sb.armedMem <- struct{}{}
	a.must(&txid, "blockchain.transaction.broadcast", txHex(z))
	<-sb.stalledMem
	n.hold()
	blk := n.process(nil, time.Second, x)
	<-n.held // X confirmed in the index; the block's events not queued

	c := dial(t, n.addr)
	c.negotiate("1.4")
	var answered *string
	c.must(&answered, "blockchain.scripthash.subscribe", sh.String())
	xid, zid := x.TxHash().String(), z.TxHash().String()
	want := statusFromHistory(t, []historyItem{{TxHash: xid, Height: blk.Height()}, {TxHash: zid, Height: 0}})
	if !equalStatus(answered, want) {
		t.Fatalf("subscribe answered %s, want X confirmed %s", showStatus(answered), showStatus(want))
	}
	close(sb.resumeMem)
	notes := c.drain(n.srv) // the pass's own notifications, before the block's events
	n.releaseHandled()      // the block's events queued
	notes = append(notes, c.drain(n.srv)...)
	atT := []historyItem{{TxHash: xid, Height: 0}, {TxHash: zid, Height: 0}}
	if zid < xid {
		atT[0], atT[1] = atT[1], atT[0]
	}
	older := statusFromHistory(t, atT)
	var seen []string
	for _, note := range notes {
		if note.Method == "blockchain.scripthash.subscribe" {
			_, got := statusOf(t, note)
			seen = append(seen, showStatus(got))
		}
	}
	if len(seen) > 0 {
		t.Fatalf("subscribe answered %s (X confirmed at %d, Z unconfirmed); then notified %v "+
			"(%s is X and Z unconfirmed, computed before the answer)", showStatus(answered), blk.Height(), seen, showStatus(older))
	}
}

// TestListUnspentMempoolOrderByTxid: docs/PROTOCOL.md §5 lists the
// unconfirmed outputs "by txid and output index"; a txid is its display
// hex (§4.2 orders the same transactions by it), not the hash's internal
// byte order.
func TestListUnspentMempoolOrderByTxid(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	payTo := p2wpkh(0x65)
	sh := indexers.ScriptHashFromScript(payTo)
	var ids []string
	for i := 0; i < 4; i++ {
		coin := n.coin()
		tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000-int64(i), payTo))
		var txid string
		c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))
		ids = append(ids, txid)
	}
	var us []unspentItem
	c.must(&us, "blockchain.scripthash.listunspent", sh.String())
	var pool []historyItem
	c.must(&pool, "blockchain.scripthash.get_mempool", sh.String())
	var got, mem []string
	for _, u := range us {
		got = append(got, u.TxHash[:8])
	}
	for _, e := range pool {
		mem = append(mem, e.TxHash[:8])
	}
	for i := 1; i < len(us); i++ {
		if us[i-1].TxHash > us[i].TxHash {
			t.Fatalf("listunspent's unconfirmed outputs in the order %v, not by txid; get_mempool (by txid) lists %v",
				got, mem)
		}
	}
}

// TestStatusesSentWhenTipEventNeverComes: a status read at an index tip no
// tip event announced (the node failed to read that block's header) is read
// again for a while, then sent as read: the notifier neither spins nor holds
// it back for good.
func TestStatusesSentWhenTipEventNeverComes(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	var st *string
	c.must(&st, "blockchain.scripthash.subscribe", fx.shA.String())
	fx.mineAndNotify(fx.b) // a tip event: the notifier's settled tip
	c.drain(fx.s)
	// A block paying A whose tip event is never queued.
	_, _, touched := fx.f.mine(fx.a)
	fx.s.NotifyScriptHashes(touched)
	note := c.note()
	if sh, got := statusOf(t, note); sh != fx.shA.String() || equalStatus(got, st) {
		t.Fatalf("notified %s %s, want A's new status", sh, showStatus(got))
	}
}

// TestStatusesSentWithTipsOutOfOrder: tip events queued out of order (an
// older tip after a newer one: the settled tip is not the index's) delay a
// mempool notification by the bounded wait, never for good.
func TestStatusesSentWithTipsOutOfOrder(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	if _, rerr := c.call("blockchain.scripthash.subscribe", fx.shC.String()); rerr != nil {
		t.Fatal(rerr)
	}
	prev, ph := fx.f.tip()
	hdr, h, _ := fx.f.mine(p2wpkh(0xdd))
	fx.s.NotifyTip(hdr, h)
	fx.s.NotifyTip(prev, ph)
	c.drain(fx.s)
	tx := spend([]wire.OutPoint{{Hash: fx.tx3.TxHash(), Index: 0}}, wire.NewTxOut(4_9997_0000, fx.c))
	if err := fx.f.Broadcast(tx); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool(fx.f.txScriptsLocked(tx))
	if sh, _ := statusOf(t, c.note()); sh != fx.shC.String() {
		t.Fatalf("notified %s, want %s", sh, fx.shC)
	}
}

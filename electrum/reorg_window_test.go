package electrum

// Confirmed and unconfirmed data around block boundaries and
// reorganizations: never both, never neither.

import (
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

type reviewBalance struct {
	Confirmed   int64 `json:"confirmed"`
	Unconfirmed int64 `json:"unconfirmed"`
}

// TestReorgWindowBalanceAndUnspentCountTwice: while the chain has left a
// block holding T that the index has yet to undo, btcd's pool holds T
// again; the balance and the unspent outputs count T once, confirmed, as
// the history does.
func TestReorgWindowBalanceAndUnspentCountTwice(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	payTo := p2wpkh(0x71)
	payee := indexers.ScriptHashFromScript(payTo)
	value := coin.Value - 10_000
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(value, payTo))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))

	parent := n.mine(nil)
	n.hold()
	a := n.process(parent, time.Second, tx)
	<-n.held // the index committed a (holding T) and waits
	b1 := n.process(parent, 2*time.Second)
	n.process(b1, time.Second) // the chain reorganizes onto b1, b2; T returns to the pool
	if h := tx.TxHash(); !n.pool.IsTransactionInPool(&h) {
		t.Fatal("btcd's pool did not take T back")
	}
	if tip, _ := n.idx.LatestTip(); tip.Hash != *a.Hash() {
		t.Fatalf("index tip %v, want a", tip.Hash)
	}

	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", payee.String())
	if len(hist) != 1 || hist[0].TxHash != txid || hist[0].Height != a.Height() {
		t.Fatalf("get_history %+v, want T once at %d", hist, a.Height())
	}
	var bal reviewBalance
	c.must(&bal, "blockchain.scripthash.get_balance", payee.String())
	var us []unspentItem
	c.must(&us, "blockchain.scripthash.listunspent", payee.String())
	if bal.Confirmed+bal.Unconfirmed != value {
		t.Errorf("get_balance %+v: T's %d counted twice (history lists T once, confirmed at %d)", bal, value, a.Height())
	}
	if len(us) != 1 {
		t.Errorf("listunspent %+v: T's one output listed %d times", us, len(us))
	}
}

// TestReorgWindowNewBranchTxUnfetchable: a transaction of the new branch,
// at the index tip's height, that the index has yet to take is listed as
// unconfirmed and can be fetched.
func TestReorgWindowNewBranchTxUnfetchable(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	payTo := p2wpkh(0x72)
	payee := indexers.ScriptHashFromScript(payTo)
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, payTo))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))

	parent := n.mine(nil)
	n.hold()
	n.process(parent, time.Second) // a, without X
	<-n.held
	b1 := n.process(parent, 2*time.Second, tx)
	n.process(b1, time.Second) // reorganized onto b1 (X), b2
	if h := tx.TxHash(); n.pool.IsTransactionInPool(&h) {
		t.Fatal("btcd's pool still holds X")
	}
	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", payee.String())
	listed := false
	for _, e := range hist {
		listed = listed || e.TxHash == txid
	}
	if !listed {
		t.Fatalf("get_history %+v does not list X (expected it listed unconfirmed)", hist)
	}
	if _, rerr := c.call("blockchain.transaction.get", txid); rerr != nil {
		t.Fatalf("get_history lists X %+v, but transaction.get(X) fails: %v", hist, rerr)
	}
}

// TestChildAtMinusOneBesideConfirmedParent: a child mined a block ahead of
// the index, whose parent the index holds confirmed, has height 0.
func TestChildAtMinusOneBesideConfirmedParent(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	target := p2wpkh(0x73)
	sh := indexers.ScriptHashFromScript(target)
	change := &n.h.Pool.Spendable[1]
	coin := n.coin()
	p := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(1_0000_0000, target),
		wire.NewTxOut(coin.Value-1_0000_0000-20_000, change.PkScript))
	ch := testchain.SpendTx([]testchain.Coin{changeCoin(p, 1, change)}, wire.NewTxOut(5000_0000, target),
		wire.NewTxOut(p.TxOut[1].Value-5000_0000-30_000, change.PkScript))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(p))
	c.must(&txid, "blockchain.transaction.broadcast", txHex(ch))

	n.hold()
	bn := n.process(nil, time.Second, p)
	<-n.held // the index committed N; the view is not reconciled yet
	n.process(nil, time.Second, ch)
	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", sh.String())
	got := map[string]int32{}
	for _, e := range hist {
		got[e.TxHash] = e.Height
	}
	pid, cid := p.TxHash().String(), ch.TxHash().String()
	if got[pid] != bn.Height() {
		t.Fatalf("get_history %+v: want P confirmed at %d", hist, bn.Height())
	}
	if h, ok := got[cid]; !ok || h != 0 {
		t.Fatalf("get_history %+v: P confirmed at %d, its child C at height %d (listed: %v); want C at 0",
			hist, bn.Height(), h, ok)
	}
}

// newRealNodeAfter is newRealNode with after called by the index's writer
// after the harness's own commit handling (the mempool view's
// reconciliation), before the writer goes on to its next commit.
func newRealNodeAfter(t testing.TB, after func(indexers.Commit)) *realNode {
	t.Helper()
	n := newRealNode(t, 0, nil)
	n.mu.Lock()
	n.after = after
	n.mu.Unlock()
	return n
}

// TestReorgUndoDropsNewBranchTx: after the index undid the old branch and
// the mempool view was reconciled, a transaction of the new branch the
// index has yet to take stays unconfirmed, not missing. In a
// reorganization the writer publishes its undos with the new branch's
// first commit; here the old tip is invalidated with nothing to connect,
// so the undo is published alone, and the new branch comes while its
// handling waits.
func TestReorgUndoDropsNewBranchTx(t *testing.T) {
	var (
		armed   = make(chan struct{}, 1)
		paused  = make(chan struct{}, 1)
		proceed = make(chan struct{})
	)
	n := newRealNodeAfter(t, func(c indexers.Commit) {
		if !c.All {
			return
		}
		select {
		case <-armed:
			paused <- struct{}{}
			<-proceed
		default:
		}
	})
	t.Cleanup(func() {
		select {
		case <-proceed:
		default:
			close(proceed)
		}
	})
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	payTo := p2wpkh(0x74)
	payee := indexers.ScriptHashFromScript(payTo)
	value := coin.Value - 10_000
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(value, payTo))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))

	parent := n.mine(nil)
	a := n.mine(parent) // a, without X, committed by the index
	n.hold()
	armed <- struct{}{}
	if err := n.h.Chain.InvalidateBlock(a.Hash()); err != nil {
		t.Fatal(err)
	}
	<-n.held // the undo of a is published; its handling waits
	b1 := n.process(parent, 2*time.Second, tx)
	n.process(b1, time.Second)
	n.release()
	<-paused // the view reconciled with b1 and X's block ahead of the index
	tip, _ := n.idx.LatestTip()
	if tip.Hash != *parent.Hash() {
		t.Fatalf("index tip %d, want the fork point %d", tip.Height, parent.Height())
	}
	var hist, pool []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", payee.String())
	c.must(&pool, "blockchain.scripthash.get_mempool", payee.String())
	var bal reviewBalance
	c.must(&bal, "blockchain.scripthash.get_balance", payee.String())
	if len(hist) == 0 && len(pool) == 0 {
		t.Fatalf("X (mined in b1 above the index tip, dropped from btcd's pool) is missing from both: "+
			"history %+v, mempool %+v, balance %+v; want X unconfirmed (height 0), as before the undo", hist, pool, bal)
	}
}

// TestNextBlockAfterCommitDropsTx: after the index committed block N and
// the view was reconciled, a transaction mined in N+1 stays unconfirmed
// until the index commits N+1.
func TestNextBlockAfterCommitDropsTx(t *testing.T) {
	var (
		armed   = make(chan struct{}, 1)
		paused  = make(chan struct{}, 1)
		proceed = make(chan struct{})
	)
	n := newRealNodeAfter(t, func(c indexers.Commit) {
		select {
		case <-armed:
			// N is committed; the chain connects N+1 (with X) before the
			// view is reconciled, as in a node receiving two blocks.
			paused <- struct{}{}
			<-proceed
		default:
		}
	})
	t.Cleanup(func() {
		select {
		case <-proceed:
		default:
			close(proceed)
		}
	})
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	payTo := p2wpkh(0x75)
	payee := indexers.ScriptHashFromScript(payTo)
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, payTo))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))

	// Hold the writer in N's commit callback before the reconciliation
	// (the harness's gate), connect N+1 with X, then let the
	// reconciliation run and stop the writer right after it.
	n.hold()
	armed <- struct{}{}
	bn := n.process(nil, time.Second)
	<-n.held
	n.process(nil, time.Second, tx)
	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", payee.String())
	if len(hist) != 1 || hist[0].TxHash != txid || hist[0].Height != 0 {
		t.Fatalf("before the reconciliation: history %+v, want X at 0", hist)
	}
	n.release()
	<-paused
	if tip, _ := n.idx.LatestTip(); tip.Hash != *bn.Hash() {
		t.Fatalf("index tip %d, want N %d", tip.Height, bn.Height())
	}
	var pool []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", payee.String())
	c.must(&pool, "blockchain.scripthash.get_mempool", payee.String())
	if len(hist) == 0 && len(pool) == 0 {
		t.Fatalf("after N's reconciliation, X (mined in N+1, not yet indexed) is missing from history and mempool; " +
			"it was listed at height 0 a moment before")
	}
}

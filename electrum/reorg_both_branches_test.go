package electrum

import (
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestReorgBothBranchesTxCountedTwice: T is mined in a (committed by
// the index) and again in b1 of the branch the chain reorganizes onto. While
// the index still holds a, T is confirmed in the index's history; it must
// not also be listed unconfirmed (it is in "ahead").
func TestReorgBothBranchesTxCountedTwice(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	payTo := p2wpkh(0x81)
	payee := indexers.ScriptHashFromScript(payTo)
	value := coin.Value - 10_000
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(value, payTo))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))

	parent := n.mine(nil)
	n.hold()
	a := n.process(parent, time.Second, tx)
	<-n.held // the index committed a (holding T) and waits
	b1 := n.process(parent, 2*time.Second, tx)
	n.process(b1, time.Second) // reorganized onto b1 (T again), b2
	if tip, _ := n.idx.LatestTip(); tip.Hash != *a.Hash() {
		t.Fatalf("index tip %v, want a", tip.Hash)
	}
	var hist, pool []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", payee.String())
	c.must(&pool, "blockchain.scripthash.get_mempool", payee.String())
	var bal reviewBalance
	c.must(&bal, "blockchain.scripthash.get_balance", payee.String())
	var us []unspentItem
	c.must(&us, "blockchain.scripthash.listunspent", payee.String())
	if len(hist) != 1 || bal.Confirmed+bal.Unconfirmed != value || len(us) != 1 || len(pool) != 0 {
		t.Fatalf("T counted twice: history %+v, mempool %+v, balance %+v (want total %d), listunspent %+v",
			hist, pool, bal, value, us)
	}
}

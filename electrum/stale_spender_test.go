package electrum

import (
	"bytes"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

func hashOf(tx *wire.MsgTx) *chainhash.Hash { h := tx.TxHash(); return &h }

// TestListUnspentAfterBlockEvictsSpender: X (in btcd's pool) pays S; D
// spends X:0 and a confirmed coin c2. A block confirms D', another spend of
// c2: btcd's pool drops D (RemoveDoubleSpends) and keeps X, so X:0 is an
// unspent output of S. Until the index commits that block the view still
// holds D, which no longer counts: listunspent lists X:0, as get_balance
// counts it and get_mempool shows no spender.
func TestListUnspentAfterBlockEvictsSpender(t *testing.T) {
	n := newRealNode(t, 0, nil)
	spendS := testchain.NewSpendableScript(testchain.KindP2WSH, 55_501)
	sh := indexers.ScriptHashFromScript(spendS.PkScript)
	other := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{0x5b}, 20)...)
	c1, c2 := n.coin(), n.coin()

	x := testchain.SpendTx([]testchain.Coin{c1}, wire.NewTxOut(c1.Value-20_000, spendS.PkScript))
	d := testchain.SpendTx([]testchain.Coin{changeCoin(x, 0, &spendS), c2}, wire.NewTxOut(x.TxOut[0].Value+c2.Value-40_000, other))
	dPrime := testchain.SpendTx([]testchain.Coin{c2}, wire.NewTxOut(c2.Value-30_000, other))

	c := dial(t, n.addr)
	c.negotiate("1.4")
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(x))
	c.must(&txid, "blockchain.transaction.broadcast", txHex(d))

	n.hold()
	n.process(nil, time.Second) // N: committed, the writer then held
	select {
	case <-n.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the index writer never reached the held commit")
	}
	n.process(nil, time.Second, dPrime) // N+1 confirms D'; btcd's pool drops D
	if n.pool.IsTransactionInPool(hashOf(d)) || !n.pool.IsTransactionInPool(hashOf(x)) {
		t.Fatal("precondition: btcd's pool dropped D and kept X")
	}

	var bal map[string]int64
	c.must(&bal, "blockchain.scripthash.get_balance", sh.String())
	var mem []historyItem
	c.must(&mem, "blockchain.scripthash.get_mempool", sh.String())
	var utxos []unspentItem
	c.must(&utxos, "blockchain.scripthash.listunspent", sh.String())
	listed := false
	for _, u := range utxos {
		if u.TxHash == x.TxHash().String() && u.TxPos == 0 {
			listed = true
		}
	}
	if !listed {
		t.Fatalf("X:0 is unspent in btcd's pool (get_balance unconfirmed %d, get_mempool %d entries), "+
			"but listunspent %+v leaves it out", bal["unconfirmed"], len(mem), utxos)
	}
}

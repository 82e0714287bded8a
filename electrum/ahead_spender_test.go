package electrum

import (
	"bytes"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestListUnspentLeavesOutOutputSpentAhead: X (in btcd's pool) pays S
// and D (in the pool) spends X:0. Block N+1 confirms X together with D',
// another spend of X:0: btcd's pool drops X (mined) and D (double spend).
// Until the index commits N+1, X counts as unconfirmed (it is mined in a
// block the index has not committed), and so does D', which spends X:0:
// X:0 is spent in the chain's tip block. listunspent does not offer it as
// unspent (a wallet spending it would be refused), although the view's
// spender, D, no longer counts.
func TestListUnspentLeavesOutOutputSpentAhead(t *testing.T) {
	n := newRealNode(t, 0, nil)
	spendS := testchain.NewSpendableScript(testchain.KindP2WSH, 55_502)
	sh := indexers.ScriptHashFromScript(spendS.PkScript)
	other := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{0x5c}, 20)...)
	other2 := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{0x5d}, 20)...)
	c1 := n.coin()

	x := testchain.SpendTx([]testchain.Coin{c1}, wire.NewTxOut(c1.Value-20_000, spendS.PkScript))
	d := testchain.SpendTx([]testchain.Coin{changeCoin(x, 0, &spendS)}, wire.NewTxOut(x.TxOut[0].Value-20_000, other))
	dPrime := testchain.SpendTx([]testchain.Coin{changeCoin(x, 0, &spendS)}, wire.NewTxOut(x.TxOut[0].Value-30_000, other2))

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
	n.process(nil, time.Second, x, dPrime) // N+1 confirms X and D'
	if n.pool.IsTransactionInPool(hashOf(d)) || n.pool.IsTransactionInPool(hashOf(x)) {
		t.Fatal("precondition: btcd's pool dropped X and D")
	}
	if !n.backend.MinedAhead(dPrime.TxHash()) || !n.backend.unconfirmed(hashOf(dPrime)) {
		t.Fatal("precondition: D' counts as unconfirmed (mined ahead of the index)")
	}

	var utxos []unspentItem
	c.must(&utxos, "blockchain.scripthash.listunspent", sh.String())
	for _, u := range utxos {
		if u.TxHash == x.TxHash().String() && u.TxPos == 0 {
			t.Fatalf("listunspent %+v offers X:0, which D' (mined in the chain's tip block %d, "+
				"counting as unconfirmed) spends", utxos, n.h.Chain.BestSnapshot().Height)
		}
	}
}

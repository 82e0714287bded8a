package esplora

import (
	"net/http"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestUtxoAfterBlockEvictsSpender: X (in btcd's pool) pays S; D spends
// X:0 and a confirmed coin c2. A block confirms D', another spend of c2:
// btcd's pool drops D and keeps X. Until the index commits that block the
// view still holds D, which no longer counts: /scripthash/S/utxo lists X:0,
// as /tx/X/outspend/0 answers it unspent and txs/mempool lists X alone.
func TestUtxoAfterBlockEvictsSpender(t *testing.T) {
	hn := newHeldNode(t)
	s := testchain.NewSpendableScript(testchain.KindP2WSH, 55_502)
	other := p2wpkhScript(0x5c)
	c1, c2 := hn.coin(), hn.coin()
	x := testchain.SpendTx([]testchain.Coin{c1}, wire.NewTxOut(c1.Value-20_000, s.PkScript))
	xc := testchain.Coin{OutPoint: wire.OutPoint{Hash: x.TxHash(), Index: 0}, Value: x.TxOut[0].Value, Script: &s}
	d := testchain.SpendTx([]testchain.Coin{xc, c2}, wire.NewTxOut(xc.Value+c2.Value-40_000, other))
	dPrime := testchain.SpendTx([]testchain.Coin{c2}, wire.NewTxOut(c2.Value-30_000, other))
	for _, tx := range []*wire.MsgTx{x, d} {
		if code, body := hn.post("/tx", txHex(tx)); code != http.StatusOK {
			t.Fatalf("POST /tx: %d %s", code, body)
		}
	}

	hn.hold()
	nb := hn.process(hn.tipBlock(), time.Second)
	select {
	case <-hn.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the index writer never reached the held commit")
	}
	hn.process(nb, time.Second, dPrime) // btcd's pool drops D, keeps X
	dh, xh := d.TxHash(), x.TxHash()
	if hn.pool.IsTransactionInPool(&dh) || !hn.pool.IsTransactionInPool(&xh) {
		t.Fatal("precondition: btcd's pool dropped D and kept X")
	}

	var sp spendValue
	hn.getJSON("/tx/"+xh.String()+"/outspend/0", &sp)
	var mem []txValue
	hn.getJSON("/scripthash/"+esploraHash(s.PkScript)+"/txs/mempool", &mem)
	var utxos []utxoValue
	hn.getJSON("/scripthash/"+esploraHash(s.PkScript)+"/utxo", &utxos)
	listed := false
	for _, u := range utxos {
		if u.TxID == xh.String() && u.Vout == 0 {
			listed = true
		}
	}
	if !listed {
		t.Fatalf("X:0 is unspent (btcd's pool; /tx/X/outspend/0 spent=%v; txs/mempool %d txs), "+
			"but /utxo %+v leaves it out", sp.Spent, len(mem), utxos)
	}
}

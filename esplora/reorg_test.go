package esplora

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestReorganization confirms a payment, reads everything about it (so the
// kept stats and histories describe the block holding it), then replaces
// that block with a longer branch without it: every answer follows the new
// chain, the payment is unconfirmed again, and it confirms in a later block.
func TestReorganization(t *testing.T) {
	defer func(h int) { historyCacheMin = h }(historyCacheMin)
	historyCacheMin = 1
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 55_555)
	sh := indexers.ScriptHashFromScript(script.PkScript)
	esh := hex.EncodeToString(sh[:])
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: 40_000_000, PkScript: script.PkScript},
		&wire.TxOut{Value: coin.Value - 40_000_000 - 1500, PkScript: script.PkScript})
	txid := tx.TxHash().String()
	if code, body := n.post("/tx", txHex(tx)); code != http.StatusOK {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	best := n.h.Chain.BestSnapshot()
	parent, err := n.h.Chain.BlockByHash(&best.Hash)
	if err != nil {
		t.Fatal(err)
	}
	parent.SetHeight(best.Height)
	a := n.mineMempool()

	type view struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	var v view
	n.getJSON("/scripthash/"+esh, &v)
	if v.ChainStats.TxCount != 1 || v.ChainStats.FundedTxoCount != 2 || v.MempoolStats.TxCount != 0 {
		t.Fatalf("stats once confirmed: %+v", v)
	}
	var page []txValue
	n.getJSON("/scripthash/"+esh+"/txs/chain", &page)
	if len(page) != 1 || !page[0].Status.Confirmed || page[0].Status.BlockHash != a.Hash().String() {
		t.Fatalf("txs/chain once confirmed: %+v", page)
	}

	// A longer branch from the parent, without the payment.
	b1 := n.mineOn(parent)
	b2 := n.mineOn(b1)
	if tip := n.h.Chain.BestSnapshot(); tip.Hash != *b2.Hash() {
		t.Fatalf("the branch did not become the chain: tip %v", tip.Hash)
	}
	if got := n.getText("/blocks/tip/hash"); got != b2.Hash().String() {
		t.Fatalf("tip hash %s, chain %s", got, b2.Hash())
	}
	if got := n.getText("/blocks/tip/height"); got != strconv.Itoa(int(best.Height+2)) {
		t.Fatalf("tip height %s", got)
	}
	if got := n.getText("/block/" + a.Hash().String() + "/status"); got != `{"in_best_chain":false,"height":null,"next_best":null}` {
		t.Fatalf("status of the replaced block: %s", got)
	}
	if code, _ := n.get("/block/" + a.Hash().String()); code != http.StatusNotFound {
		t.Fatalf("the replaced block: %d", code)
	}
	if got := n.getText("/block-height/" + strconv.Itoa(int(best.Height+1))); got != b1.Hash().String() {
		t.Fatalf("block-height after the reorganization: %s", got)
	}
	if got := n.getText("/tx/" + txid + "/status"); got != `{"confirmed":false}` {
		t.Fatalf("status of the payment: %s", got)
	}
	n.getJSON("/scripthash/"+esh, &v)
	if v.ChainStats != (scriptStats{}) || v.MempoolStats.TxCount != 1 || v.MempoolStats.FundedTxoSum != coin.Value-1500 {
		t.Fatalf("stats after the reorganization: %+v", v)
	}
	n.getJSON("/scripthash/"+esh+"/txs/chain", &page)
	if len(page) != 0 {
		t.Fatalf("txs/chain after the reorganization: %+v", page)
	}
	var utxos []utxoValue
	n.getJSON("/scripthash/"+esh+"/utxo", &utxos)
	if len(utxos) != 2 || utxos[0].Status.Confirmed || utxos[1].Status.Confirmed {
		t.Fatalf("utxo after the reorganization: %+v", utxos)
	}

	// Mined again, in the new branch.
	c := n.mineMempool()
	n.getJSON("/scripthash/"+esh, &v)
	if v.ChainStats.TxCount != 1 || v.ChainStats.FundedTxoCount != 2 || v.ChainStats.FundedTxoSum != coin.Value-1500 ||
		v.MempoolStats.TxCount != 0 {
		t.Fatalf("stats once mined again: %+v", v)
	}
	n.getJSON("/scripthash/"+esh+"/txs/chain", &page)
	if len(page) != 1 || page[0].Status.BlockHash != c.Hash().String() || *page[0].Status.BlockHeight != best.Height+3 {
		t.Fatalf("txs/chain once mined again: %+v", page)
	}
}

package esplora

import (
	"net/http"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestBlockstreamPagingSurvivesReplacedCursor: BDK's loop over
// esplora-client's scripthash_txs (GET /scripthash/:h/txs, then while a
// page holds 25 or more, /txs/chain/<last txid of the previous page>) on
// a script with a confirmed history and 55 unconfirmed transactions. The
// first page holds the 50 unconfirmed ones, so BDK's cursor is an
// unconfirmed txid; that transaction is replaced (BIP 125) before the next
// request. /txs/chain/<its txid> still answers the first confirmed page, so
// the wallet's scan sees the script's confirmed history.
func TestBlockstreamPagingSurvivesReplacedCursor(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 92_001)
	coin := n.coin()
	const fan = 55
	const each = 1_000_000
	outs := make([]*wire.TxOut, 0, fan+1)
	for i := 0; i < fan; i++ {
		outs = append(outs, &wire.TxOut{Value: each, PkScript: script.PkScript})
	}
	outs = append(outs, &wire.TxOut{Value: coin.Value - fan*each - 20_000, PkScript: p2wpkhScript(0xe3)})
	f := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	if code, body := n.post("/tx", txHex(f)); code != http.StatusOK {
		t.Fatalf("POST fan-out: %d %s", code, body)
	}
	n.mineMempool() // f confirmed: the script's confirmed history
	spend := func(i int, fee int64) *wire.MsgTx {
		c := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: f.TxHash(), Index: uint32(i)}, Value: each, Script: &script}},
			&wire.TxOut{Value: each - fee, PkScript: p2wpkhScript(0xe4)})
		c.TxIn[0].Sequence = 0xfffffffd // replaceable
		return c
	}
	byTxid := map[chainhash.Hash]int{}
	for i := 0; i < fan; i++ {
		c := spend(i, 1000)
		if code, body := n.post("/tx", txHex(c)); code != http.StatusOK {
			t.Fatalf("POST child %d: %d %s", i, code, body)
		}
		byTxid[c.TxHash()] = i
	}
	esh := esploraHash(script.PkScript)

	seen := map[string]bool{}
	last := ""
	for pages := 0; pages < 20; pages++ {
		path := "/scripthash/" + esh + "/txs"
		if last != "" {
			path += "/chain/" + last
		}
		var page []txValue
		n.getJSON(path, &page)
		for _, v := range page {
			seen[v.TxID] = true
		}
		if len(page) > 0 {
			last = page[len(page)-1].TxID
		}
		if pages == 0 && len(page) > 0 {
			// The wallet's cursor is replaced before its next request.
			h, err := chainhash.NewHashFromStr(last)
			if err != nil {
				t.Fatal(err)
			}
			i, ok := byTxid[*h]
			if !ok {
				continue // a confirmed cursor: nothing to replace
			}
			if code, body := n.post("/tx", txHex(spend(i, 5000))); code != http.StatusOK {
				t.Fatalf("POST replacement: %d %s", code, body)
			}
		}
		if len(page) < 25 {
			break
		}
	}
	if !seen[f.TxHash().String()] {
		t.Errorf("BDK's /txs then /txs/chain/:last_seen scan never saw the script's confirmed transaction %s: "+
			"its cursor was the first page's last, unconfirmed, transaction, replaced before the next request, and "+
			"/txs/chain/<a txid no longer anywhere> answers []", f.TxHash())
	}
}

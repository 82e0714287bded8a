package esplora

import (
	"net/http"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestBlockstreamPagingSeesConfirmedWithOver50Unconfirmed: a script with
// a confirmed history and more than 50 unconfirmed transactions, paged as
// BDK's bdk_esplora full_scan/sync pages it through esplora-client's
// scripthash_txs: GET /scripthash/:h/txs, then while a page holds 25 or
// more, GET /scripthash/:h/txs/chain/<last txid of the previous page>.
// The first page ends on an unconfirmed transaction (more follow), and the
// chain page after it is the first confirmed one, so such a wallet sees
// every confirmed transaction of the script.
func TestBlockstreamPagingSeesConfirmedWithOver50Unconfirmed(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 77_777)
	coin := n.coin()
	const fan = 55
	const each = 1_000_000
	outs := make([]*wire.TxOut, 0, fan+1)
	for i := 0; i < fan; i++ {
		outs = append(outs, &wire.TxOut{Value: each, PkScript: script.PkScript})
	}
	outs = append(outs, &wire.TxOut{Value: coin.Value - fan*each - 20_000, PkScript: p2wpkhScript(0xc3)})
	f := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	if code, body := n.post("/tx", txHex(f)); code != http.StatusOK {
		t.Fatalf("POST fan-out: %d %s", code, body)
	}
	n.mineMempool() // f confirmed: the script's confirmed history
	for i := 0; i < fan; i++ {
		c := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: f.TxHash(), Index: uint32(i)}, Value: each, Script: &script}},
			&wire.TxOut{Value: each - 1000, PkScript: p2wpkhScript(0xc4)})
		if code, body := n.post("/tx", txHex(c)); code != http.StatusOK {
			t.Fatalf("POST child %d: %d %s", i, code, body)
		}
	}
	esh := esploraHash(script.PkScript)

	// bdk_esplora's loop over esplora-client's scripthash_txs.
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
		if len(page) < 25 {
			break
		}
	}
	if !seen[f.TxHash().String()] {
		var first []txValue
		n.getJSON("/scripthash/"+esh+"/txs", &first)
		confirmed := 0
		for _, v := range first {
			if v.Status.Confirmed {
				confirmed++
			}
		}
		t.Errorf("a client paging /txs then /txs/chain/:last_seen (BDK, esplora-client) never saw the script's confirmed "+
			"transaction %s: /txs held %d transactions, %d confirmed (Blockstream: up to 50 mempool plus the first 25 confirmed), "+
			"and /txs/chain/<an unconfirmed txid> answers nothing", f.TxHash(), len(first), confirmed)
	}
}

package esplora

import (
	"net/http"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestAfterTxidPagingReachesUnconfirmedPast50: a script with a confirmed
// history and more than 50 unconfirmed transactions. A client that pages
// /address/:addr/txs with ?after_txid=<last txid of the page> (mempool.js's
// getAddressTxs, esplora-client's) sees every transaction of the script
// once: a page ends on an unconfirmed transaction while more follow, so
// paging after it does not jump to the confirmed ones.
func TestAfterTxidPagingReachesUnconfirmedPast50(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 55_555)
	coin := n.coin()
	const fan = 55
	const each = 1_000_000
	outs := make([]*wire.TxOut, 0, fan+1)
	for i := 0; i < fan; i++ {
		outs = append(outs, &wire.TxOut{Value: each, PkScript: script.PkScript})
	}
	outs = append(outs, &wire.TxOut{Value: coin.Value - fan*each - 20_000, PkScript: p2wpkhScript(0xb3)})
	f := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	if code, body := n.post("/tx", txHex(f)); code != http.StatusOK {
		t.Fatalf("POST fan-out: %d %s", code, body)
	}
	n.mineMempool() // f confirmed: the script's confirmed history
	for i := 0; i < fan; i++ {
		c := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: f.TxHash(), Index: uint32(i)}, Value: each, Script: &script}},
			&wire.TxOut{Value: each - 1000, PkScript: p2wpkhScript(0xb4)})
		if code, body := n.post("/tx", txHex(c)); code != http.StatusOK {
			t.Fatalf("POST child %d: %d %s", i, code, body)
		}
	}
	esh := esploraHash(script.PkScript)
	var stats struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	n.getJSON("/scripthash/"+esh, &stats)
	total := stats.ChainStats.TxCount + stats.MempoolStats.TxCount
	if stats.ChainStats.TxCount != 1 || stats.MempoolStats.TxCount != fan {
		t.Fatalf("precondition: stats %+v", stats)
	}

	seen := map[string]bool{}
	var all []string
	after := ""
	for pages := 0; pages < 20; pages++ {
		path := "/scripthash/" + esh + "/txs"
		if after != "" {
			path += "?after_txid=" + after
		}
		var page []txValue
		n.getJSON(path, &page)
		if len(page) == 0 {
			break
		}
		for _, v := range page {
			if seen[v.TxID] {
				t.Fatalf("%s served twice while paging", v.TxID)
			}
			seen[v.TxID] = true
			all = append(all, v.TxID)
		}
		after = page[len(page)-1].TxID
	}
	if len(all) != total {
		t.Errorf("paging /scripthash/:hash/txs with ?after_txid= served %d of the script's %d transactions (chain %d, mempool %d); %d never served",
			len(all), total, stats.ChainStats.TxCount, stats.MempoolStats.TxCount, total-len(all))
	}
}

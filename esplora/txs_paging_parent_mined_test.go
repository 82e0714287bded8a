package esplora

import (
	"net/http"
	"sort"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestAfterTxidPagingKeepsTxWhoseParentIsMined: mempool.js's
// getAddressTxs paging (?after_txid=<last txid of the page>) on a script
// with more than 50 unconfirmed transactions. One of them, C, spends an
// unconfirmed parent P of another script. Between the first and the second
// page a block mines P (only P): C is still unconfirmed the whole time, and
// some page holds it, since its place in the order does not depend on its
// parent (in the Electrum protocol's order it would move from the end,
// after the first page's last txid, to before it).
func TestAfterTxidPagingKeepsTxWhoseParentIsMined(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 91_001)
	other := testchain.NewSpendableScript(testchain.KindP2WSH, 91_002)
	coin := n.coin()
	const fan = 55
	const each = 1_000_000
	outs := make([]*wire.TxOut, 0, fan+1)
	for i := 0; i < fan; i++ {
		outs = append(outs, &wire.TxOut{Value: each, PkScript: script.PkScript})
	}
	outs = append(outs, &wire.TxOut{Value: coin.Value - fan*each - 20_000, PkScript: p2wpkhScript(0xd3)})
	f := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	if code, body := n.post("/tx", txHex(f)); code != http.StatusOK {
		t.Fatalf("POST fan-out: %d %s", code, body)
	}
	n.mineMempool() // f confirmed
	var children []chainhash.Hash
	for i := 0; i < fan; i++ {
		c := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: f.TxHash(), Index: uint32(i)}, Value: each, Script: &script}},
			&wire.TxOut{Value: each - 1000, PkScript: p2wpkhScript(0xd4)})
		if code, body := n.post("/tx", txHex(c)); code != http.StatusOK {
			t.Fatalf("POST child %d: %d %s", i, code, body)
		}
		children = append(children, c.TxHash())
	}
	// The 50th of the children by txid: C is made to sort before it.
	sort.Slice(children, func(i, j int) bool { return indexers.DisplayLess(&children[i], &children[j]) })
	cursor := children[49]

	// P pays another script; C spends P and pays the script.
	coin2 := n.coin()
	p := testchain.SpendTx([]testchain.Coin{coin2}, &wire.TxOut{Value: coin2.Value - 20_000, PkScript: other.PkScript})
	if code, body := n.post("/tx", txHex(p)); code != http.StatusOK {
		t.Fatalf("POST parent: %d %s", code, body)
	}
	var c *wire.MsgTx
	for v := int64(0); ; v++ {
		c = testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: p.TxHash(), Index: 0}, Value: coin2.Value - 20_000, Script: &other}},
			&wire.TxOut{Value: coin2.Value - 40_000 - v, PkScript: script.PkScript})
		h := c.TxHash()
		if indexers.DisplayLess(&h, &cursor) {
			break
		}
	}
	if code, body := n.post("/tx", txHex(c)); code != http.StatusOK {
		t.Fatalf("POST C: %d %s", code, body)
	}
	esh := esploraHash(script.PkScript)

	seen := map[string]bool{}
	var first []txValue
	n.getJSON("/scripthash/"+esh+"/txs", &first)
	if len(first) != 50 {
		t.Fatalf("precondition: first page of %d, want the 50 unconfirmed", len(first))
	}
	for _, v := range first {
		seen[v.TxID] = true
	}

	// A block mines P alone; C stays unconfirmed.
	n.mine(p)
	if _, ok := n.pool.FetchTransaction(ptr(c.TxHash())); ok != nil {
		t.Fatalf("precondition: C left the pool: %v", ok)
	}

	var mem []txValue
	n.getJSON("/scripthash/"+esh+"/txs/mempool", &mem)
	inMem := false
	for _, v := range mem {
		inMem = inMem || v.TxID == c.TxHash().String()
	}
	if !inMem {
		t.Fatal("precondition: C not among /txs/mempool after P was mined")
	}

	after := first[49].TxID
	for pages := 0; pages < 20; pages++ {
		var page []txValue
		n.getJSON("/scripthash/"+esh+"/txs?after_txid="+after, &page)
		if len(page) == 0 {
			break
		}
		for _, v := range page {
			if seen[v.TxID] {
				t.Fatalf("%s served twice while paging", v.TxID)
			}
			seen[v.TxID] = true
		}
		after = page[len(page)-1].TxID
	}
	if !seen[c.TxHash().String()] {
		t.Errorf("paging /scripthash/:hash/txs?after_txid= never served %v, unconfirmed the whole time: once its parent "+
			"was mined it moved before the first page's last txid", c.TxHash())
	}
}

func ptr(h chainhash.Hash) *chainhash.Hash { return &h }

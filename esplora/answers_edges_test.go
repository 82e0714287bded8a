// Answers that depend on the chain's depth and on script forms.

package esplora

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestStatsAfterNewBlockCountTipBlockOnce: a script's stats read at tip H
// (paid in H) are cached; after block H+1 (paying it again) only H+1 is
// read on top of them. The outputs of H must not be counted a second time:
// the stats are the Electrum balance's.
func TestStatsAfterNewBlockCountTipBlockOnce(t *testing.T) {
	n := newTestNode(t, "")
	el := n.dialElectrum()
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 61_061)
	pay := func(value int64) {
		coin := n.coin()
		n.mine(testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: value, PkScript: script.PkScript},
			&wire.TxOut{Value: coin.Value - value - 1000, PkScript: testchain.NewSpendableScript(testchain.KindP2WSH, 61_062).PkScript}))
	}
	type stats struct {
		ChainStats scriptStats `json:"chain_stats"`
	}
	path := "/scripthash/" + esploraHash(script.PkScript)
	pay(10_000) // block H
	var v stats
	n.getJSON(path, &v)
	if v.ChainStats.FundedTxoCount != 1 || v.ChainStats.FundedTxoSum != 10_000 {
		t.Fatalf("precondition: stats at H %+v", v.ChainStats)
	}
	pay(20_000) // block H+1
	n.getJSON(path, &v)
	var balance struct {
		Confirmed int64 `json:"confirmed"`
	}
	el.call(t, "blockchain.scripthash.get_balance", []any{indexers.ScriptHashFromScript(script.PkScript).String()}, &balance)
	want := scriptStats{FundedTxoCount: 2, FundedTxoSum: 30_000, TxCount: 2}
	if v.ChainStats != want || balance.Confirmed != 30_000 {
		t.Fatalf("stats after block H+1: %+v, want %+v (Electrum confirmed balance %d)", v.ChainStats, want, balance.Confirmed)
	}
}

// TestTaprootInnerWitnessScript: for a taproot script-path spend,
// inner_witnessscript_asm is the script, second from last in the witness,
// or third from last when the last item is an annex (starts with 0x50),
// as rust-bitcoin's Witness::tapscript (BIP 341) finds it; a key-path spend
// (one item) has none.
func TestTaprootInnerWitnessScript(t *testing.T) {
	p2tr := witnessScript(1, bytes.Repeat([]byte{0x11}, 32))
	sig := bytes.Repeat([]byte{0x22}, 64)
	script := []byte{0x20, 0x33, 0xac} // a script distinct from the other items
	control := append([]byte{0xc0}, bytes.Repeat([]byte{0x44}, 32)...)
	annex := []byte{0x50, 0x01}
	for _, c := range []struct {
		name    string
		witness wire.TxWitness
		want    []byte
	}{
		{"script path", wire.TxWitness{sig, script, control}, script},
		{"script path with annex", wire.TxWitness{sig, script, control, annex}, script},
		{"key path", wire.TxWitness{sig}, nil},
	} {
		in := &wire.TxIn{Witness: c.witness}
		_, got, _, has := innerScripts(in, p2tr)
		if has != (c.want != nil) || !bytes.Equal(got, c.want) {
			t.Errorf("%s: inner witness script %x (%v), want %x", c.name, got, has, c.want)
		}
	}
}

// TestCacheLifetimeByDepth: electrs' ttl_by_depth gives an answer about a
// block buried CONF_FINAL (10) blocks deep, tip - height >= 10, the long
// lifetime (TTL_LONG, 157784630 s) and any shallower one the short (10 s).
// /tx/:txid/outspend/:vout takes the spender's block. Caching proxies and
// browsers keep an answer that long: a block 9 deep cached for five years
// would outlive a reorganization.
func TestCacheLifetimeByDepth(t *testing.T) {
	n := newTestNode(t, "")
	tip := n.h.Chain.BestSnapshot().Height
	maxAge := func(path string) string {
		t.Helper()
		resp, err := n.http.Get(n.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return resp.Header.Get("Cache-Control")
	}
	long, short := fmt.Sprintf("public, max-age=%d", ttlLong), fmt.Sprintf("public, max-age=%d", ttlShort)
	for _, c := range []struct {
		depth int32
		want  string
	}{{confFinal + 1, long}, {confFinal, long}, {confFinal - 1, short}, {0, short}} {
		h := tip - c.depth
		block, err := n.h.Chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		hash := block.Hash().String()
		txid := block.Transactions()[0].Hash().String()
		if len(block.Transactions()) < 2 {
			t.Fatalf("precondition: block %d has no transaction spending an output", h)
		}
		// An output the block's second transaction spends: its outspend
		// is about this block.
		spent := block.Transactions()[1].MsgTx().TxIn[0].PreviousOutPoint
		for _, path := range []string{
			fmt.Sprintf("/tx/%s/outspend/%d", spent.Hash, spent.Index),
			fmt.Sprintf("/block-height/%d", h),
			"/block/" + hash + "/status",
			"/tx/" + txid,
			"/tx/" + txid + "/hex",
			"/tx/" + txid + "/status",
			"/tx/" + txid + "/merkle-proof",
		} {
			if got := maxAge(path); got != c.want {
				t.Errorf("GET %s (block %d deep, tip %d): Cache-Control %q, want %q", path, c.depth, tip, got, c.want)
			}
		}
	}
}

package electrum

import (
	"encoding/json"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestListUnspentLimitLeavesOutMempoolSpent: docs/PROTOCOL.md §5 bounds
// listunspent's answer (confirmed outputs less those spent in the
// mempool, then the unconfirmed ones) at (MaxSend − 100) / 120 entries.
// A script with limit+1 confirmed outputs, one of them spent by a mempool
// transaction, has an answer of exactly limit entries: it must be
// answered (ElectrumX answers it too: its listunspent has no count bound,
// only MaxSend, which these entries fit).
func TestListUnspentLimitLeavesOutMempoolSpent(t *testing.T) {
	n := newRealNode(t, 0, func(c *Config) { c.MaxSend = 350_000 })
	limit := n.srv.cfg.unspentLimit()
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	own := testchain.NewSpendableScript(testchain.KindP2WSH, 987_654)
	sh := indexers.ScriptHashFromScript(own.PkScript)
	const each = 20_000
	outs := make([]*wire.TxOut, limit+1)
	for i := range outs {
		outs[i] = &wire.TxOut{Value: each, PkScript: own.PkScript}
	}
	fan := testchain.SpendTx([]testchain.Coin{coin}, append(outs,
		&wire.TxOut{Value: coin.Value - int64(limit+1)*each - 100_000, PkScript: p2wpkh(0x55)})...)
	n.mine(nil, fan)

	var us []unspentItem
	if _, rerr := c.call("blockchain.scripthash.listunspent", sh.String()); rerr == nil {
		t.Fatalf("%d confirmed outputs answered over the limit %d", limit+1, limit)
	}
	// A mempool transaction spends one of them elsewhere: the answer is
	// now limit entries.
	sp := testchain.SpendTx([]testchain.Coin{changeCoin(fan, 0, &own)}, wire.NewTxOut(each-5_000, p2wpkh(0x56)))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(sp))
	var bal map[string]int64
	c.must(&bal, "blockchain.scripthash.get_balance", sh.String())
	if bal["confirmed"] != int64(limit+1)*each || bal["unconfirmed"] != -each {
		t.Fatalf("balance %v", bal)
	}
	// The answer expected, encoded as the server encodes it, fits MaxSend.
	all, _, err := n.idx.Unspent(sh, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{'['}
	for i := range all {
		if all[i].TxHash == fan.TxHash() && all[i].Vout == 0 {
			continue
		}
		if len(want) > 1 {
			want = append(want, ',')
		}
		want = appendUnspentItem(want, &all[i].TxHash, all[i].Vout, all[i].Height, all[i].Value)
	}
	want = append(want, ']')
	if len(want)+100 > n.srv.cfg.MaxSend {
		t.Fatalf("the expected answer takes %d bytes: over MaxSend", len(want))
	}
	raw, rerr := c.call("blockchain.scripthash.listunspent", sh.String())
	if rerr != nil {
		t.Fatalf("listunspent of %d entries (limit %d, %d bytes of MaxSend %d) refused: %v",
			limit, limit, len(want), n.srv.cfg.MaxSend, rerr)
	}
	if err := json.Unmarshal(raw, &us); err != nil || len(us) != limit {
		t.Fatalf("listunspent: %d entries (%v), want %d", len(us), err, limit)
	}
	if string(raw) != string(want) {
		t.Fatalf("listunspent differs from the index's outputs less the one spent in the mempool")
	}
}

package integration

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestSyncFromBtcd runs the btcd-electrum binary connected over P2P to a
// real btcd v0.26.2 that mines and relays a wallet transaction. The
// Electrum server serves every block's header exactly as btcd has it,
// notifies each new tip, and follows the transaction from btcd's mempool
// into a block: status notifications that match its own get_history, the
// transaction in get_mempool and then confirmed at the right height, and a
// merkle proof that hashes to the header's merkle root. A transaction
// broadcast over Electrum travels the other way, to btcd's mempool and into
// btcd's next block.
func TestSyncFromBtcd(t *testing.T) {
	ctx := testContext(t)
	btcd := StartBtcd(t, BtcdConfig{MatureOutputs: 2})
	ours := StartNode(t, NodeConfig{Binary: true, Args: []string{"--connect=" + btcd.P2PAddress()}})
	ec := ours.Electrum
	tip, err := ec.SubscribeHeaders(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Initial sync: our node reaches btcd's tip and the subscriber hears of
	// it; every header matches btcd's.
	_, height := waitSameTip(t, ctx, btcd.Client, ours.RPC)
	if height != 102 {
		t.Fatalf("btcd's tip is at %d, want 102", height)
	}
	if tip.Height < height {
		if tip, err = ec.NextHeader(ctx, height); err != nil {
			t.Fatal(err)
		}
	}
	if tip.Height != height || tip.Hex != headerHex(t, btcd.Client, height) {
		t.Fatalf("headers tip %d %s, btcd's is %d", tip.Height, tip.Hex, height)
	}
	checkHeaders(t, ctx, ec, btcd.Client, height)

	// Blocks mined one at a time are each notified.
	for i := 0; i < 3; i++ {
		if _, err := btcd.Client.Generate(1); err != nil {
			t.Fatal(err)
		}
		height++
		tip, err := ec.NextHeader(ctx, height)
		if err != nil {
			t.Fatal(err)
		}
		if tip.Height != height || tip.Hex != headerHex(t, btcd.Client, height) {
			t.Fatalf("notified tip %d %s, btcd mined %d %s", tip.Height, tip.Hex, height, headerHex(t, btcd.Client, height))
		}
	}

	// A transaction btcd's wallet sends reaches our mempool over P2P.
	addr, err := btcd.NewAddress()
	if err != nil {
		t.Fatal(err)
	}
	pkScript, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	sh := ScriptHash(pkScript)
	status, err := ec.SubscribeScriptHash(ctx, sh)
	if err != nil {
		t.Fatal(err)
	}
	if status != nil {
		t.Fatalf("fresh address has status %s", *status)
	}
	const value = 50_000_000
	txHash, err := btcd.SendOutputs([]*wire.TxOut{wire.NewTxOut(value, pkScript)}, 10)
	if err != nil {
		t.Fatalf("SendOutputs: %v", err)
	}
	txid := txHash.String()
	status, err = ec.NextStatus(ctx, sh, nil)
	if err != nil {
		t.Fatal(err)
	}
	hist := checkStatus(t, ctx, ec, sh, status)
	if len(hist) != 1 || hist[0].TxHash != txid || hist[0].Height != 0 {
		t.Fatalf("get_history after relay = %+v, want %s at height 0", hist, txid)
	}
	mp, err := ec.GetMempool(ctx, sh)
	if err != nil {
		t.Fatal(err)
	}
	if len(mp) != 1 || mp[0].TxHash != txid || mp[0].Height != 0 || mp[0].Fee == nil || *mp[0].Fee <= 0 {
		t.Fatalf("get_mempool = %+v, want %s with a fee", mp, txid)
	}
	if bal, err := ec.GetBalance(ctx, sh); err != nil || bal != (Balance{Unconfirmed: value}) {
		t.Fatalf("get_balance = %+v, %v; want %d unconfirmed", bal, err, value)
	}

	// btcd mines it; our node follows and the status moves to the block.
	hashes, err := btcd.Client.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	height++
	block, err := btcd.Client.GetBlock(hashes[0])
	if err != nil {
		t.Fatal(err)
	}
	if !containsTx(block, txid) {
		t.Fatalf("btcd did not mine %s", txid)
	}
	status, err = ec.NextStatus(ctx, sh, func(s *string) bool { return s != nil && *s != *Status(hist) })
	if err != nil {
		t.Fatal(err)
	}
	hist = checkStatus(t, ctx, ec, sh, status)
	if len(hist) != 1 || hist[0].TxHash != txid || hist[0].Height != height {
		t.Fatalf("get_history after mining = %+v, want %s at %d", hist, txid, height)
	}
	if mp, err := ec.GetMempool(ctx, sh); err != nil || len(mp) != 0 {
		t.Fatalf("get_mempool after mining = %+v, %v", mp, err)
	}
	utxos, err := ec.ListUnspent(ctx, sh)
	if err != nil || len(utxos) != 1 || utxos[0].TxHash != txid || utxos[0].Height != height || utxos[0].Value != value {
		t.Fatalf("listunspent = %+v, %v", utxos, err)
	}
	checkMerkle(t, ctx, ec, btcd.Client, txid, height)
	if tip, err := ec.NextHeader(ctx, height); err != nil || tip.Hex != headerHex(t, btcd.Client, height) {
		t.Fatalf("tip after mining: %+v, %v", tip, err)
	}
	checkHeaders(t, ctx, ec, btcd.Client, height)

	// The other direction: a transaction broadcast over Electrum reaches
	// btcd's mempool over P2P, and btcd mines it.
	tx2, err := btcd.CreateTransaction([]*wire.TxOut{wire.NewTxOut(value/2, pkScript)}, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	if err := tx2.Serialize(&raw); err != nil {
		t.Fatal(err)
	}
	txid2, err := ec.Broadcast(ctx, hex.EncodeToString(raw.Bytes()))
	if err != nil || txid2 != tx2.TxHash().String() {
		t.Fatalf("broadcast = %s, %v; want %v", txid2, err, tx2.TxHash())
	}
	tx2Hash := tx2.TxHash()
	WaitFor(t, ctx, "btcd to receive the broadcast transaction", func() bool {
		return inMempool(t, btcd.Client, &tx2Hash)
	})
	mined := []HistoryItem{{TxHash: txid, Height: height}}
	waitStatus(t, ctx, ec, sh, append(mined, HistoryItem{TxHash: txid2, Height: 0}))
	if _, err := btcd.Client.Generate(1); err != nil {
		t.Fatal(err)
	}
	height++
	waitStatus(t, ctx, ec, sh, append(mined, HistoryItem{TxHash: txid2, Height: height}))
	checkMerkle(t, ctx, ec, btcd.Client, txid2, height)

	// The index agrees with a scan of btcd's blocks.
	want, err := ChainHistory(btcd.Client, pkScript)
	if err != nil {
		t.Fatal(err)
	}
	if hist, err = ec.GetHistory(ctx, sh); err != nil {
		t.Fatal(err)
	}
	if got := withoutFees(hist); len(got) != 2 || !equalHistory(got, want) {
		t.Fatalf("get_history %+v, btcd's blocks give %+v", got, want)
	}
}

// containsTx reports whether block holds the transaction txid.
func containsTx(block *wire.MsgBlock, txid string) bool {
	for _, tx := range block.Transactions {
		if tx.TxHash().String() == txid {
			return true
		}
	}
	return false
}

// equalHistory compares histories by txid and height, in order.
func equalHistory(a, b []HistoryItem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].TxHash != b[i].TxHash || a[i].Height != b[i].Height {
			return false
		}
	}
	return true
}

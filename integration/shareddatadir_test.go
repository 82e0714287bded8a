package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
)

// TestDatadirSharedWithBtcd switches one simnet datadir (simnet, because
// stock btcd deletes regtest databases on start) between the btcd-electrum
// binary and stock btcd v0.26.2: our node mines 102 blocks with a payment
// to a script and stops; btcd opens the datadir with our index inside,
// finds the same tip, mines three blocks with a second payment and stops;
// our node opens it again and catches its index up over btcd's blocks
// only (103 to 105, logged), and get_history of the script lists both
// payments at their heights, as a scan of the blocks does.
func TestDatadirSharedWithBtcd(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	cfg := NodeConfig{Binary: true, Net: &chaincfg.SimNetParams, Dir: dir}
	ours := StartNode(t, cfg)
	if _, err := ours.Mine(101); err != nil {
		t.Fatal(err)
	}
	paid := otherScript(t)
	tx1, err := ours.SendRaw(spendCoinbaseAt(t, ours.RPC, 1, paid))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ours.Mine(1); err != nil {
		t.Fatal(err)
	}
	ourTip, _, err := ours.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := ours.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	firstRuns, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}

	btcd := StartBtcdProcess(t, BtcdProcessConfig{DataDir: ours.DataDir, Net: &chaincfg.SimNetParams})
	tip, height, err := btcd.RPC.GetBestBlock()
	if err != nil || *tip != *ourTip || height != 102 {
		t.Fatalf("btcd opened our datadir at %v@%d (%v), we left %v@102", tip, height, err, ourTip)
	}
	tx2, err := btcd.RPC.SendRawTransaction(spendCoinbaseAt(t, btcd.RPC, 2, paid), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := btcd.RPC.Generate(3); err != nil {
		t.Fatal(err)
	}
	btcdTip, _, err := btcd.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := btcd.Stop(); err != nil {
		t.Fatalf("btcd's exit after SIGINT: %v", err)
	}

	ours = StartNode(t, cfg)
	if best, h, err := ours.RPC.GetBestBlock(); err != nil || *best != *btcdTip || h != 105 {
		t.Fatalf("our node reopened at %v@%d (%v), btcd left %v@105", best, h, err, btcdTip)
	}
	log, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(log, firstRuns) {
		t.Fatalf("log %s was rewritten", ours.LogFile)
	}
	if !strings.Contains(log[len(firstRuns):], catchUpLine(t, ours.RPC, 103, 105)) {
		t.Fatalf("the index did not catch up over btcd's blocks only:\n%s", log[len(firstRuns):])
	}
	checkIndexAtTip(t, ours.RPC)

	ec := ours.Electrum
	want := []HistoryItem{{TxHash: tx1.String(), Height: 102}, {TxHash: tx2.String(), Height: 103}}
	for _, script := range [][]byte{paid, MiningScript()} {
		scan, err := ChainHistory(ours.RPC, script)
		if err != nil {
			t.Fatal(err)
		}
		hist, err := ec.GetHistory(ctx, ScriptHash(script))
		if err != nil {
			t.Fatal(err)
		}
		if !equalHistory(hist, scan) {
			t.Fatalf("get_history %+v, the blocks give %+v", hist, scan)
		}
	}
	hist, err := ec.GetHistory(ctx, ScriptHash(paid))
	if err != nil || !equalHistory(hist, want) {
		t.Fatalf("get_history of the paid script = %+v (%v), want %+v", hist, err, want)
	}
	checkMerkle(t, ctx, ec, ours.RPC, tx2.String(), 103)
	if filepath.Dir(ours.DataDir) != dir {
		t.Fatalf("datadir %s is not under %s", ours.DataDir, dir)
	}
}

// TestIndexRepairedAfterBtcdReorg leaves our simnet datadir at block 102
// (paying a script in tx1), lets stock btcd open it, invalidate block 102
// and mine a three-block branch from 101 that confirms tx1 again together
// with tx2, and reopens it with our node: the index tip is no longer on the
// main chain, so the node removes block 102 from the index (logged) and
// catches up the new branch; histories match a scan of the blocks, statuses
// match get_history, and the old block's hash is gone from the answers.
func TestIndexRepairedAfterBtcdReorg(t *testing.T) {
	ctx := testContext(t)
	cfg := NodeConfig{Binary: true, Net: &chaincfg.SimNetParams}
	ours := StartNode(t, cfg)
	cfg.Dir = ours.Dir
	if _, err := ours.Mine(101); err != nil {
		t.Fatal(err)
	}
	paid := otherScript(t)
	tx1, err := ours.SendRaw(spendCoinbaseAt(t, ours.RPC, 1, paid))
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := ours.Mine(1)
	if err != nil {
		t.Fatal(err)
	}
	oldBlock := hashes[0]
	oldHeader := headerHex(t, ours.RPC, 102)
	if err := ours.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	firstRun, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}

	btcd := StartBtcdProcess(t, BtcdProcessConfig{DataDir: ours.DataDir, Net: &chaincfg.SimNetParams})
	if err := btcd.RPC.InvalidateBlock(oldBlock); err != nil {
		t.Fatalf("btcd invalidateblock: %v", err)
	}
	tx2, err := btcd.RPC.SendRawTransaction(spendCoinbaseAt(t, btcd.RPC, 2, paid), false)
	if err != nil {
		t.Fatal(err)
	}
	if !inMempool(t, btcd.RPC, tx1) {
		t.Fatalf("btcd did not put %v back in its mempool", tx1)
	}
	if _, err := btcd.RPC.Generate(3); err != nil {
		t.Fatal(err)
	}
	btcdTip, _, err := btcd.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := btcd.Stop(); err != nil {
		t.Fatalf("btcd's exit after SIGINT: %v", err)
	}

	ours = StartNode(t, cfg)
	if best, h, err := ours.RPC.GetBestBlock(); err != nil || *best != *btcdTip || h != 104 {
		t.Fatalf("our node reopened at %v@%d (%v), btcd left %v@104", best, h, err, btcdTip)
	}
	log, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}
	second := log[len(firstRun):]
	for _, line := range []string{"Electrum index: removed block " + oldBlock.String() + " at height 102",
		catchUpLine(t, ours.RPC, 102, 104)} {
		if !strings.Contains(second, line) {
			t.Fatalf("no %q in the log:\n%s", line, second)
		}
	}
	checkIndexAtTip(t, ours.RPC)

	ec := ours.Electrum
	for _, script := range [][]byte{paid, MiningScript()} {
		sh := ScriptHash(script)
		scan, err := ChainHistory(ours.RPC, script)
		if err != nil {
			t.Fatal(err)
		}
		status, err := ec.SubscribeScriptHash(ctx, sh)
		if err != nil {
			t.Fatal(err)
		}
		hist := checkStatus(t, ctx, ec, sh, status)
		if !equalHistory(hist, scan) {
			t.Fatalf("get_history %+v, the blocks give %+v", hist, scan)
		}
	}
	hist, err := ec.GetHistory(ctx, ScriptHash(paid))
	if err != nil || len(hist) != 2 || hist[0].Height != 102 || hist[1].Height != 102 {
		t.Fatalf("get_history of the paid script = %+v (%v), want tx1 and tx2 at 102", hist, err)
	}
	for _, h := range hist {
		if h.TxHash != tx1.String() && h.TxHash != tx2.String() {
			t.Fatalf("unexpected %s in the history", h.TxHash)
		}
	}
	if got, err := ec.BlockHeader(ctx, 102); err != nil || got == oldHeader {
		t.Fatalf("block.header 102 = %s (%v), still the invalidated block", got, err)
	}
	checkMerkle(t, ctx, ec, ours.RPC, tx1.String(), 102)
	checkMerkle(t, ctx, ec, ours.RPC, tx2.String(), 102)
}

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/btcd-electrum/btcd-electrum/node"
)

// TestOpensBtcdDatadir lets a real btcd v0.26.2 create a regtest datadir
// with --txindex (102 blocks mined to the harness's address and a
// transaction to another script), stops it with SIGINT, and starts the
// btcd-electrum binary with --txindex and --electrumindex on that datadir. Our node finds btcd's chain (same tip,
// same header at every height), builds the index by catching up (logged,
// getelectruminfo at the tip), and answers get_history, listunspent and
// get_merkle for scripts btcd's blocks paid, matching a scan of the
// blocks.
func TestOpensBtcdDatadir(t *testing.T) {
	ctx := testContext(t)
	dataDir := filepath.Join(t.TempDir(), "btcd")
	btcd := StartBtcdProcess(t, BtcdProcessConfig{DataDir: dataDir, Args: []string{"--txindex"}})
	if _, err := btcd.RPC.Generate(101); err != nil {
		t.Fatal(err)
	}
	paid := otherScript(t)
	tx := spendCoinbaseAt(t, btcd.RPC, 1, paid)
	txHash, err := btcd.RPC.SendRawTransaction(tx, false)
	if err != nil {
		t.Fatalf("sendrawtransaction to btcd: %v", err)
	}
	txid := txHash.String()
	if _, err := btcd.RPC.Generate(1); err != nil {
		t.Fatal(err)
	}
	tip, height, err := btcd.RPC.GetBestBlock()
	if err != nil || height != 102 {
		t.Fatalf("btcd's tip %v@%d, %v", tip, height, err)
	}
	headers := make([]string, height+1)
	for h := range headers {
		headers[h] = headerHex(t, btcd.RPC, int32(h))
	}
	if err := btcd.Stop(); err != nil {
		t.Fatalf("btcd's exit after SIGINT: %v", err)
	}
	netDir := filepath.Join(dataDir, node.NetName(&chaincfg.RegressionNetParams))
	if _, err := os.Stat(node.BlockDBPath(netDir)); err != nil {
		t.Fatalf("btcd left no block database: %v", err)
	}

	ours := StartNode(t, NodeConfig{Binary: true, DataDir: dataDir, Args: []string{"--txindex"}})
	best, ourHeight, err := ours.RPC.GetBestBlock()
	if err != nil || *best != *tip || ourHeight != height {
		t.Fatalf("our node's tip %v@%d (%v), btcd's %v@%d", best, ourHeight, err, tip, height)
	}
	log, err := ours.Log()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, catchUpLine(t, ours.RPC, 0, height)) {
		t.Fatalf("no index catch-up logged:\n%s", log)
	}
	checkIndexAtTip(t, ours.RPC)
	// btcd's transaction index came along in the database.
	if got, err := ours.RPC.GetRawTransactionVerbose(txHash); err != nil || got.BlockHash != tip.String() {
		t.Fatalf("getrawtransaction %s: %+v, %v", txid, got, err)
	}

	ec := ours.Electrum
	for h, want := range headers {
		got, err := ec.BlockHeader(ctx, int32(h))
		if err != nil || got != want {
			t.Fatalf("blockchain.block.header %d = %s (%v), btcd had %s", h, got, err, want)
		}
	}
	hist, err := ec.GetHistory(ctx, ScriptHash(paid))
	if err != nil {
		t.Fatal(err)
	}
	if !equalHistory(hist, []HistoryItem{{TxHash: txid, Height: 102}}) {
		t.Fatalf("get_history of the paid script = %+v, want %s at 102", hist, txid)
	}
	utxos, err := ec.ListUnspent(ctx, ScriptHash(paid))
	if err != nil || len(utxos) != 1 || utxos[0].TxHash != txid || utxos[0].Value != tx.TxOut[0].Value {
		t.Fatalf("listunspent = %+v, %v", utxos, err)
	}
	checkMerkle(t, ctx, ec, ours.RPC, txid, 102)

	// The mining script: 102 coinbases and the spend of the first.
	mining := ScriptHash(MiningScript())
	want, err := ChainHistory(ours.RPC, MiningScript())
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 103 {
		t.Fatalf("the blocks give %d history entries for the mining script, want 103", len(want))
	}
	got, err := ec.GetHistory(ctx, mining)
	if err != nil {
		t.Fatal(err)
	}
	if !equalHistory(got, want) {
		t.Fatalf("get_history of the mining script has %d entries %+v, the blocks give %+v", len(got), got, want)
	}
	status, err := ec.SubscribeScriptHash(ctx, mining)
	if err != nil {
		t.Fatal(err)
	}
	checkStatus(t, ctx, ec, mining, status)
}

package integration

import (
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestBtcdIndexesSharedWithBtcd passes one simnet datadir with btcd's own
// optional indexes (compact filters, on by default in both; --txindex;
// --addrindex) between stock btcd v0.26.2 and the btcd-electrum binary,
// each reorganizing the chain while the other is stopped: btcd builds the
// indexes and pays a script; our node opens them (same filters, the payment
// found by searchrawtransactions), invalidates the payment's block and
// confirms it again on a longer branch; btcd reopens the datadir and its
// indexes agree with ours (filter headers at the tip, the payment's new
// block), mines on; our node reopens once more and agrees with btcd.
func TestBtcdIndexesSharedWithBtcd(t *testing.T) {
	simnet := &chaincfg.SimNetParams
	indexArgs := []string{"--txindex", "--addrindex"}
	btcd := StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir(), Net: simnet, Args: indexArgs})
	dataDir := btcd.DataDir
	if _, err := btcd.RPC.Generate(101); err != nil {
		t.Fatal(err)
	}
	paid := otherScript(t)
	_, addrs, _, err := txscript.ExtractPkScriptAddrs(paid, simnet)
	if err != nil || len(addrs) != 1 {
		t.Fatal(err)
	}
	payment, err := btcd.RPC.SendRawTransaction(spendCoinbaseAt(t, btcd.RPC, 1, paid), false)
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := btcd.RPC.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	payBlock := hashes[0]
	btcdFilter := filterOf(t, btcd.RPC, payBlock)
	if err := btcd.Stop(); err != nil {
		t.Fatalf("btcd's exit: %v", err)
	}

	// Our node on btcd's indexes.
	cfg := NodeConfig{Binary: true, Net: simnet, DataDir: dataDir, Args: indexArgs}
	ours := StartNode(t, cfg)
	if got := filterOf(t, ours.RPC, payBlock); string(got) != string(btcdFilter) {
		t.Fatal("our node serves another filter for btcd's block")
	}
	searchFinds(t, ours.RPC, addrs[0], payment, payBlock)
	// A reorg while btcd is away: the payment moves to another block.
	if err := ours.RPC.InvalidateBlock(payBlock); err != nil {
		t.Fatal(err)
	}
	if !inMempool(t, ours.RPC, payment) {
		t.Fatal("the payment did not return to the mempool")
	}
	branch, err := ours.Mine(3)
	if err != nil {
		t.Fatal(err)
	}
	searchFinds(t, ours.RPC, addrs[0], payment, branch[0])
	ourTip, _, err := ours.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	ourHeader := filterHeaderOf(t, ours.RPC, ourTip)
	if err := ours.Stop(); err != nil {
		t.Fatal(err)
	}

	// btcd on our indexes, after our reorg.
	btcd = StartBtcdProcess(t, BtcdProcessConfig{DataDir: dataDir, Net: simnet, Args: indexArgs})
	if tip, h, err := btcd.RPC.GetBestBlock(); err != nil || *tip != *ourTip || h != 104 {
		t.Fatalf("btcd reopened at %v@%d (%v), we left %v@104", tip, h, err, ourTip)
	}
	if got := filterHeaderOf(t, btcd.RPC, ourTip); got != ourHeader {
		t.Fatalf("btcd's filter header at our tip %v, ours %v", got, ourHeader)
	}
	searchFinds(t, btcd.RPC, addrs[0], payment, branch[0])
	more, err := btcd.RPC.Generate(2)
	if err != nil {
		t.Fatal(err)
	}
	btcdHeader := filterHeaderOf(t, btcd.RPC, more[1])
	if err := btcd.Stop(); err != nil {
		t.Fatalf("btcd's exit: %v", err)
	}

	// Our node once more, over btcd's blocks.
	ours = StartNode(t, cfg)
	if got := filterHeaderOf(t, ours.RPC, more[1]); got != btcdHeader {
		t.Fatalf("our filter header at btcd's tip %v, btcd's %v", got, btcdHeader)
	}
	searchFinds(t, ours.RPC, addrs[0], payment, branch[0])
	checkIndexAtTip(t, ours.RPC)
}

// filterOf returns a block's BIP 158 filter as the node serves it.
func filterOf(t *testing.T, c *rpcclient.Client, block *chainhash.Hash) []byte {
	t.Helper()
	f, err := c.GetCFilter(block, wire.GCSFilterRegular)
	if err != nil {
		t.Fatal(err)
	}
	return f.Data
}

// filterHeaderOf returns a block's BIP 157 filter header as the node
// serves it.
func filterHeaderOf(t *testing.T, c *rpcclient.Client, block *chainhash.Hash) chainhash.Hash {
	t.Helper()
	h, err := c.GetCFilterHeader(block, wire.GCSFilterRegular)
	if err != nil {
		t.Fatal(err)
	}
	return h.PrevFilterHeader
}

// searchFinds checks that searchrawtransactions of addr returns the
// payment, in block.
func searchFinds(t *testing.T, c *rpcclient.Client, addr address.Address, payment, block *chainhash.Hash) {
	t.Helper()
	res, err := c.SearchRawTransactionsVerbose(addr, 0, 10, false, false, nil)
	if err != nil {
		t.Fatalf("searchrawtransactions: %v", err)
	}
	if len(res) != 1 || res[0].Txid != payment.String() || res[0].BlockHash != block.String() {
		t.Fatalf("searchrawtransactions found %+v, want %v in %v", res, payment, block)
	}
}

package node

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestAddrIndexAndDrops runs --addrindex (which turns --txindex on) with the
// Electrum index: searchrawtransactions finds a payment in the mempool and
// once confirmed (with the spent output's value through vinextra), and pages
// through the mining address's coinbases forwards and backwards as btcd.
// Then the --drop*index flags delete each index from the stopped node's
// database; the node starts without them, and starting with --addrindex
// again rebuilds the address index.
func TestAddrIndexAndDrops(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.AddrIndex = true
	n := startNode(t, cfg)
	if !cfg.TxIndex {
		t.Fatal("--addrindex did not turn --txindex on")
	}
	generate(t, n, 101)
	c := rpcClient(t, n.RPCAddrs()[0].String())

	script := freshScript(t)
	_, addrs, _, _ := txscript.ExtractPkScriptAddrs(script, &chaincfg.RegressionNetParams)
	paid := payFromCoinbase(t, n, 1, script)
	txs, err := c.SearchRawTransactions(addrs[0], 0, 10, false, nil)
	if err != nil || len(txs) != 1 || txs[0].TxHash() != *paid.Hash() {
		t.Fatalf("unconfirmed payment: %v %v", txs, err)
	}
	hashes := generate(t, n, 1)
	verbose, err := c.SearchRawTransactionsVerbose(addrs[0], 0, 10, true, false, nil)
	if err != nil || len(verbose) != 1 {
		t.Fatalf("confirmed payment: %v %v", verbose, err)
	}
	v := verbose[0]
	if v.Txid != paid.Hash().String() || v.BlockHash != hashes[0].String() || v.Confirmations != 1 {
		t.Fatalf("verbose result %+v", v)
	}
	if v.Vin[0].PrevOut == nil || v.Vin[0].PrevOut.Value != 50 ||
		v.Vin[0].PrevOut.Addresses[0] != testMiningAddr(t).EncodeAddress() {
		t.Fatalf("vinextra prevout %+v", v.Vin[0].PrevOut)
	}

	// Paging through the mining address: coinbases in chain order.
	mining := testMiningAddr(t)
	page, err := c.SearchRawTransactions(mining, 5, 3, false, nil)
	if err != nil || len(page) != 3 {
		t.Fatalf("page: %d %v", len(page), err)
	}
	for i, tx := range page {
		want := mustBlock(t, n, int32(6+i)).Transactions()[0].Hash()
		if tx.TxHash() != *want {
			t.Fatalf("page entry %d is %v, want coinbase of height %d", i, tx.TxHash(), 6+i)
		}
	}
	// reverse is the same list backwards (the spend of coinbase 1 is the
	// newest entry, after the tip's coinbase in its block).
	all, err := c.SearchRawTransactions(mining, 0, 1000, false, nil)
	if err != nil || len(all) != 103 {
		t.Fatalf("all entries: %d %v", len(all), err)
	}
	backwards, err := c.SearchRawTransactions(mining, 0, 1000, true, nil)
	if err != nil || len(backwards) != len(all) {
		t.Fatalf("reverse: %d %v", len(backwards), err)
	}
	for i := range all {
		if all[i].TxHash() != backwards[len(all)-1-i].TxHash() {
			t.Fatalf("reverse entry %d differs", i)
		}
	}
	if _, err := c.SearchRawTransactions(freshAddr(t), 0, 1, false, nil); err == nil ||
		!strings.Contains(err.Error(), "No information available about address") {
		t.Fatalf("unknown address: %v", err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	initialized := func() (addr, tx, cf, el bool) {
		t.Helper()
		db, err := database.Open("ffldb", BlockDBPath(cfg.NetDataDir()), chaincfg.RegressionNetParams.Net)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return btcdindexers.AddrIndexInitialized(db), btcdindexers.TxIndexInitialized(db),
			btcdindexers.CfIndexInitialized(db), fileExists(filepath.Join(ElectrumIndexPath(cfg.netDataDir), "CURRENT"))
	}
	drop := func(set func(*Config)) {
		t.Helper()
		d := testConfig(t, dir, false)
		set(d)
		if !d.DropRequested() {
			t.Fatal("no drop requested")
		}
		if err := DropIndexes(d); err != nil {
			t.Fatalf("DropIndexes: %v", err)
		}
	}
	if a, x, f, e := initialized(); !a || !x || !f || !e {
		t.Fatalf("before the drops: addr %v tx %v cf %v electrum %v", a, x, f, e)
	}
	drop(func(d *Config) { d.DropAddrIndex = true })
	if a, x, _, _ := initialized(); a || !x {
		t.Fatalf("after --dropaddrindex: addr %v tx %v", a, x)
	}
	drop(func(d *Config) { d.DropTxIndex, d.DropCfIndex, d.DropElectrumIndex = true, true, true })
	if a, x, f, e := initialized(); a || x || f || e {
		t.Fatalf("after the drops: addr %v tx %v cf %v electrum %v", a, x, f, e)
	}

	// Without indexes the node runs, and says so.
	plain := testConfig(t, dir, false)
	plain.NoCFilters = true
	n2 := startNode(t, plain)
	c2 := rpcClient(t, n2.RPCAddrs()[0].String())
	if _, err := c2.SearchRawTransactions(mining, 0, 1, false, nil); err == nil ||
		!strings.Contains(err.Error(), "--addrindex") {
		t.Fatalf("searchrawtransactions without the index: %v", err)
	}
	if err := n2.Stop(); err != nil {
		t.Fatal(err)
	}

	// --addrindex again: rebuilt from the blocks.
	again := testConfig(t, dir, false)
	again.AddrIndex = true
	n3 := startNode(t, again)
	c3 := rpcClient(t, n3.RPCAddrs()[0].String())
	txs, err = c3.SearchRawTransactions(addrs[0], 0, 10, false, nil)
	if err != nil || len(txs) != 1 || txs[0].TxHash() != *paid.Hash() {
		t.Fatalf("after the rebuild: %v %v", txs, err)
	}
}

// freshAddr returns the address of a new key.
func freshAddr(t *testing.T) address.Address {
	t.Helper()
	_, addrs, _, _ := txscript.ExtractPkScriptAddrs(freshScript(t), &chaincfg.RegressionNetParams)
	return addrs[0]
}

// TestIndexesFollowReorgWhileDisabled keeps btcd's address and compact
// filter indexes across a reorganization made while they were disabled
// (not dropped). The chain deleted the stale block's spend journal, which
// btcd v0.26.2's own index manager needs to rewind them (it fails to start
// there); the node rewinds them itself (the address index reads the spent
// scripts from the transaction index) and catches them up, so
// searchrawtransactions finds the payment in its new block, the new blocks'
// filters are served and the stale block's is gone.
func TestIndexesFollowReorgWhileDisabled(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, false)
	cfg.AddrIndex = true
	n := startNode(t, cfg)
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatal(err)
	}
	script := freshScript(t)
	_, addrs, _, _ := txscript.ExtractPkScriptAddrs(script, &chaincfg.RegressionNetParams)
	paid := payFromCoinbase(t, n, 1, script)
	old, err := n.Generate(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	// Without the indexes: the payment's block is replaced.
	off := testConfig(t, dir, false)
	off.NoCFilters = true
	n2 := startNode(t, off)
	if err := n2.Chain().InvalidateBlock(old[0]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the payment back in the mempool", func() bool { return n2.TxPool().HaveTransaction(paid.Hash()) })
	branch, err := n2.Generate(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n2.Stop(); err != nil {
		t.Fatal(err)
	}

	on := testConfig(t, dir, false)
	on.AddrIndex = true
	n3 := startNode(t, on)
	c := rpcClient(t, n3.RPCAddrs()[0].String())
	res, err := c.SearchRawTransactionsVerbose(addrs[0], 0, 10, false, false, nil)
	if err != nil || len(res) != 1 || res[0].Txid != paid.Hash().String() || res[0].BlockHash != branch[0].String() {
		t.Fatalf("after the reorg: %+v %v (want %v in %v)", res, err, paid.Hash(), branch[0])
	}
	f, err := c.GetCFilter(branch[1], wire.GCSFilterRegular)
	if err != nil || len(f.Data) == 0 {
		t.Fatalf("filter of the new tip: %v", err)
	}
	// The stale block's filter went with the rewind.
	if f, err := c.GetCFilter(old[0], wire.GCSFilterRegular); err != nil || len(f.Data) != 0 {
		t.Fatalf("getcfilter of the stale block: %x %v", f.Data, err)
	}
}

package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/syndtr/goleveldb/leveldb"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// testWait bounds every wait of a test (a hang guard).
var testWait = 60 * time.Second

func init() { _ = SetLogLevels(os.Getenv("NODE_TEST_LOG")) }

// testKey is the key the test nodes mine to, so tests can spend coinbases.
var testKey, testPub = btcec.PrivKeyFromBytes(bytes.Repeat([]byte{0x11}, 32))

// testMiningAddr is the P2PKH regtest address of testKey.
func testMiningAddr(t testing.TB) address.Address {
	t.Helper()
	addr, err := address.NewAddressPubKeyHash(address.Hash160(testPub.SerializeCompressed()), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// testConfig is a regtest configuration in dir with every listener on a
// free loopback port.
func testConfig(t testing.TB, dir string, electrum bool) *Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RegressionTest = true
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.LogDir = filepath.Join(dir, "logs")
	cfg.ConfigFile = filepath.Join(dir, "none.conf")
	cfg.Listeners = []string{"127.0.0.1:0"}
	cfg.RPCListeners = []string{"127.0.0.1:0"}
	cfg.RPCUser, cfg.RPCPass = "user", "pass"
	cfg.DisableTLS = true
	cfg.MiningAddrs = []string{testMiningAddr(t).EncodeAddress()}
	cfg.UtxoCacheMaxSizeMiB = 1
	cfg.DisableDNSSeed = true
	cfg.AllowSelfConns = true
	cfg.TrickleInterval = 50 * time.Millisecond
	cfg.ElectrumIndex = electrum
	if electrum {
		cfg.ElectrumListeners = []string{"127.0.0.1:0"}
	}
	return cfg
}

// startNode creates and starts a node, stopping it when the test ends.
func startNode(t testing.TB, cfg *Config) *Node {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := n.Start(); err != nil {
		_ = n.Stop()
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	return n
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline (a hang guard, not a timing assertion).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncIndex waits until the node's Electrum index holds the chain's tip:
// the index follows the chain in a writer of its own, so a test that mines
// and then reads the index waits for it first (a no-op without the index).
func syncIndex(t testing.TB, n *Node) {
	t.Helper()
	if n.index == nil || n.index.electrum == nil {
		return
	}
	if err := n.index.electrum.Sync(); err != nil {
		t.Fatalf("sync the Electrum index: %v", err)
	}
}

// generate mines count blocks and waits until the Electrum index holds
// them.
func generate(t testing.TB, n *Node, count uint32) []*chainhash.Hash {
	t.Helper()
	hashes, err := n.Generate(count, nil)
	if err != nil {
		t.Fatal(err)
	}
	syncIndex(t, n)
	return hashes
}

// spendCoinbase builds a transaction paying the coinbase output of the
// block at height to testKey's address again, minus fee.
func spendCoinbase(t testing.TB, n *Node, height int32, fee int64) *btcutil.Tx {
	t.Helper()
	return spendCoinbaseSeq(t, n, height, fee, wire.MaxTxInSequenceNum)
}

// spendCoinbaseSeq is spendCoinbase with the input's sequence number (below
// 0xfffffffe it signals replaceability, BIP 125).
func spendCoinbaseSeq(t testing.TB, n *Node, height int32, fee int64, seq uint32) *btcutil.Tx {
	t.Helper()
	block, err := n.Chain().BlockByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	cb := block.Transactions()[0].MsgTx()
	pkScript, err := txscript.PayToAddrScript(testMiningAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(block.Transactions()[0].Hash(), 0), nil, nil))
	tx.TxIn[0].Sequence = seq
	tx.AddTxOut(wire.NewTxOut(cb.TxOut[0].Value-fee, pkScript))
	sig, err := txscript.SignatureScript(tx, 0, cb.TxOut[0].PkScript, txscript.SigHashAll, testKey, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.TxIn[0].SignatureScript = sig
	return btcutil.NewTx(tx)
}

// TestRestartKeepsChainAndIndex mines blocks and a transaction, stops the
// node and opens the same datadir again: chain, Electrum index and the
// transaction are still there, and the index is not rebuilt.
func TestRestartKeepsChainAndIndex(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	tx := spendCoinbase(t, n, 1, 10_000)
	accepted, err := n.ProcessTx(tx)
	if err != nil {
		t.Fatalf("ProcessTx: %v", err)
	}
	if len(accepted) != 1 || !accepted[0].Tx.Hash().IsEqual(tx.Hash()) {
		t.Fatalf("ProcessTx accepted %d transactions", len(accepted))
	}
	if !n.TxPool().HaveTransaction(tx.Hash()) {
		t.Fatal("transaction is not in the mempool")
	}
	if p := n.rebroadcast.pending(); len(p) != 1 || p[0] != *tx.Hash() {
		t.Fatalf("rebroadcast list %v, want the submitted transaction", p)
	}
	hashes, err := n.Generate(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	minedBlock, err := n.Chain().BlockByHash(hashes[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(minedBlock.Transactions()) != 2 || !minedBlock.Transactions()[1].Hash().IsEqual(tx.Hash()) {
		t.Fatalf("block 102 does not hold the mempool transaction")
	}
	waitFor(t, "mempool to drop the mined transaction", func() bool {
		c := n.mempoolView.Len()
		return n.TxPool().Count() == 0 && c == 0
	})
	waitFor(t, "the confirmed transaction to leave the rebroadcast list", func() bool {
		return len(n.rebroadcast.pending()) == 0
	})
	best := n.Chain().BestSnapshot()
	if best.Height != 102 {
		t.Fatalf("height %d after mining, want 102", best.Height)
	}
	// The index holds the tip before the node stops: the restart must
	// find it there, with nothing to catch up.
	syncIndex(t, n)
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	// Reopen with the log in a file of its own, to see what start-up did.
	logFile := filepath.Join(dir, "restart.log")
	if err := SetLogFile(logFile); err != nil {
		t.Fatal(err)
	}
	defer SetLogFile("")
	n2 := startNode(t, testConfig(t, dir, true))
	if got := n2.Chain().BestSnapshot(); got.Height != best.Height || got.Hash != best.Hash {
		t.Fatalf("after restart tip is %v@%d, want %v@%d", got.Hash, got.Height, best.Hash, best.Height)
	}
	tip, err := n2.index.electrum.Tip()
	if err != nil {
		t.Fatal(err)
	}
	if tip.Height != best.Height || tip.Hash != best.Hash {
		t.Fatalf("index tip %v@%d, want %v@%d", tip.Hash, tip.Height, best.Hash, best.Height)
	}
	mtx, blockHash, err := n2.ConfirmedTx(tx.Hash())
	if err != nil {
		t.Fatalf("ConfirmedTx after restart: %v", err)
	}
	if mtx.TxHash() != *tx.Hash() || *blockHash != *hashes[0] {
		t.Fatalf("ConfirmedTx returned %v in %v", mtx.TxHash(), blockHash)
	}
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	hist, _, err := n2.index.electrum.History(indexers.ScriptHashFromScript(pkScript), 0)
	if err != nil {
		t.Fatal(err)
	}
	// 102 coinbases plus the spend, which pays the same script.
	if len(hist) != 103 {
		t.Fatalf("history of the mining script has %d entries, want 103", len(hist))
	}
	if _, err := n2.Generate(1, nil); err != nil {
		t.Fatalf("Generate after restart: %v", err)
	}
	syncIndex(t, n2)
	SetLogFile("")
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"catching up", "caught up to height", "rebuilding", "no longer in the main chain",
		"Creating block database"} {
		if strings.Contains(string(logged), bad) {
			t.Errorf("restart log contains %q:\n%s", bad, logged)
		}
	}
	if !strings.Contains(string(logged), "Indexed block 103 ") {
		t.Errorf("restart log has no index timing line for block 103:\n%s", logged)
	}
}

// TestRestartKeepsTipUndoRecord: a restart keeps the undo record of the
// index tip (0 blocks deep), with the default --electrumundoblocks and with
// its largest value, which the index takes as the depth it is.
func TestRestartKeepsTipUndoRecord(t *testing.T) {
	for _, undo := range []int{indexers.DefaultUndoBlocks, maxUndoBlocks} {
		dir := t.TempDir()
		mk := func() *Config {
			c := testConfig(t, dir, true)
			c.ElectrumUndoBlocks = undo
			return c
		}
		cfg := mk()
		n := startNode(t, cfg)
		generate(t, n, 5)
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
		if !hasUndoRecord(t, cfg, 5) {
			t.Fatalf("--electrumundoblocks=%d: no undo record of the tip after the first run", undo)
		}
		n = startNode(t, mk())
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
		if !hasUndoRecord(t, cfg, 5) {
			t.Errorf("--electrumundoblocks=%d: the tip's undo record was deleted at the restart", undo)
		}
	}
}

// hasUndoRecord reports whether the closed index store of the datadir
// holds the undo record of the block at height ("Exd" + height).
func hasUndoRecord(t *testing.T, cfg *Config, height uint32) bool {
	t.Helper()
	db, err := leveldb.OpenFile(ElectrumIndexPath(cfg.NetDataDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ok, err := db.Has(binary.BigEndian.AppendUint32([]byte("Exd"), height), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestRPCServesBtcdClient drives the node with btcd's rpcclient over HTTP
// POST: generate, getblockcount, getbestblock, getrawtransaction of a
// confirmed transaction served by the Electrum index (no --txindex), stop.
func TestRPCServesBtcdClient(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	addrs := n.RPCAddrs()
	if len(addrs) != 1 {
		t.Fatalf("RPC listens on %v", addrs)
	}
	client, err := rpcclient.New(&rpcclient.ConnConfig{
		Host: addrs[0].String(), User: "user", Pass: "pass",
		HTTPPostMode: true, DisableTLS: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Shutdown()

	hashes, err := client.Generate(3)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if len(hashes) != 3 {
		t.Fatalf("generate returned %d hashes", len(hashes))
	}
	count, err := client.GetBlockCount()
	if err != nil || count != 3 {
		t.Fatalf("getblockcount = %d, %v; want 3", count, err)
	}
	bestHash, height, err := client.GetBestBlock()
	if err != nil || height != 3 || *bestHash != *hashes[2] {
		t.Fatalf("getbestblock = %v@%d, %v", bestHash, height, err)
	}
	// getrawtransaction reads the Electrum index, which follows the
	// chain in a writer of its own.
	syncIndex(t, n)
	block, err := n.Chain().BlockByHash(hashes[1])
	if err != nil {
		t.Fatal(err)
	}
	cb := block.Transactions()[0]
	raw, err := client.GetRawTransaction(cb.Hash())
	if err != nil {
		t.Fatalf("getrawtransaction: %v", err)
	}
	if *raw.Hash() != *cb.Hash() {
		t.Fatalf("getrawtransaction returned %v", raw.Hash())
	}
	if _, err := client.GetRawTransaction(&chainhash.Hash{1}); err == nil {
		t.Fatal("getrawtransaction of an unknown txid succeeded")
	}

	if _, err := client.RawRequest("stop", nil); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-n.StopRequested():
	case <-time.After(30 * time.Second):
		t.Fatal("stop RPC did not request a shutdown")
	}
}

// TestPeersSyncAndRelay connects a second node to the first over P2P: it
// syncs the chain the first one mined, both indexes follow, and a
// transaction submitted to the second reaches the first's mempool.
func TestPeersSyncAndRelay(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, a, 105)
	cfgB := testConfig(t, t.TempDir(), true)
	cfgB.ConnectPeers = []string{a.P2PAddrs()[0].String()}
	cfgB.Listeners = nil
	b := startNode(t, cfgB)
	if len(b.P2PAddrs()) != 0 {
		t.Fatalf("--connect without --listen still listens on %v", b.P2PAddrs())
	}

	want := a.Chain().BestSnapshot()
	waitFor(t, "the second node to sync", func() bool {
		return b.Chain().BestSnapshot().Hash == want.Hash
	})
	waitFor(t, "the second node's index to follow", func() bool {
		tip, err := b.index.electrum.Tip()
		return err == nil && tip.Hash == want.Hash
	})
	if a.ConnectedCount() != 1 || b.ConnectedCount() != 1 {
		t.Fatalf("connected peers: a %d, b %d", a.ConnectedCount(), b.ConnectedCount())
	}

	// New blocks relay from a to b.
	more, err := a.Generate(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "new blocks to relay", func() bool {
		return b.Chain().BestSnapshot().Hash == *more[1]
	})

	// A transaction submitted to b is relayed to a.
	tx := spendCoinbase(t, b, 2, 5_000)
	if _, err := b.ProcessTx(tx); err != nil {
		t.Fatalf("ProcessTx: %v", err)
	}
	waitFor(t, "the transaction to relay", func() bool {
		return a.TxPool().HaveTransaction(tx.Hash())
	})
	waitFor(t, "the mempool view of a to see it", func() bool {
		c := a.mempoolView.Len()
		return c == 1
	})
}

// TestStopWithoutStart opens a node and closes it without starting it; the
// database can be opened again.
func TestStopWithoutStart(t *testing.T) {
	dir := t.TempDir()
	n, err := New(testConfig(t, dir, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Generate(1, nil); !errors.Is(err, errNotStarted) {
		t.Fatalf("Generate on a stopped node: %v", err)
	}
	n2, err := New(testConfig(t, dir, false))
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if err := n2.Stop(); err != nil {
		t.Fatal(err)
	}
}

// TestConfirmedTxThroughTxIndex serves confirmed transactions from btcd's
// transaction index when the Electrum index is off, and refuses without
// either index.
func TestConfirmedTxThroughTxIndex(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.TxIndex = true
	n := startNode(t, cfg)
	hashes, err := n.Generate(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := n.Chain().BlockByHash(hashes[1])
	if err != nil {
		t.Fatal(err)
	}
	cb := block.Transactions()[0]
	tx, blockHash, err := n.ConfirmedTx(cb.Hash())
	if err != nil {
		t.Fatalf("ConfirmedTx: %v", err)
	}
	if tx.TxHash() != *cb.Hash() || *blockHash != *hashes[1] {
		t.Fatalf("ConfirmedTx returned %v in %v", tx.TxHash(), blockHash)
	}

	plain := startNode(t, testConfig(t, t.TempDir(), false))
	if _, _, err := plain.ConfirmedTx(cb.Hash()); err == nil || !strings.Contains(err.Error(), "--electrumindex") {
		t.Fatalf("ConfirmedTx without an index: %v", err)
	}
}

// TestMempoolViewFollowsReplacement replaces a mempool transaction by a
// higher-fee one (BIP 125): btcd's pool drops the first without telling
// anyone, and the Electrum mempool view must drop it too.
func TestMempoolViewFollowsReplacement(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	first := spendCoinbaseSeq(t, n, 1, 10_000, 0xfffffffd)
	if _, err := n.ProcessTx(first); err != nil {
		t.Fatalf("first: %v", err)
	}
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript)
	onlyEntry := func(want *btcutil.Tx) func() bool {
		return func() bool {
			e := n.mempoolView.Entries(sh)
			return len(e) == 1 && e[0].TxHash == *want.Hash()
		}
	}
	waitFor(t, "the first transaction in the view", onlyEntry(first))

	second := spendCoinbaseSeq(t, n, 1, 100_000, 0xfffffffd)
	if _, err := n.ProcessTx(second); err != nil {
		t.Fatalf("replacement: %v", err)
	}
	if n.TxPool().HaveTransaction(first.Hash()) {
		t.Fatal("btcd kept the replaced transaction")
	}
	waitFor(t, "the view to hold only the replacement", onlyEntry(second))
	if fee := n.mempoolView.Entries(sh)[0].Fee; fee != 100_000 {
		t.Fatalf("replacement fee in the view %d, want 100000", fee)
	}
}

// TestMempoolViewDropsDoubleSpendOfBlock: a block confirms a transaction
// that double-spends one in the pool: the pool's one leaves the Electrum
// mempool view, whichever of the index's commit of the block and btcd's
// pool dropping the double spend comes first.
func TestMempoolViewDropsDoubleSpendOfBlock(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	c.call("blockchain.headers.subscribe")
	pooled := spendCoinbase(t, n, 1, 10_000)
	if _, err := n.ProcessTx(pooled); err != nil {
		t.Fatal(err)
	}
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript)
	waitFor(t, "the pool's transaction in the view", func() bool { return len(n.mempoolView.Entries(sh)) == 1 })

	mined := spendCoinbase(t, n, 1, 20_000)
	best := n.Chain().BestSnapshot()
	prev, err := n.Chain().BlockByHash(&best.Hash)
	if err != nil {
		t.Fatal(err)
	}
	prev.SetHeight(best.Height)
	block, err := rpctest.CreateBlock(prev, []*btcutil.Tx{mined}, 4, prev.MsgBlock().Header.Timestamp.Add(time.Second),
		testMiningAddr(t), nil, n.Chain().ChainParams())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Chain().ProcessBlock(block, blockchain.BFNone); err != nil {
		t.Fatal(err)
	}
	// The tip's notification comes after the commit's reconciliation.
	if tip := c.notification("blockchain.headers.subscribe"); tip[0].(map[string]any)["height"].(float64) != float64(best.Height+1) {
		t.Fatalf("tip notification %v", tip)
	}
	if n.TxPool().HaveTransaction(pooled.Hash()) {
		t.Fatal("btcd's pool kept the double spend")
	}
	waitFor(t, "the double spend to leave the view", func() bool { return len(n.mempoolView.Entries(sh)) == 0 })

	// The other order, which the index's writer and the chain's callbacks
	// race for: the commit's reconciliation still found the double spend
	// in btcd's pool, which dropped it only after, in the chain's
	// callback, and then handed the block on.
	n.mempoolView.Add(&mempool.TxDesc{TxDesc: mining.TxDesc{Tx: pooled, Added: time.Now(), Fee: 10_000}})
	// btcd set the block's height when it accepted it.
	n.events.push(nodeEvent{block: block, connected: true})
	waitFor(t, "the double spend the pool dropped after the commit to leave the view", func() bool {
		return len(n.mempoolView.Entries(sh)) == 0
	})
}

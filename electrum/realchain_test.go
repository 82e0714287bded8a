package electrum

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// realNode is the server on the project's real parts: a btcd regtest chain
// on ffldb (internal/testchain) with the Electrum index in its index
// manager, btcd's mempool and fee estimator, the index's mempool overlay,
// and the chain-notification wiring the node uses.
type realNode struct {
	t       testing.TB
	h       *testchain.Harness
	idx     *indexers.ElectrumIndex
	pool    *mempool.TxPool
	fees    *mempool.FeeEstimator
	overlay *indexers.Mempool
	backend *IndexBackend
	srv     *Server
	addr    string // TCP
	wsAddr  string
	minerTo address.Address

	// viewMu makes each reconciliation of the mempool view with btcd's
	// pool, from the commit callback or the chain's, one step, as the
	// node's dispatcher does: one from an older snapshot of the pool would
	// undo a later one.
	viewMu sync.Mutex

	mu sync.Mutex
	// coins are mature anyone-can-spend outputs reserved for tests.
	coins []testchain.Coin
	// poolLags, when set, keeps connected blocks' transactions in btcd's
	// pool until dropMined: the index may commit a block before btcd's
	// pool drops the block's transactions.
	poolLags bool
	lagged   []*btcutil.Block
	// gate, when set, holds the index's writer in its commit callback
	// (after it published the commit) until release; held tells a commit
	// waits there.
	gate chan struct{}
	held chan struct{}
	// handled is closed when the commit held at the gate has been
	// handled (its events queued).
	handled chan struct{}
	// after, when set, runs at the end of each commit's handling.
	after func(indexers.Commit)
}

// hold makes the writer wait after its next commit, so that the chain can
// move on while the index stays at that tip.
func (n *realNode) hold() {
	n.mu.Lock()
	n.gate, n.held, n.handled = make(chan struct{}), make(chan struct{}, 1), make(chan struct{})
	n.mu.Unlock()
	n.t.Cleanup(n.release)
}

// releaseHandled lets the writer go on and waits until the commit held
// at the gate has been handled: its events are queued then, however many
// they are (the chain's own notification may have reconciled the mempool
// view first, leaving the commit nothing to change there).
func (n *realNode) releaseHandled() {
	n.t.Helper()
	n.mu.Lock()
	handled := n.handled
	n.mu.Unlock()
	n.release()
	select {
	case <-handled:
	case <-time.After(30 * time.Second):
		n.t.Fatal("the held commit was not handled within 30 s of its release")
	}
}

// release lets the writer go on.
func (n *realNode) release() {
	n.mu.Lock()
	if n.gate != nil {
		close(n.gate)
		n.gate = nil
	}
	n.mu.Unlock()
}

// dropMined removes from btcd's pool the transactions of the blocks
// connected while poolLags was set, as btcd's pool does in the chain's
// notification.
func (n *realNode) dropMined() {
	n.mu.Lock()
	blocks := n.lagged
	n.lagged, n.poolLags = nil, false
	n.mu.Unlock()
	for _, b := range blocks {
		testchain.RemoveMined(n.pool, b)
	}
}

// newRealNode builds a chain with mature coinbases and a few random
// blocks, and starts a server on TCP and WS.
func newRealNode(t testing.TB, randomBlocks int, mod func(*Config)) *realNode {
	t.Helper()
	return newRealNodeServing(t, randomBlocks, mod, nil)
}

// newRealNodeServing is newRealNode with the server on serve(the node's
// backend) when serve is not nil.
func newRealNodeServing(t testing.TB, randomBlocks int, mod func(*Config), serve func(*IndexBackend) Backend) *realNode {
	t.Helper()
	n := &realNode{t: t}
	n.h = testchain.New(t, testchain.ElectrumIndex(t.TempDir(), indexers.Options{OnCommit: n.onCommit}, &n.idx, nil))
	if err := n.h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.h.MineEmpty(20); err != nil {
		t.Fatal(err)
	}
	rng := newRand(7)
	for i := 0; i < randomBlocks; i++ {
		if _, err := n.h.Mine(rng, testchain.DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	_, tipH := n.h.Tip()
	for _, c := range n.h.Coins() {
		if (!c.Coinbase || tipH+1-c.Height >= int32(n.h.Params.CoinbaseMaturity)) && c.Script.Kind.Spendable() && c.Value > 2_0000_0000 {
			n.coins = append(n.coins, c)
		}
	}
	if len(n.coins) < 6 {
		t.Fatalf("only %d mature coins", len(n.coins))
	}
	var err error
	n.minerTo, err = address.NewAddressWitnessPubKeyHash(bytes.Repeat([]byte{0x99}, 20), n.h.Params)
	if err != nil {
		t.Fatal(err)
	}
	n.fees = mempool.NewFeeEstimator(mempool.DefaultEstimateFeeMaxRollback, 1)
	chain := n.h.Chain
	n.pool = testchain.NewTxPool(chain, n.h.Params, n.fees)

	n.overlay = indexers.NewMempool(n.idx.PrevOut)
	n.backend = &IndexBackend{
		Params:  n.h.Params,
		Chain:   chain,
		Index:   n.idx,
		Mempool: n.overlay,
		Pool:    n.pool,
		Relay: &PoolRelay{Pool: n.pool, Fees: n.fees, OnAccept: func(descs []*mempool.TxDesc) {
			n.srv.NotifyMempool(n.overlay.Add(descs...))
		}},
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Listeners: []Listener{{Transport: TCP, Listener: tcp}, {Transport: WS, Listener: ws}}}
	if mod != nil {
		mod(&cfg)
	}
	var served Backend = n.backend
	if serve != nil {
		served = serve(n.backend)
	}
	n.srv = New(cfg, served)
	// As a node with --metricslisten: the metrics of the request path are
	// part of what the tests exercise and the benchmarks measure.
	if err := n.srv.RegisterMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	n.addr, n.wsAddr = tcp.Addr().String(), ws.Addr().String()
	chain.Subscribe(n.onChain)
	if err := n.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.srv.Shutdown(contextWithTimeout(10 * time.Second))
	})
	return n
}

// onChain keeps btcd's mempool and the fee estimator in step with the
// chain, as the node does.
func (n *realNode) onChain(note *blockchain.Notification) {
	block, ok := note.Data.(*btcutil.Block)
	if !ok || n.srv == nil {
		return
	}
	switch note.Type {
	case blockchain.NTBlockConnected:
		n.mu.Lock()
		lags := n.poolLags
		if lags {
			n.lagged = append(n.lagged, block)
		}
		n.mu.Unlock()
		if !lags {
			testchain.RemoveMined(n.pool, block)
			// As the node: a block the index committed already left
			// what it double-spends in the commit's reconciliation,
			// which btcd's pool drops only now.
			if tip, ok := n.idx.LatestTip(); ok && tip.Height >= block.Height() {
				n.viewMu.Lock()
				n.srv.NotifyMempool(n.overlay.SyncKeeping(n.pool.TxDescs(), n.backend.MinedAhead))
				n.viewMu.Unlock()
			}
		}
		n.fees.RegisterBlock(block)
	case blockchain.NTBlockDisconnected:
		for _, tx := range block.Transactions()[1:] {
			n.pool.MaybeAcceptTransaction(tx, false, true)
		}
		n.fees.Rollback(block.Hash())
		n.viewMu.Lock()
		n.srv.NotifyMempool(n.overlay.Sync(n.pool.TxDescs()))
		n.viewMu.Unlock()
	}
}

// onCommit pushes the index's commits to the server, as the node does.
func (n *realNode) onCommit(c indexers.Commit) {
	n.mu.Lock()
	gate, held, handled := n.gate, n.held, n.handled
	n.mu.Unlock()
	if gate != nil {
		select {
		case held <- struct{}{}:
		default:
		}
		<-gate
		defer close(handled)
	}
	srv := n.srv
	if srv == nil {
		return
	}
	// In the node's order: the mempool view reconciled first, then the
	// scripts, then the tip the view was reconciled with.
	n.viewMu.Lock()
	var descs []*mempool.TxDesc
	for _, d := range n.pool.TxDescs() {
		if _, ok := c.Confirmed[*d.Tx.Hash()]; !ok {
			descs = append(descs, d)
		}
	}
	srv.NotifyMempool(n.overlay.SyncKeeping(descs, n.backend.MinedAhead))
	n.viewMu.Unlock()
	if c.All {
		srv.NotifyAllScriptHashes()
	} else {
		srv.NotifyScriptHashes(c.Touched)
	}
	if header, err := n.h.Chain.HeaderByHash(&c.Tip.Hash); err == nil {
		srv.NotifyTip(header, c.Tip.Height)
	}
	n.mu.Lock()
	after := n.after
	n.mu.Unlock()
	if after != nil {
		after(c)
	}
}

// coin takes one reserved mature coin.
func (n *realNode) coin() testchain.Coin {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.coins[0]
	n.coins = n.coins[1:]
	return c
}

// changeCoin describes output vout of tx paying script as spendable.
func changeCoin(tx *wire.MsgTx, vout uint32, script *testchain.Script) testchain.Coin {
	return testchain.Coin{OutPoint: wire.OutPoint{Hash: tx.TxHash(), Index: vout}, Value: tx.TxOut[vout].Value, Script: script}
}

// mine mines one block on prev (nil: the tip) holding txs and waits for
// the index.
func (n *realNode) mine(prev *btcutil.Block, txs ...*wire.MsgTx) *btcutil.Block {
	n.t.Helper()
	block := n.process(prev, time.Second, txs...)
	if err := n.idx.Sync(); err != nil {
		n.t.Fatal(err)
	}
	return block
}

// process mines one block on prev (nil: the tip) holding txs, timed after
// prev by after (blocks on one parent differ by it), and has the chain
// process it, without waiting for the index.
func (n *realNode) process(prev *btcutil.Block, after time.Duration, txs ...*wire.MsgTx) *btcutil.Block {
	n.t.Helper()
	if prev == nil {
		best := n.h.Chain.BestSnapshot()
		b, err := n.h.Chain.BlockByHash(&best.Hash)
		if err != nil {
			n.t.Fatal(err)
		}
		b.SetHeight(best.Height)
		prev = b
	}
	var utxs []*btcutil.Tx
	for _, tx := range txs {
		utxs = append(utxs, btcutil.NewTx(tx))
	}
	block, err := rpctest.CreateBlock(prev, utxs, 4, prev.MsgBlock().Header.Timestamp.Add(after), n.minerTo, nil, n.h.Params)
	if err != nil {
		n.t.Fatal(err)
	}
	// btcd sets the block's height as it accepts it (and hands the block
	// to the index then).
	if _, _, err := n.h.Chain.ProcessBlock(block, blockchain.BFNone); err != nil {
		n.t.Fatal(err)
	}
	return block
}

// mineMempool mines every mempool transaction into one block at the tip.
func (n *realNode) mineMempool() *btcutil.Block {
	var txs []*wire.MsgTx
	for _, d := range n.pool.MiningDescs() {
		txs = append(txs, d.Tx.MsgTx())
	}
	return n.mine(nil, testchain.OrderTxs(txs)...)
}

// waitNotified waits until the server's notifier has handled everything
// queued so far.
func (n *realNode) waitNotified() {
	if err := n.srv.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		n.t.Fatal(err)
	}
}

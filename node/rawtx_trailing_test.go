package node

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// gatedCounter is the metrics counter the Electrum index's writer bumps for
// every block it indexes (through OnBlock, before the block's commit): it
// holds the writer there until released, so that the index trails the
// chain by a block for as long as a test needs.
type gatedCounter struct {
	prometheus.Counter
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (c *gatedCounter) Inc() {
	c.once.Do(func() { close(c.entered) })
	<-c.release
	c.Counter.Inc()
}

// mineHeld mines a block and returns once the Electrum index's writer
// waits on it, where it stays until the test ends: the index trails the
// chain by that block. The node runs with metrics (MetricsListen).
func mineHeld(t *testing.T, n *Node) {
	t.Helper()
	gate := &gatedCounter{Counter: n.metrics.blocks, entered: make(chan struct{}), release: make(chan struct{})}
	n.metrics.blocks = gate
	t.Cleanup(func() { close(gate.release) })
	if _, err := n.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.entered:
	case <-time.After(time.Minute): // hang guard
		t.Fatal("the Electrum index's writer never reached the block")
	}
}

// confirmedWhileIndexTrails starts a node (with btcd's --txindex too when
// txIndex), confirms a transaction in a block the Electrum index is held
// before, and returns the transaction and an RPC client.
func confirmedWhileIndexTrails(t *testing.T, txIndex bool) (*btcutil.Tx, *Node) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.TxIndex = txIndex
	cfg.MetricsListen = "127.0.0.1:0"
	n := startNode(t, cfg)
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatal(err)
	}
	spend := spendCoinbase(t, n, 1, 10_000)
	if _, err := n.ProcessTx(spend); err != nil {
		t.Fatal(err)
	}
	if err := n.index.electrum.Sync(); err != nil {
		t.Fatal(err)
	}
	mineHeld(t, n)
	if n.txMemPool.IsTransactionInPool(spend.Hash()) {
		t.Fatal("the transaction is still in the mempool after being mined")
	}
	return spend, n
}

// TestGetRawTransactionTxIndexWhileElectrumTrails: with --txindex beside the
// Electrum index, a transaction of a block the Electrum index has not
// reached yet (its catch-up, or a block just connected) is answered from
// btcd's transaction index, which the chain keeps in step, as btcd does.
func TestGetRawTransactionTxIndexWhileElectrumTrails(t *testing.T) {
	spend, n := confirmedWhileIndexTrails(t, true)
	raw, err := rpcClient(t, n.RPCAddrs()[0].String()).GetRawTransaction(spend.Hash())
	if err != nil || *raw.Hash() != *spend.Hash() {
		t.Fatalf("getrawtransaction while the Electrum index trails, with --txindex: %v, %v", raw, err)
	}
}

// TestGetRawTransactionWhileElectrumTrailsSaysSo: without --txindex, the
// same transaction is not answered "No information available about
// transaction", which lnd's btcd notifier takes for "not confirmed" and
// then never scans the blocks, but with the index's height: lnd scans.
func TestGetRawTransactionWhileElectrumTrailsSaysSo(t *testing.T) {
	spend, n := confirmedWhileIndexTrails(t, false)
	_, err := rpcClient(t, n.RPCAddrs()[0].String()).GetRawTransactionVerbose(spend.Hash())
	var rerr *btcjson.RPCError
	if !errors.As(err, &rerr) || rerr.Code != btcjson.ErrRPCNoTxInfo ||
		strings.Contains(rerr.Message, "No information available") || !strings.Contains(rerr.Message, "Electrum index is at height") {
		t.Fatalf("getrawtransaction while the Electrum index trails: %v, want -5 saying the index cannot tell yet", err)
	}
}

package node

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
)

// TestFeeEstimatorObservesTxsReaddedByReorg: btcd's pool records every
// transaction it adds with the fee estimator, including the transactions of
// a disconnected block that netsync puts back with MaybeAcceptTransaction;
// the node, which feeds the estimator itself, observes those too.
//
// Here 10 transactions at 10 sat/vB reach the node only in a block (as a
// miner's or a peer's block brings transactions the node never had in its
// pool); a 2-block branch replaces that block, they return to the pool and
// the next block mines them. btcd's estimator observes them at the fork
// height and bins them as confirmed within 3 blocks: every target answers
// 10 sat/vB (0.0001 BTC/kB).
func TestFeeEstimatorObservesTxsReaddedByReorg(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 120) // coinbases 1..20 mature
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")

	blockAt := func(h int32) *btcutil.Block {
		t.Helper()
		b, err := n.Chain().BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		b.SetHeight(h)
		return b
	}
	mine := func(prev *btcutil.Block, txs []*btcutil.Tx) *btcutil.Block {
		t.Helper()
		b, err := rpctest.CreateBlock(prev, txs, 4, prev.MsgBlock().Header.Timestamp.Add(2*time.Second),
			testMiningAddr(t), nil, n.Chain().ChainParams())
		if err != nil {
			t.Fatal(err)
		}
		b.SetHeight(prev.Height() + 1) // before the chain shares it
		if _, _, err := n.Chain().ProcessBlock(b, blockchain.BFNone); err != nil {
			t.Fatal(err)
		}
		return b
	}

	forkHeight := n.Chain().BestSnapshot().Height
	fork := blockAt(forkHeight)
	var txs []*btcutil.Tx
	for h := int32(1); h <= 10; h++ {
		txs = append(txs, spendCoinbase(t, n, h, 1_920)) // 192 vB: 10 sat/vB
	}
	// A block with the 10 transactions, which never were in the pool.
	mine(fork, txs)
	// A 2-block branch from the fork replaces it: netsync puts the 10
	// transactions back into the pool.
	b1 := mine(fork, nil)
	b2 := mine(b1, nil)
	if n.Chain().BestSnapshot().Hash != *b2.Hash() {
		t.Fatal("precondition: the branch did not become the chain")
	}
	for _, tx := range txs {
		if !n.TxPool().IsTransactionInPool(tx.Hash()) {
			t.Fatalf("precondition: %v did not return to the pool", tx.Hash())
		}
	}
	// The next block mines them.
	generate(t, n, 1)
	for _, tx := range txs {
		if n.TxPool().IsTransactionInPool(tx.Hash()) {
			t.Fatalf("precondition: %v was not mined", tx.Hash())
		}
	}

	rate, err := n.FeeEstimator().EstimateFee(1)
	fee, _ := c.call("blockchain.estimatefee", 1).(float64)
	if err != nil || rate < 0.00009 || fee < 0.00009 {
		t.Fatalf("after 10 transactions at 10 sat/vB returned to the pool by a reorganization and were mined: "+
			"estimator EstimateFee(1) = %v (err %v), Electrum blockchain.estimatefee 1 = %v; btcd's own node "+
			"(its pool observing what netsync re-adds) answers about 0.0001 BTC/kB", rate, err, fee)
	}
}

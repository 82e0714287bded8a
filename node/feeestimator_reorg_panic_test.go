package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
)

// TestFeeEstimatorReminedTxThenReorgDoesNotPanic: a transaction mined in
// the deepest block of a 3-block reorganization (deeper than the fee
// estimator's 2 rollbacks) returns to the pool and is mined again later; a
// 2-block reorganization then replaces that block and the one before it.
// The node survives both: an estimator that cannot take a block back is
// replaced, where feeding it on would have its rollback stack out of step
// with its height, and btcd's FeeEstimator.rollback panic ("illegal state:
// cannot rollback dropped transaction") inside ProcessBlock.
func TestFeeEstimatorReminedTxThenReorgDoesNotPanic(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	generate(t, n, 215) // coinbases 1..116 mature
	next := int32(1)
	newTx := func(fee int64) *btcutil.Tx {
		t.Helper()
		tx := spendCoinbase(t, n, next, fee)
		next++
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	// Fill the estimator's 1-block bin (100 entries, at most 10 a block).
	for r := 0; r < 10; r++ {
		for i := 0; i < 10; i++ {
			newTx(1_920)
		}
		generate(t, n, 1)
	}

	// T is mined in the block after F, then two more blocks follow.
	forkHeight := n.Chain().BestSnapshot().Height
	tT := newTx(1_920)
	generate(t, n, 3)

	// mine builds count blocks on prev with txs in the first one and
	// hands them to the chain as a peer's blocks would be.
	mine := func(prev *btcutil.Block, count int, txs []*btcutil.Tx) (last *btcutil.Block, perr error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				perr = fmt.Errorf("panic in ProcessBlock: %v", r)
			}
		}()
		for i := 0; i < count; i++ {
			var incl []*btcutil.Tx
			if i == 0 {
				incl = txs
			}
			b, err := rpctest.CreateBlock(prev, incl, 4, prev.MsgBlock().Header.Timestamp.Add(2*time.Second),
				testMiningAddr(t), nil, n.Chain().ChainParams())
			if err != nil {
				t.Fatal(err)
			}
			b.SetHeight(prev.Height() + 1) // before the chain shares it
			if _, _, err := n.Chain().ProcessBlock(b, blockchain.BFNone); err != nil {
				t.Fatal(err)
			}
			prev = b
		}
		return prev, nil
	}
	blockAt := func(h int32) *btcutil.Block {
		t.Helper()
		b, err := n.Chain().BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		b.SetHeight(h)
		return b
	}

	// A 4-block branch from F replaces the 3 blocks: T returns to the pool.
	tip4, err := mine(blockAt(forkHeight), 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n.Chain().BestSnapshot().Hash != *tip4.Hash() {
		t.Fatal("the branch did not become the chain")
	}
	if !n.TxPool().IsTransactionInPool(tT.Hash()) {
		t.Fatal("precondition: T did not return to the pool")
	}

	// Ten new transactions confirmed in the next block, then T re-mined
	// in the block after it.
	var ten []*btcutil.Tx
	for i := 0; i < 10; i++ {
		ten = append(ten, newTx(1_920))
	}
	b5, err := mine(tip4, 1, ten)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mine(b5, 1, []*btcutil.Tx{tT}); err != nil {
		t.Fatal(err)
	}

	// A peer's 3-block branch from tip4 replaces those two blocks.
	if _, err := mine(tip4, 3, nil); err != nil {
		t.Fatalf("a 2-block reorganization after T was mined again: %v\n(the node's chain callback registers "+
			"blocks with a fee estimator whose RegisterBlock failed mid-block; estimator height %d, chain %d)",
			err, n.FeeEstimator().LastKnownHeight(), n.Chain().BestSnapshot().Height)
	}
}

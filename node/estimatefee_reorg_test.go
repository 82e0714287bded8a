package node

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/integration/rpctest"
)

// TestEstimateFeeFollowsChainAfterReorg: blockchain.estimatefee keeps
// following the chain after a reorganization of 3 blocks, deeper than the
// estimator's 2 rollbacks. btcd's netsync, left to register blocks, starts
// an estimator of its own when a registration fails, and the one the pool
// feeds and estimatefee reads then sees no block again.
func TestEstimateFeeFollowsChainAfterReorg(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 130) // coinbases 1..30 mature
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	next := int32(1)
	submit := func(count int, fee int64) {
		t.Helper()
		for i := 0; i < count; i++ {
			if _, err := n.ProcessTx(spendCoinbase(t, n, next, fee)); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}

	// 5 transactions of 192 vB at 10 sat/vB, confirmed in the next block,
	// then 3 empty blocks.
	submit(5, 1_920)
	generate(t, n, 1)
	forkHeight := n.Chain().BestSnapshot().Height
	generate(t, n, 3)
	before := c.call("blockchain.estimatefee", 1)

	// A branch of 4 blocks from the fork replaces the 3 empty ones (as a
	// peer's longer chain does).
	prevHash, err := n.Chain().BlockHashByHeight(forkHeight)
	if err != nil {
		t.Fatal(err)
	}
	prev, err := n.Chain().BlockByHash(prevHash)
	if err != nil {
		t.Fatal(err)
	}
	prev.SetHeight(forkHeight)
	for i := 0; i < 4; i++ {
		b, err := rpctest.CreateBlock(prev, nil, 4, prev.MsgBlock().Header.Timestamp.Add(2*time.Second),
			testMiningAddr(t), nil, n.Chain().ChainParams())
		if err != nil {
			t.Fatal(err)
		}
		b.SetHeight(forkHeight + int32(i) + 1) // before the chain shares it
		if _, _, err := n.Chain().ProcessBlock(b, blockchain.BFNone); err != nil {
			t.Fatal(err)
		}
		prev = b
	}
	syncIndex(t, n)
	if best := n.Chain().BestSnapshot(); best.Hash != *prev.Hash() {
		t.Fatalf("the branch did not become the chain")
	}

	// 20 transactions at 100 sat/vB, each confirmed in the block after it
	// came (10 a block: the estimator's replacement cap per bin).
	for round := 0; round < 2; round++ {
		submit(10, 19_200)
		generate(t, n, 1)
	}
	after := c.call("blockchain.estimatefee", 1)
	f, _ := after.(float64)
	// 5 at 10 sat/vB and 20 at 100 sat/vB, all confirmed within one block:
	// btcd's estimate for 1 block is 100 sat/vB, 0.001 BTC/kvB (as it is
	// without the reorganization).
	if f < 0.0005 {
		t.Fatalf("estimatefee(1) = %v after 20 transactions at 100 sat/vB confirmed in the next block, want about 0.001 "+
			"(before the reorganization: %v); the estimator estimatefee reads is at height %d, the chain at %d",
			after, before, n.FeeEstimator().LastKnownHeight(), n.Chain().BestSnapshot().Height)
	}
}

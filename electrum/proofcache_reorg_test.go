package electrum

import (
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// hashStall is the node's real backend with one hook: armed, the first
// read of the block hash at height at stops until the test resumes it, so
// the test can reorganize the chain in the middle of a cp_height proof's
// reads (the interleaving a reorganization racing a request has).
type hashStall struct {
	*IndexBackend
	mu      sync.Mutex
	at      int32
	armed   bool
	stalled chan struct{}
	resume  chan struct{}
}

func (b *hashStall) BlockHash(height int32) (chainhash.Hash, error) {
	b.stall(height)
	return b.IndexBackend.BlockHash(height)
}

func (b *hashStall) BlockHeader(height int32) (wire.BlockHeader, error) {
	b.stall(height)
	return b.IndexBackend.BlockHeader(height)
}

func (b *hashStall) stall(height int32) {
	b.mu.Lock()
	stall := b.armed && height == b.at
	if stall {
		b.armed = false
	}
	b.mu.Unlock()
	if stall {
		b.stalled <- struct{}{}
		<-b.resume
	}
}

// TestHeaderProofCacheAfterRacingReorg: a cp_height proof whose reads of
// a 1,024-block chunk straddle a reorganization (heights up to 2045 read
// on the old branch, 2046 and 2047 on the new) is read again, and the
// mixed chunk's root is not cached under the new branch's block 2047:
// every later proof over the new chain matches the chain's block hashes
// (ElectrumX's merkle.py branch_and_root). Cached, it made every proof
// with cp_height >= 2047 wrong until one inside the chunk recomputed it.
func TestHeaderProofCacheAfterRacingReorg(t *testing.T) {
	n, sb, c := proofStallNode(t)
	sb.mu.Lock()
	sb.at, sb.armed = 2046, true
	sb.mu.Unlock()
	ch := c.start("blockchain.block.header", 0, 2049)
	select {
	case <-sb.stalled:
	case <-time.After(60 * time.Second):
		t.Fatal("the proof never read height 2046")
	}
	// The chain reorganizes 5 blocks deep: 2045..2049 replaced, 2050 added.
	if _, err := n.h.Reorg(newRand(11), 5, testchain.BlockSpec{}); err != nil {
		t.Fatal(err)
	}
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	close(sb.resume)
	c.await(ch) // answered from whichever chain: a request racing a reorg

	// Later requests, on the settled new chain.
	hashes := chainHashes(t, n)
	newTip := len(hashes) - 1
	for _, q := range [][2]int{{0, newTip}, {100, 2047}, {1000, 2048}, {5, newTip}} {
		var p proofResult
		c.must(&p, "blockchain.block.header", q[0], q[1])
		wantBr, wantRoot := exBranchAndRoot(hashes[:q[1]+1], q[0])
		if p.Root != wantRoot || !sameHashes(p.Branch, wantBr) {
			t.Errorf("block.header(%d, %d) after the reorganization: root %s, the chain's %s (branch matches: %v)",
				q[0], q[1], p.Root, wantRoot, sameHashes(p.Branch, wantBr))
		}
	}
}

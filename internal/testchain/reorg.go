package testchain

import (
	"fmt"
	"math/rand"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// Reorg builds a competing branch off the main chain block depth blocks below
// the tip and makes the chain switch to it: depth blocks give the branch the
// same work as the main chain (btcd stays on the first-seen branch), one more
// makes it longer. It returns the branch's blocks and checks that the chain
// ends on the branch's last block with the wallet following it.
func (h *Harness) Reorg(rng *rand.Rand, depth int, spec BlockSpec) ([]*btcutil.Block, error) {
	oldTip, height := h.Tip()
	if depth < 1 || int32(depth) > height {
		return nil, fmt.Errorf("testchain: cannot reorganize %d blocks of a chain of height %d", depth, height)
	}
	forkHash, err := h.Chain.BlockHashByHeight(height - int32(depth))
	if err != nil {
		return nil, err
	}
	parent := *forkHash
	var branch []*btcutil.Block
	for i := 0; i <= depth; i++ {
		b, err := h.MineOn(parent, rng, spec)
		if err != nil {
			return branch, err
		}
		branch = append(branch, b)
		parent = *b.Hash()
		tip, _ := h.Tip()
		if i < depth && tip != oldTip {
			return branch, fmt.Errorf("testchain: chain left its tip for a branch with less work")
		}
	}
	if tip, _ := h.Tip(); tip != parent {
		return branch, fmt.Errorf("testchain: chain did not switch to the longer branch (tip %v, branch %v)", tip, parent)
	}
	return branch, nil
}

// InvalidateBlock marks a block and its descendants invalid (btcd may then
// switch to another branch) and moves the wallet to the new main chain.
func (h *Harness) InvalidateBlock(hash chainhash.Hash) error {
	if err := h.Chain.InvalidateBlock(&hash); err != nil {
		return err
	}
	return h.syncWallet()
}

// ReconsiderBlock clears the invalid mark of a block and its descendants
// (btcd may then switch back to them) and moves the wallet to the new main
// chain.
func (h *Harness) ReconsiderBlock(hash chainhash.Hash) error {
	if err := h.Chain.ReconsiderBlock(&hash); err != nil {
		return err
	}
	return h.syncWallet()
}

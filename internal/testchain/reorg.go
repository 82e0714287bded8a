package testchain

import (
	"fmt"
	"math/rand"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Reorg builds a competing branch off the main chain block depth blocks below
// the tip and makes the chain switch to it: depth blocks give the branch the
// same work as the main chain (btcd stays on the first-seen branch), one more
// makes it longer. It returns the branch's blocks and checks that the chain
// ends on the branch's last block with the wallet following it.
func (h *Harness) Reorg(rng *rand.Rand, depth int, spec BlockSpec) ([]*btcutil.Block, error) {
	return h.reorg(rng, depth, spec, false)
}

// ReorgReplay is Reorg where the first block of the branch re-includes, in
// their order, the transactions of the blocks the branch replaces (those
// still valid at its height), as miners re-mine the transactions of a
// reorganized-away block: the same txids move to other heights and
// positions.
func (h *Harness) ReorgReplay(rng *rand.Rand, depth int, spec BlockSpec) ([]*btcutil.Block, error) {
	return h.reorg(rng, depth, spec, true)
}

// reorg implements Reorg and ReorgReplay.
func (h *Harness) reorg(rng *rand.Rand, depth int, spec BlockSpec, replay bool) ([]*btcutil.Block, error) {
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
	var replayed []*wire.MsgTx
	if replay {
		for ht := height - int32(depth) + 1; ht <= height; ht++ {
			b, err := h.Chain.BlockByHeight(ht)
			if err != nil {
				return nil, err
			}
			replayed = append(replayed, b.MsgBlock().Transactions[1:]...)
		}
	}
	for i := 0; i <= depth; i++ {
		var b *btcutil.Block
		var err error
		if i == 0 && replay {
			b, err = h.mineReplay(parent, rng, spec, replayed)
		} else {
			b, err = h.MineOn(parent, rng, spec)
		}
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
	if err := h.syncIndex(); err != nil {
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
	if err := h.syncIndex(); err != nil {
		return err
	}
	return h.syncWallet()
}

// mineReplay mines on parent a block holding those of txs that are valid
// there: every input is a wallet coin (mature at the new height) or an output
// of an earlier kept transaction.
func (h *Harness) mineReplay(parent chainhash.Hash, rng *rand.Rand, spec BlockSpec, txs []*wire.MsgTx) (*btcutil.Block, error) {
	block, rec, err := h.buildWith(parent, rng, spec, func(height int32, rec *blockRecord) ([]*wire.MsgTx, int64) {
		maturity := int32(h.Params.CoinbaseMaturity)
		fresh := make(map[wire.OutPoint]Coin)
		var order []wire.OutPoint
		used := make(map[wire.OutPoint]bool)
		var kept []*wire.MsgTx
		var fees int64
		for _, tx := range txs {
			ok := true
			var in int64
			for _, txIn := range tx.TxIn {
				op := txIn.PreviousOutPoint
				if c, isFresh := fresh[op]; isFresh {
					in += c.Value
					continue
				}
				i, inWallet := h.wallet.pos[op]
				if !inWallet || used[op] {
					ok = false
					break
				}
				c := h.wallet.coins[i]
				if c.Coinbase && height-c.Height < maturity {
					ok = false
					break
				}
				in += c.Value
			}
			if !ok {
				continue
			}
			for _, txIn := range tx.TxIn {
				op := txIn.PreviousOutPoint
				if _, isFresh := fresh[op]; isFresh {
					delete(fresh, op)
					continue
				}
				used[op] = true
				rec.spent = append(rec.spent, h.wallet.coins[h.wallet.pos[op]])
			}
			txid := tx.TxHash()
			var out int64
			for i, o := range tx.TxOut {
				out += o.Value
				if s := h.byScript[string(o.PkScript)]; s != nil {
					op := wire.OutPoint{Hash: txid, Index: uint32(i)}
					fresh[op] = Coin{OutPoint: op, Value: o.Value, Height: height, Script: s}
					order = append(order, op)
				}
			}
			fees += in - out
			kept = append(kept, tx)
		}
		for _, op := range order {
			if c, ok := fresh[op]; ok {
				rec.created = append(rec.created, c)
			}
		}
		return kept, fees
	})
	if err != nil {
		return nil, err
	}
	if err := h.Submit(block, rec); err != nil {
		return nil, err
	}
	return block, nil
}

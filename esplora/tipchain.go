package esplora

import (
	"slices"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// tipChain names the blocks of the chain an index tip ends. Up to the last
// block it shares with btcd's main chain they are the main chain's; above
// it, while btcd has reorganized and the index has yet to undo, they are
// the blocks of the branch the index is on, so that every answer describes
// the index tip's chain as /tx/:txid/status does.
type tipChain struct {
	s *Server
	// fork is the last block of the tip's chain in the main chain, at
	// height forkHeight; above[i] is the tip's block at forkHeight+1+i.
	fork       chainhash.Hash
	forkHeight int32
	above      []chainhash.Hash
}

func (s *Server) tipChain(tip indexers.Tip) (*tipChain, error) {
	c := &tipChain{s: s, fork: tip.Hash, forkHeight: tip.Height}
	for c.forkHeight > 0 && !s.chain.MainChainHasBlock(&c.fork) {
		header, err := s.chain.HeaderByHash(&c.fork)
		if err != nil {
			return nil, err
		}
		c.above = append(c.above, c.fork)
		c.fork, c.forkHeight = header.PrevBlock, c.forkHeight-1
	}
	slices.Reverse(c.above)
	return c, nil
}

// hash returns the hash of the tip chain's block at height.
func (c *tipChain) hash(height int32) (chainhash.Hash, bool) {
	if height > c.forkHeight {
		if i := int(height - c.forkHeight - 1); i < len(c.above) {
			return c.above[i], true
		}
		return chainhash.Hash{}, false
	}
	hash, err := c.s.chain.BlockHashByHeight(height)
	if err != nil {
		return chainhash.Hash{}, false
	}
	return *hash, true
}

// height returns the height of the tip chain's block hash; false for a
// block of another chain.
func (c *tipChain) height(hash *chainhash.Hash) (int32, bool) {
	if i := slices.Index(c.above, *hash); i >= 0 {
		return c.forkHeight + 1 + int32(i), true
	}
	height, err := c.s.chain.BlockHeightByHash(hash)
	return height, err == nil && height <= c.forkHeight
}

// top returns the height of the tip.
func (c *tipChain) top() int32 { return c.forkHeight + int32(len(c.above)) }

// block reads the tip chain's block at height, hash: one btcd has left is
// read from its database.
func (c *tipChain) block(hash *chainhash.Hash, height int32) (*btcutil.Block, error) {
	if height <= c.forkHeight {
		return c.s.chain.BlockByHash(hash)
	}
	b, err := c.s.index.StoredBlock(*hash)
	if err == nil {
		b.SetHeight(height)
	}
	return b, err
}

// still reports whether the hashes hash returned are the tip chain's: the
// main chain still holds the last block it shares with the tip's, and so
// all blocks below it.
func (c *tipChain) still() bool { return c.s.chain.MainChainHasBlock(&c.fork) }

package node

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mining/cpuminer"
)

// Generate mines n blocks on top of the tip with btcd's CPU miner (regtest
// and simnet only) and returns their hashes. payTo is the coinbase address;
// nil means the configured --miningaddr addresses.
func (n *Node) Generate(count uint32, payTo address.Address) ([]*chainhash.Hash, error) {
	if !n.started.Load() {
		return nil, errNotStarted
	}
	if !n.params.GenerateSupported {
		return nil, fmt.Errorf("no support for `generate` on the current network, %s, as it's unlikely to be possible to mine a block with the CPU", n.params.Net)
	}
	if count == 0 {
		return nil, errors.New("please request a nonzero number of blocks to generate")
	}
	miner := n.cpuMiner
	if payTo != nil {
		if !payTo.IsForNet(n.params) {
			return nil, fmt.Errorf("address %v is not for %s", payTo, n.params.Name)
		}
		// A miner of its own for this call; it shares the template
		// generator and submits through the sync manager like the
		// configured one.
		miner = cpuminer.New(&cpuminer.Config{
			ChainParams:            n.params,
			BlockTemplateGenerator: n.tmplGen,
			MiningAddrs:            []address.Address{payTo},
			ProcessBlock:           n.syncManager.ProcessBlock,
			ConnectedCount:         n.ConnectedCount,
			IsCurrent:              n.syncManager.IsCurrent,
		})
	} else if len(n.cfg.miningAddrs) == 0 {
		return nil, errors.New("no payment addresses specified via --miningaddr")
	}
	n.generateMu.Lock()
	defer n.generateMu.Unlock()
	return miner.GenerateNBlocks(count)
}

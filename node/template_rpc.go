package node

import (
	"math/rand/v2"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

var _ rpcext.TemplateBackend = rpcBackend{}

// NewBlockTemplate builds a block template with btcd's generator.
func (b rpcBackend) NewBlockTemplate(payTo address.Address) (*mining.BlockTemplate, error) {
	return b.tmplGen.NewBlockTemplate(payTo)
}

// UpdateBlockTime moves a template's timestamp to now.
func (b rpcBackend) UpdateBlockTime(msgBlock *wire.MsgBlock) error {
	return b.tmplGen.UpdateBlockTime(msgBlock)
}

// MiningAddress returns a random configured mining address, or nil.
func (b rpcBackend) MiningAddress() address.Address {
	addrs := b.cfg.miningAddrs
	if len(addrs) == 0 {
		return nil
	}
	return addrs[rand.IntN(len(addrs))]
}

// MempoolLastUpdated is when the mempool last changed.
func (b rpcBackend) MempoolLastUpdated() time.Time { return b.txMemPool.LastUpdated() }

// IsCurrent reports whether the node believes it is synced.
func (b rpcBackend) IsCurrent() bool { return b.syncManager.IsCurrent() }

// AdjustedTime is the network-adjusted time.
func (b rpcBackend) AdjustedTime() time.Time { return b.timeSource.AdjustedTime() }

// TimeOffset is the peers' median time's offset from the clock (getinfo).
func (b rpcBackend) TimeOffset() time.Duration { return b.timeSource.Offset() }

// CheckConnectBlockTemplate checks a proposed block against the tip.
func (b rpcBackend) CheckConnectBlockTemplate(block *btcutil.Block) error {
	return b.chain.CheckConnectBlockTemplate(block)
}

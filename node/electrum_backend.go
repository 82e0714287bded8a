package node

import (
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// electrumBackend returns what the Electrum server reads the node through:
// electrum's IndexBackend over the chain, the Electrum index, the mempool
// view and btcd's pool, relaying through the node.
func (n *Node) electrumBackend(idx *indexers.ElectrumIndex) *electrum.IndexBackend {
	if n.indexBackend == nil {
		n.indexBackend = &electrum.IndexBackend{
			Params:  n.params,
			Chain:   n.chain,
			Index:   idx,
			Mempool: n.mempoolView,
			Pool:    n.txMemPool,
			Relay:   electrumRelay{n},
		}
	}
	return n.indexBackend
}

// electrumRelay is the node as the Electrum server's electrum.TxRelay.
type electrumRelay struct{ n *Node }

var _ electrum.TxRelay = electrumRelay{}

// Broadcast validates tx into the mempool with btcd's policy and relays
// it; a policy or consensus rejection wraps electrum.ErrRejected. One the
// pool holds already (which the server answers as accepted) is announced
// again.
func (r electrumRelay) Broadcast(tx *wire.MsgTx) error {
	btx := btcutil.NewTx(tx)
	_, err := r.n.ProcessTx(btx)
	if err == nil {
		return nil
	}
	if r.n.txMemPool.IsTransactionInPool(btx.Hash()) {
		r.n.reannounce(*btx.Hash())
	}
	var ruleErr mempool.RuleError
	if errors.As(err, &ruleErr) {
		return fmt.Errorf("%w: %w", electrum.ErrRejected, err)
	}
	return err
}

// EstimateFee returns btcd's fee estimate in BTC/kvB by the Electrum
// server's rule (electrum.EstimateFee); btcd's estimator has one mode.
func (r electrumRelay) EstimateFee(blocks int, _ string) (float64, error) {
	return electrum.EstimateFee(r.n.fees.current(), blocks, r.RelayFee()), nil
}

// RelayFee returns the minimum relay fee in BTC/kvB.
func (r electrumRelay) RelayFee() float64 { return r.n.cfg.minRelayTxFee.ToBTC() }

// MempoolInfo returns the relay policy: btcd has no dynamic mempool minimum
// fee, so every value is the minimum relay fee.
func (r electrumRelay) MempoolInfo() electrum.MempoolInfo {
	fee := r.RelayFee()
	return electrum.MempoolInfo{MempoolMinFee: fee, MinRelayTxFee: fee, IncrementalRelayFee: fee}
}

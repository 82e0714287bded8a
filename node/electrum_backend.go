package node

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// electrumBackend is what the Electrum server reads the node through
// (electrum.Backend): headers from the chain, histories from the Electrum
// index, unconfirmed transactions from the mempool view, relay through the
// node's mempool.
type electrumBackend struct {
	n   *Node
	idx *indexers.ElectrumIndex
	mp  *indexers.Mempool
}

var _ electrum.Backend = (*electrumBackend)(nil)

// ChainParams returns the network.
func (b *electrumBackend) ChainParams() *chaincfg.Params { return b.n.params }

// ChainTip returns the index tip: headers and histories served to clients
// always come from the same block.
func (b *electrumBackend) ChainTip() (indexers.Tip, error) { return b.idx.Tip() }

// BlockHeader returns the main-chain header at height.
func (b *electrumBackend) BlockHeader(height int32) (wire.BlockHeader, error) {
	hash, err := b.BlockHash(height)
	if err != nil {
		return wire.BlockHeader{}, err
	}
	return b.n.chain.HeaderByHash(&hash)
}

// BlockHash returns the hash of the main-chain block at height, or
// indexers.ErrNotFound.
func (b *electrumBackend) BlockHash(height int32) (chainhash.Hash, error) {
	if height < 0 {
		return chainhash.Hash{}, indexers.ErrNotFound
	}
	hash, err := b.n.chain.BlockHashByHeight(height)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("%w: no block at height %d", indexers.ErrNotFound, height)
	}
	return *hash, nil
}

// History returns the confirmed history of sh.
func (b *electrumBackend) History(sh indexers.ScriptHash, limit int) ([]indexers.HistoryEntry, indexers.Tip, error) {
	return b.idx.History(sh, limit)
}

// Unspent returns the confirmed unspent outputs of sh.
func (b *electrumBackend) Unspent(sh indexers.ScriptHash, limit int) ([]indexers.Unspent, indexers.Tip, error) {
	return b.idx.Unspent(sh, limit)
}

// Balance returns the confirmed balance of sh.
func (b *electrumBackend) Balance(sh indexers.ScriptHash) (int64, indexers.Tip, error) {
	return b.idx.Balance(sh)
}

// Status returns the hash state after the confirmed part of sh's status.
func (b *electrumBackend) Status(sh indexers.ScriptHash, limit int) (electrum.StatusHasher, indexers.Tip, error) {
	h, tip, err := b.idx.Status(sh, limit)
	if err != nil {
		return nil, tip, err
	}
	return h, tip, nil
}

// Statuses reads many statuses from the index in one view.
func (b *electrumBackend) Statuses(shs []indexers.ScriptHash, limit int) ([]electrum.StatusHasher, []error, indexers.Tip, error) {
	return electrum.IndexStatuses(b.idx, shs, limit)
}

// TxLocation returns where a confirmed transaction is.
func (b *electrumBackend) TxLocation(txid chainhash.Hash) (indexers.TxLocation, error) {
	return b.idx.TxLocation(txid)
}

// BlockTxIDs returns the txids of the main-chain block at height.
func (b *electrumBackend) BlockTxIDs(height int32) ([]chainhash.Hash, error) {
	return b.idx.BlockTxIDs(height)
}

// RawTx returns a confirmed transaction with witness.
func (b *electrumBackend) RawTx(txid chainhash.Hash) ([]byte, indexers.TxLocation, error) {
	return b.idx.RawTx(txid)
}

// MempoolEntries returns the unconfirmed transactions touching sh.
func (b *electrumBackend) MempoolEntries(sh indexers.ScriptHash) []electrum.MempoolEntry {
	entries := b.mp.Entries(sh)
	out := make([]electrum.MempoolEntry, len(entries))
	for i, e := range entries {
		out[i] = electrum.MempoolEntry{TxHash: e.TxHash, Height: e.Height, Fee: e.Fee}
	}
	return out
}

// MempoolBalance returns the unconfirmed balance change of sh.
func (b *electrumBackend) MempoolBalance(sh indexers.ScriptHash) int64 { return b.mp.Balance(sh) }

// MempoolUnspent returns the unconfirmed outputs paying sh not spent in the
// mempool.
func (b *electrumBackend) MempoolUnspent(sh indexers.ScriptHash) []indexers.Unspent {
	return b.mp.Unspent(sh)
}

// MempoolIsSpent reports whether a mempool transaction spends op.
func (b *electrumBackend) MempoolIsSpent(op wire.OutPoint) bool { return b.mp.IsSpent(op) }

// MempoolTx returns an unconfirmed transaction from btcd's pool.
func (b *electrumBackend) MempoolTx(txid chainhash.Hash) ([]byte, bool) {
	tx, err := b.n.txMemPool.FetchTransaction(&txid)
	if err != nil {
		return nil, false
	}
	var buf bytes.Buffer
	if err := tx.MsgTx().Serialize(&buf); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// FeeHistogram returns the mempool fee histogram.
func (b *electrumBackend) FeeHistogram() [][2]float64 { return b.mp.FeeHistogram() }

// Broadcast validates tx into the mempool with btcd's policy and relays
// it; a policy or consensus rejection wraps electrum.ErrRejected.
func (b *electrumBackend) Broadcast(tx *wire.MsgTx) error {
	_, err := b.n.ProcessTx(btcutil.NewTx(tx))
	if err == nil {
		return nil
	}
	var ruleErr mempool.RuleError
	if errors.As(err, &ruleErr) {
		return fmt.Errorf("%w: %v", electrum.ErrRejected, err)
	}
	return err
}

// EstimateFee returns btcd's fee estimate in BTC/kvB (btcd's estimator has
// one mode, so mode is ignored).
func (b *electrumBackend) EstimateFee(blocks int, _ string) (float64, error) {
	if blocks <= 0 {
		return 0, errors.New("number of blocks must be positive")
	}
	rate, err := b.n.feeEstimator.EstimateFee(uint32(blocks))
	if err != nil {
		return 0, err
	}
	return float64(rate), nil
}

// RelayFee returns the minimum relay fee in BTC/kvB.
func (b *electrumBackend) RelayFee() float64 { return b.n.cfg.minRelayTxFee.ToBTC() }

// MempoolInfo returns the relay policy: btcd has no dynamic mempool minimum
// fee, so every value is the minimum relay fee.
func (b *electrumBackend) MempoolInfo() electrum.MempoolInfo {
	fee := b.RelayFee()
	return electrum.MempoolInfo{MempoolMinFee: fee, MinRelayTxFee: fee, IncrementalRelayFee: fee}
}

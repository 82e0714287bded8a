package electrum

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
)

// IndexBackend is a Backend assembled from the project's real parts: btcd's
// chain for headers, the Electrum index for confirmed data, the index's
// mempool overlay and btcd's transaction pool for unconfirmed data, and a
// TxRelay for broadcasts and fee policy (PoolRelay is a ready one). The node
// fills the fields; all must be set.
type IndexBackend struct {
	Params  *chaincfg.Params
	Chain   *blockchain.BlockChain
	Index   *indexers.ElectrumIndex
	Mempool *indexers.Mempool
	Pool    *mempool.TxPool
	Relay   TxRelay
}

var _ Backend = (*IndexBackend)(nil)

// ChainParams implements ChainSource.
func (b *IndexBackend) ChainParams() *chaincfg.Params { return b.Params }

// ChainTip implements ChainSource with the index tip: headers and histories
// served to clients always come from the same block (the chain's own tip
// moves a moment before the index's rows become visible to readers).
func (b *IndexBackend) ChainTip() (indexers.Tip, error) { return b.Index.Tip() }

// LatestTip returns the block the index last wrote, without a database read
// (see latestTipper).
func (b *IndexBackend) LatestTip() (indexers.Tip, bool) { return b.Index.LatestTip() }

// BlockHeader implements ChainSource with BlockHash's block.
func (b *IndexBackend) BlockHeader(height int32) (wire.BlockHeader, error) {
	hash, err := b.BlockHash(height)
	if err != nil {
		return wire.BlockHeader{}, err
	}
	return b.Chain.HeaderByHash(&hash)
}

// BlockHash implements ChainSource: the block at height of the chain the
// index holds. That is btcd's main chain, but for a moment in a
// reorganization, until the writer has undone the blocks it took: then
// the index's own block rows name the blocks its histories are of.
func (b *IndexBackend) BlockHash(height int32) (chainhash.Hash, error) {
	if tip, ok := b.Index.LatestTip(); ok && height <= tip.Height {
		if main, err := b.Chain.BlockHashByHeight(tip.Height); err != nil || *main != tip.Hash {
			hash, _, err := b.Index.Block(height)
			if err != nil {
				return chainhash.Hash{}, indexers.ErrNotFound
			}
			return hash, nil
		}
	}
	hash, err := b.Chain.BlockHashByHeight(height)
	if err != nil {
		return chainhash.Hash{}, indexers.ErrNotFound
	}
	return *hash, nil
}

// History implements IndexReader.
func (b *IndexBackend) History(sh indexers.ScriptHash, limit int) ([]indexers.HistoryEntry, indexers.Tip, error) {
	return b.Index.History(sh, limit)
}

// Unspent implements IndexReader.
func (b *IndexBackend) Unspent(sh indexers.ScriptHash, limit int) ([]indexers.Unspent, indexers.Tip, error) {
	return b.Index.Unspent(sh, limit)
}

// Balance implements IndexReader.
func (b *IndexBackend) Balance(sh indexers.ScriptHash) (int64, indexers.Tip, error) {
	_, sum, tip, err := b.Index.UnspentTotals(sh)
	return sum, tip, err
}

// UnspentTotals returns the number and sum of a script's unspent outputs
// (indexers.ElectrumIndex.UnspentTotals), for the Esplora API's stats.
func (b *IndexBackend) UnspentTotals(sh indexers.ScriptHash) (int, int64, indexers.Tip, error) {
	return b.Index.UnspentTotals(sh)
}

// IsUnspent reports whether one output is unspent
// (indexers.ElectrumIndex.IsUnspent), for the Esplora API's spenders.
func (b *IndexBackend) IsUnspent(sh indexers.ScriptHash, height int32, op wire.OutPoint) (bool, indexers.Tip, error) {
	return b.Index.IsUnspent(sh, height, op)
}

// Status implements IndexReader.
func (b *IndexBackend) Status(sh indexers.ScriptHash, limit int) (StatusHasher, indexers.Tip, error) {
	h, tip, err := b.Index.Status(sh, limit)
	if err != nil {
		return nil, tip, err
	}
	return h, tip, nil
}

// Statuses implements IndexReader.
func (b *IndexBackend) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	return IndexStatuses(b.Index, shs, limit)
}

// IndexStatuses reads many statuses from the Electrum index in one view, as
// IndexReader.Statuses returns them.
func IndexStatuses(idx *indexers.ElectrumIndex, shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	hs, errs, tip, err := idx.Statuses(shs, limit)
	if err != nil {
		return nil, nil, tip, err
	}
	out := make([]StatusHasher, len(hs))
	for i, h := range hs {
		if errs[i] == nil {
			out[i] = h
		}
	}
	return out, errs, tip, nil
}

// TxLocation implements IndexReader.
func (b *IndexBackend) TxLocation(txid chainhash.Hash) (indexers.TxLocation, error) {
	return b.Index.TxLocation(txid)
}

// BlockTxIDs implements IndexReader.
func (b *IndexBackend) BlockTxIDs(height int32) ([]chainhash.Hash, error) {
	return b.Index.BlockTxIDs(height)
}

// RawTx implements IndexReader.
func (b *IndexBackend) RawTx(txid chainhash.Hash) ([]byte, indexers.TxLocation, error) {
	return b.Index.RawTx(txid)
}

// HistoryPage reads a page of a script's history
// (indexers.ElectrumIndex.HistoryPage), for the Esplora API's paging.
func (b *IndexBackend) HistoryPage(sh indexers.ScriptHash, before *chainhash.Hash, n, limit int) ([]indexers.HistoryEntry, indexers.Tip, error) {
	return b.Index.HistoryPage(sh, before, n, limit)
}

// HistoryTxs hands out the confirmed transactions of a script's history
// (indexers.ElectrumIndex.HistoryTxs), for the Esplora API's stats.
func (b *IndexBackend) HistoryTxs(sh indexers.ScriptHash, from int,
	fn func(i int, e indexers.HistoryEntry, raw []byte) error) (indexers.Tip, error) {
	return b.Index.HistoryTxs(sh, from, fn)
}

// MempoolEntries implements MempoolView: the view's transactions that
// still count as unconfirmed (unconfirmed).
func (b *IndexBackend) MempoolEntries(sh indexers.ScriptHash) []MempoolEntry {
	es := b.Mempool.Entries(sh)
	out := make([]MempoolEntry, 0, len(es))
	for _, e := range es {
		if b.unconfirmed(&e.TxHash) {
			out = append(out, MempoolEntry{TxHash: e.TxHash, Height: b.mempoolHeight(e.TxHash, e.Height), Fee: e.Fee})
		}
	}
	return out
}

// unconfirmed reports whether a transaction of the mempool view counts as
// unconfirmed beside the index's rows. The view is reconciled with btcd's
// pool after the index commits, while btcd's pool drops a block's
// transactions when the chain connects it: in between, the view holds
// transactions the pool has dropped. While btcd's pool holds one, it
// counts. One it dropped counts while the chain is ahead of the index and
// the index does not hold it: it was mined in a block the index has yet
// to commit (or double-spent by one), so beside the index's rows it is
// still unconfirmed, and a wallet asking then sees it there rather than
// nowhere. Once the index has caught up, one the pool dropped is either
// confirmed in the index or gone; while it is more than maxAhead blocks
// behind, catching up, the pool alone counts.
func (b *IndexBackend) unconfirmed(txid *chainhash.Hash) bool {
	if b.Pool.IsTransactionInPool(txid) {
		return true
	}
	tip, ok := b.Index.LatestTip()
	best := b.Chain.BestSnapshot()
	if !ok || best.Hash == tip.Hash || best.Height-tip.Height > maxAhead {
		return false
	}
	_, err := b.Index.TxLocation(*txid)
	return errors.Is(err, indexers.ErrNotFound)
}

// mempoolHeight returns 0 or -1 for a pool transaction from btcd's pool
// itself: -1 when some input spends a transaction in the pool that the
// index does not hold (the overlay may not know yet that a parent was just
// mined, or came back from a disconnected block). A parent the index holds
// is confirmed even while btcd's pool still lists it: the index may commit
// a block before btcd's pool drops the block's transactions, and nothing
// tells the server when the pool does, so a height read from the pool
// alone would stay -1 in a status the next history contradicts.
func (b *IndexBackend) mempoolHeight(txid chainhash.Hash, overlay int32) int32 {
	tx, err := b.Pool.FetchTransaction(&txid)
	if err != nil {
		return overlay
	}
	for _, in := range tx.MsgTx().TxIn {
		parent := in.PreviousOutPoint.Hash
		if !b.unconfirmed(&parent) {
			continue
		}
		if _, err := b.Index.TxLocation(parent); err != nil {
			return -1
		}
	}
	return 0
}

// MempoolBalance implements MempoolView.
func (b *IndexBackend) MempoolBalance(sh indexers.ScriptHash) int64 {
	return b.Mempool.BalanceOf(sh, b.unconfirmed)
}

// MempoolUnspent implements MempoolView.
func (b *IndexBackend) MempoolUnspent(sh indexers.ScriptHash) []indexers.Unspent {
	us := b.Mempool.Unspent(sh)
	out := us[:0]
	for _, u := range us {
		if b.unconfirmed(&u.TxHash) {
			out = append(out, u)
		}
	}
	return out
}

// MempoolIsSpent implements MempoolView, restricted to spends that count
// as unconfirmed, as the other mempool answers are.
func (b *IndexBackend) MempoolIsSpent(op wire.OutPoint) bool {
	txid, ok := b.Mempool.SpentBy(op)
	return ok && b.unconfirmed(&txid)
}

// MempoolTx implements MempoolView from btcd's pool or, for a transaction
// of the view the pool has dropped that still counts as unconfirmed
// (unconfirmed), from the block the chain connected it in: a wallet shown
// the transaction may ask for it.
func (b *IndexBackend) MempoolTx(txid chainhash.Hash) ([]byte, bool) {
	tx, err := b.Pool.FetchTransaction(&txid)
	if err != nil {
		if tx = b.minedAhead(&txid); tx == nil {
			return nil, false
		}
	}
	var buf bytes.Buffer
	if err := tx.MsgTx().Serialize(&buf); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// maxAhead is how many of the chain's blocks above the index tip minedAhead
// looks through: at the tip the index trails the chain by a block for a
// moment; further behind, it is catching up, and the pool is what counts.
const maxAhead = 3

// minedAhead returns the transaction txid of the mempool view from the
// chain's blocks above the index tip, when the index does not hold it.
func (b *IndexBackend) minedAhead(txid *chainhash.Hash) *btcutil.Tx {
	tip, ok := b.Index.LatestTip()
	best := b.Chain.BestSnapshot()
	if !ok || best.Height <= tip.Height || best.Height-tip.Height > maxAhead || !b.Mempool.Has(*txid) ||
		!b.unconfirmed(txid) {
		return nil
	}
	for h := tip.Height + 1; h <= best.Height; h++ {
		block, err := b.Chain.BlockByHeight(h)
		if err != nil {
			return nil
		}
		for _, tx := range block.Transactions()[1:] {
			if tx.Hash().IsEqual(txid) {
				return tx
			}
		}
	}
	return nil
}

// FeeHistogram implements MempoolView.
func (b *IndexBackend) FeeHistogram() [][2]float64 { return b.Mempool.FeeHistogram() }

// Broadcast implements TxRelay.
//
// It answers as bitcoind's sendrawtransaction does, which wallets rely on:
// a transaction the pool already holds is accepted again, so that a wallet
// may broadcast it again, and one the index holds confirmed is ErrInChain.
func (b *IndexBackend) Broadcast(tx *wire.MsgTx) error {
	err := b.Relay.Broadcast(tx)
	if err == nil {
		return nil
	}
	hash := tx.TxHash()
	if b.Pool != nil && b.Pool.HaveTransaction(&hash) {
		return nil
	}
	if _, lerr := b.Index.TxLocation(hash); lerr == nil {
		return fmt.Errorf("%w: %v", ErrInChain, err)
	}
	return err
}

// EstimateFee implements TxRelay.
func (b *IndexBackend) EstimateFee(blocks int, mode string) (float64, error) {
	return b.Relay.EstimateFee(blocks, mode)
}

// RelayFee implements TxRelay.
func (b *IndexBackend) RelayFee() float64 { return b.Relay.RelayFee() }

// MempoolInfo implements TxRelay.
func (b *IndexBackend) MempoolInfo() MempoolInfo { return b.Relay.MempoolInfo() }

// PoolRelay is a TxRelay on btcd's transaction pool and fee estimator.
// OnAccept, when set, is called with every transaction the pool accepted
// (the broadcast one and orphans it unlocked): the node relays them to peers,
// adds them to the mempool overlay and calls Server.NotifyMempool.
type PoolRelay struct {
	Pool *mempool.TxPool
	// Fees may be nil (no estimates: estimatefee answers -1).
	Fees *mempool.FeeEstimator
	// MinRelayTxFee is the pool's minimum relay fee in satoshis per kvB
	// (mempool.DefaultMinRelayTxFee when zero).
	MinRelayTxFee btcutil.Amount
	OnAccept      func([]*mempool.TxDesc)
}

// Broadcast submits tx to the pool (no orphans, no rate limit).
func (r *PoolRelay) Broadcast(tx *wire.MsgTx) error {
	descs, err := r.Pool.ProcessTransaction(btcutil.NewTx(tx), false, false, 0)
	if err != nil {
		return err
	}
	if r.OnAccept != nil && len(descs) > 0 {
		r.OnAccept(descs)
	}
	return nil
}

// EstimateFee asks btcd's fee estimator; mode is not distinguished (btcd has
// one estimator). No estimate yields -1.
func (r *PoolRelay) EstimateFee(blocks int, _ string) (float64, error) {
	if r.Fees == nil || blocks <= 0 || blocks > math.MaxUint32 {
		return -1, nil
	}
	fee, err := r.Fees.EstimateFee(uint32(blocks))
	if err != nil || fee <= 0 {
		return -1, nil
	}
	return float64(fee), nil
}

// minRelay is the minimum relay fee in satoshis per kvB.
func (r *PoolRelay) minRelay() btcutil.Amount {
	if r.MinRelayTxFee > 0 {
		return r.MinRelayTxFee
	}
	return mempool.DefaultMinRelayTxFee
}

// RelayFee returns the minimum relay fee in BTC/kvB.
func (r *PoolRelay) RelayFee() float64 { return r.minRelay().ToBTC() }

// MempoolInfo reports btcd's policy: its pool has no size-driven minimum
// fee, and replacements must add at least the minimum relay fee, so all
// three rates are the minimum relay fee.
func (r *PoolRelay) MempoolInfo() MempoolInfo {
	f := r.minRelay().ToBTC()
	return MempoolInfo{MempoolMinFee: f, MinRelayTxFee: f, IncrementalRelayFee: f}
}

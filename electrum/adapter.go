package electrum

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

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

	aheadMu    sync.Mutex
	aheadCache *aheadTxs
}

var _ Backend = (*IndexBackend)(nil)

// ChainParams implements ChainSource.
func (b *IndexBackend) ChainParams() *chaincfg.Params { return b.Params }

// ChainTip implements ChainSource with the index tip: headers and histories
// served to clients always come from the same block (the chain's own tip
// moves a moment before the index's rows become visible to readers).
func (b *IndexBackend) ChainTip() (indexers.Tip, error) { return b.Index.Tip() }

// StoredBlock reads a block of btcd's database, in the main chain or not.
func (b *IndexBackend) StoredBlock(hash chainhash.Hash) (*btcutil.Block, error) {
	return b.Index.StoredBlock(hash)
}

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
func (b *IndexBackend) Balance(sh indexers.ScriptHash) (int, int64, indexers.Tip, error) {
	return b.Index.UnspentTotals(sh)
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

// unconfirmed reports whether a transaction counts as unconfirmed beside
// the index's rows: btcd's pool holds it, or it was mined in one of the
// chain's blocks the index has not committed yet (ahead), and the index
// does not hold it. btcd's pool drops a block's transactions when the chain
// connects it, a moment before the index commits it; in that moment they
// are still unconfirmed beside the index's rows, and a wallet asking then
// sees them there rather than nowhere. A transaction the index holds is
// confirmed, even while btcd's pool lists it (the index may commit a block
// before the pool drops it; in a reorganization the pool takes back a
// disconnected block's transactions before the index undoes it).
func (b *IndexBackend) unconfirmed(txid *chainhash.Hash) bool {
	// A transaction of the blocks ahead may be held by the index too, in
	// a block of the branch the chain left (mined on both branches).
	if _, ok := b.ahead()[*txid]; !ok && !b.Pool.IsTransactionInPool(txid) {
		return false
	}
	// Only a transaction the index holds is confirmed: one it failed to
	// look up (a read error) is not dropped from the answers.
	_, err := b.Index.TxLocation(*txid)
	return err != nil
}

// UnconfirmedTx is a transaction that counts as unconfirmed, with what the
// mempool-wide answers show of it.
type UnconfirmedTx struct {
	Tx  *btcutil.Tx
	Fee int64
	// Added is when btcd's pool took it; zero for one mined in a block
	// the index has yet to commit, which the pool no longer holds.
	Added time.Time
}

// UnconfirmedTxs returns every transaction that counts as unconfirmed
// (unconfirmed's rule), so that the mempool-wide answers agree with the
// per-script ones: btcd's pool less what the index holds, and the
// transactions of the blocks ahead that the mempool view keeps. The index
// is asked about pool transactions only while its tip is not the chain's
// (a block ahead, a reorganization it has yet to undo), when it can hold
// some of them; otherwise the pool's own removal in the chain's
// notification leaves it no more than a moment.
func (b *IndexBackend) UnconfirmedTxs() []UnconfirmedTx {
	descs := b.Pool.TxDescs()
	ahead := b.ahead()
	tip, ok := b.Index.LatestTip()
	check := !ok || tip.Hash != b.Chain.BestSnapshot().Hash
	notIndexed := func(txid *chainhash.Hash) bool {
		_, err := b.Index.TxLocation(*txid)
		return err != nil // as unconfirmed's
	}
	out := make([]UnconfirmedTx, 0, len(descs)+len(ahead))
	pooled := make(map[chainhash.Hash]struct{}, len(descs))
	for _, d := range descs {
		pooled[*d.Tx.Hash()] = struct{}{}
		if !check || notIndexed(d.Tx.Hash()) {
			out = append(out, UnconfirmedTx{Tx: d.Tx, Fee: d.Fee, Added: d.Added})
		}
	}
	for txid, tx := range ahead {
		if _, ok := pooled[txid]; ok {
			continue
		}
		if fee, ok := b.Mempool.Fee(txid); ok && notIndexed(&txid) {
			out = append(out, UnconfirmedTx{Tx: tx, Fee: fee})
		}
	}
	return out
}

// mempoolHeight returns 0 or -1 for an unconfirmed transaction: -1 when
// some input spends a transaction that counts as unconfirmed. overlay, the
// view's own, is the answer for one neither btcd's pool nor the blocks
// ahead hold.
func (b *IndexBackend) mempoolHeight(txid chainhash.Hash, overlay int32) int32 {
	tx, err := b.Pool.FetchTransaction(&txid)
	if err != nil {
		if tx = b.ahead()[txid]; tx == nil {
			return overlay
		}
	}
	for _, in := range tx.MsgTx().TxIn {
		if b.unconfirmed(&in.PreviousOutPoint.Hash) {
			return -1
		}
	}
	return 0
}

// MempoolBalance implements MempoolView.
func (b *IndexBackend) MempoolBalance(sh indexers.ScriptHash) int64 {
	d, _ := b.Mempool.BalanceOf(sh, b.unconfirmed)
	return d
}

// MempoolUnspent implements MempoolView: outputs of transactions that count
// as unconfirmed, less those spent by one that does.
func (b *IndexBackend) MempoolUnspent(sh indexers.ScriptHash) []indexers.Unspent {
	us := b.Mempool.Unspent(sh, b.unconfirmed)
	out := us[:0]
	for _, u := range us {
		if b.unconfirmed(&u.TxHash) {
			out = append(out, u)
		}
	}
	return out
}

// MempoolSpends implements MempoolView, restricted to spends that count
// as unconfirmed, as MempoolIsSpent is.
func (b *IndexBackend) MempoolSpends(sh indexers.ScriptHash) int {
	_, n := b.Mempool.BalanceOf(sh, b.unconfirmed)
	return n
}

// MempoolIsSpent implements MempoolView, restricted to spends that count
// as unconfirmed, as the other mempool answers are.
func (b *IndexBackend) MempoolIsSpent(op wire.OutPoint) bool {
	_, ok := b.MempoolSpender(op)
	return ok
}

// MempoolSpender returns the transaction spending op that counts as
// unconfirmed (unconfirmed), for the Esplora API's spenders.
func (b *IndexBackend) MempoolSpender(op wire.OutPoint) (chainhash.Hash, bool) {
	txid, ok := b.Mempool.SpentBy(op)
	return txid, ok && b.unconfirmed(&txid)
}

// MempoolTx implements MempoolView from btcd's pool or, for a transaction
// mined in a block the index has not committed (ahead), from that block: a
// wallet shown the transaction may ask for it.
func (b *IndexBackend) MempoolTx(txid chainhash.Hash) ([]byte, bool) {
	tx, err := b.Pool.FetchTransaction(&txid)
	if err != nil {
		if tx = b.ahead()[txid]; tx == nil {
			return nil, false
		}
	}
	var buf bytes.Buffer
	if err := tx.MsgTx().Serialize(&buf); err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// maxAhead bounds the chain's blocks the index may not have committed for
// their transactions to count as unconfirmed (ahead): at the tip the index
// trails the chain by a block for a moment; further behind, it is catching
// up, and btcd's pool alone counts.
const maxAhead = 3

// aheadTxs are the transactions of the main chain's blocks above the last
// block it shares with the index. They are valid while the chain's tip and
// the index tip are those they were read at.
type aheadTxs struct {
	chainTip, indexTip chainhash.Hash
	txs                map[chainhash.Hash]*btcutil.Tx
}

// MinedAhead reports whether txid was mined in one of the main chain's
// blocks the index has not committed yet (at most maxAhead of them): the
// mempool view keeps such a transaction (indexers.Mempool.SyncKeeping).
func (b *IndexBackend) MinedAhead(txid chainhash.Hash) bool {
	_, ok := b.ahead()[txid]
	return ok
}

// ahead returns the transactions of the main chain's blocks the index has
// not committed: none when the index is at the chain's tip, or more than
// maxAhead blocks from it.
func (b *IndexBackend) ahead() map[chainhash.Hash]*btcutil.Tx {
	tip, ok := b.Index.LatestTip()
	best := b.Chain.BestSnapshot()
	if !ok || best.Hash == tip.Hash {
		return nil
	}
	b.aheadMu.Lock()
	defer b.aheadMu.Unlock()
	if a := b.aheadCache; a != nil && a.chainTip == best.Hash && a.indexTip == tip.Hash {
		return a.txs
	}
	a := &aheadTxs{chainTip: best.Hash, indexTip: tip.Hash}
	b.aheadCache = a
	// The last block the index shares with the main chain: its tip, or
	// below it in a reorganization the writer has yet to undo.
	fork := min(tip.Height, best.Height)
	for ; fork >= 0 && best.Height-fork <= maxAhead; fork-- {
		held, _, err := b.Index.Block(fork)
		main, merr := b.Chain.BlockHashByHeight(fork)
		if err == nil && merr == nil && *main == held {
			break
		}
	}
	if best.Height-fork > maxAhead {
		return nil
	}
	a.txs = make(map[chainhash.Hash]*btcutil.Tx)
	for h := fork + 1; h <= best.Height; h++ {
		block, err := b.Chain.BlockByHeight(h)
		if err != nil {
			a.txs = nil
			return nil
		}
		for _, tx := range block.Transactions()[1:] {
			a.txs[*tx.Hash()] = tx
		}
	}
	return a.txs
}

// FeeHistogram implements MempoolView.
func (b *IndexBackend) FeeHistogram() [][2]float64 { return b.Mempool.FeeHistogram() }

// Broadcast implements TxRelay.
//
// It answers as bitcoind's sendrawtransaction does, which wallets rely on:
// a transaction the mempool already holds is accepted again, so that a
// wallet may broadcast it again (one waiting in btcd's orphan pool is not
// in the mempool, and stays refused). As bitcoind's, a refused transaction
// the chain holds with an output still unspent is ErrInChain, and one
// spending an output that is neither unspent in the chain nor in the
// mempool is ErrMissingInputs: a confirmed transaction whose outputs are
// all spent is the latter.
func (b *IndexBackend) Broadcast(tx *wire.MsgTx) error {
	err := b.Relay.Broadcast(tx)
	if err == nil {
		return nil
	}
	hash := tx.TxHash()
	if b.Pool != nil && b.Pool.IsTransactionInPool(&hash) {
		return nil
	}
	if b.Chain == nil {
		return err
	}
	for i := range tx.TxOut {
		op := wire.OutPoint{Hash: hash, Index: uint32(i)}
		if e, uerr := b.Chain.FetchUtxoEntry(op); uerr == nil && e != nil && !e.IsSpent() {
			return fmt.Errorf("%w: %v", ErrInChain, err)
		}
	}
	if b.Pool != nil && orphanRefusal(err) {
		for _, in := range tx.TxIn {
			if _, ok := b.spentValue(in.PreviousOutPoint); !ok {
				return fmt.Errorf("%w: %v", ErrMissingInputs, err)
			}
		}
	}
	return err
}

// orphanRefusal reports whether err is btcd's pool refusing a transaction
// whose inputs it could not find: a rule error with the duplicate reject
// code, which the pool also gives a double spend of its own transactions
// (whose inputs it finds). Every check bitcoind makes before it looks up
// the inputs (the sanity and policy checks) btcd makes first too, and
// refuses with other codes.
func orphanRefusal(err error) bool {
	var rerr mempool.RuleError
	if !errors.As(err, &rerr) {
		return false
	}
	var terr mempool.TxRuleError
	return errors.As(rerr.Err, &terr) && terr.RejectCode == wire.RejectDuplicate
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

// Broadcast submits tx to the pool (no orphans, no rate limit); the pool's
// refusal by its policy or consensus rules wraps ErrRejected.
func (r *PoolRelay) Broadcast(tx *wire.MsgTx) error {
	descs, err := r.Pool.ProcessTransaction(btcutil.NewTx(tx), false, false, 0)
	if ruleErr := (mempool.RuleError{}); errors.As(err, &ruleErr) {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if err != nil {
		return err
	}
	if r.OnAccept != nil && len(descs) > 0 {
		r.OnAccept(descs)
	}
	return nil
}

// EstimateFee asks btcd's fee estimator; mode is not distinguished (btcd has
// one estimator).
func (r *PoolRelay) EstimateFee(blocks int, _ string) (float64, error) {
	return EstimateFee(r.Fees, blocks, r.RelayFee()), nil
}

// EstimateFee answers blockchain.estimatefee from btcd's estimator fees (nil:
// none) as bitcoind's estimatesmartfee, which ElectrumX asks, answers: in
// BTC/kvB, never below floor (the minimum relay fee: btcd admits old coins'
// spends under it on their priority, and a wallet paying their rate would
// be refused), -1 when there is no estimate. btcd's estimator answers 1 to
// 25 blocks: a target below 1 is 1 block, and a fee that confirms within
// 25 blocks confirms within any longer target (wallets ask for 50 or 144).
func EstimateFee(fees *mempool.FeeEstimator, blocks int, floor float64) float64 {
	if fees == nil {
		return -1
	}
	fee, err := fees.EstimateFee(uint32(min(max(blocks, 1), maxFeeTarget)))
	if err != nil || fee <= 0 {
		return -1
	}
	return max(float64(fee), floor)
}

// maxFeeTarget is the longest target btcd's fee estimator answers.
const maxFeeTarget = 25

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

package node

import (
	"sync"
	"sync/atomic"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/mining"
)

// loadFeeEstimator restores the fee estimator saved at the last shutdown (as
// btcd does, under mempool.EstimateFeeDatabaseKey in the metadata bucket,
// deleting it so a crash never restores stale state twice), or creates a new
// one when there is none or it does not match the chain tip.
func loadFeeEstimator(db database.DB, bestHeight int32) *mempool.FeeEstimator {
	var fe *mempool.FeeEstimator
	err := db.Update(func(tx database.Tx) error {
		meta := tx.Metadata()
		data := meta.Get(mempool.EstimateFeeDatabaseKey)
		if data == nil {
			return nil
		}
		state := make(mempool.FeeEstimatorState, len(data))
		copy(state, data)
		if err := meta.Delete(mempool.EstimateFeeDatabaseKey); err != nil {
			return err
		}
		restored, err := mempool.RestoreFeeEstimator(state)
		if err != nil {
			log.Warnf("Discarding saved fee estimator: %v", err)
			return nil
		}
		fe = restored
		return nil
	})
	if err != nil {
		log.Warnf("Load fee estimator: %v", err)
	}
	if fe == nil || fe.LastKnownHeight() != bestHeight {
		fe = newFeeEstimator()
	}
	return fe
}

// saveFeeEstimator stores the fee estimator's state for the next start.
func saveFeeEstimator(db database.DB, fe *mempool.FeeEstimator) {
	err := db.Update(func(tx database.Tx) error {
		return tx.Metadata().Put(mempool.EstimateFeeDatabaseKey, fe.Save())
	})
	if err != nil {
		log.Warnf("Save fee estimator: %v", err)
	}
}

// feeEstimates holds btcd's fee estimator, which the node feeds itself: the
// transactions the pool accepts, and the blocks the chain connects and
// disconnects. btcd's pool and netsync are given none. netsync registers
// blocks only while it deems the chain current, so the first block after a
// catch-up is a gap; and on a refused registration it starts an estimator
// of its own, leaving the pool feeding, and estimatefee reading, one that
// sees no block again. Here a refused block, or one that cannot be taken
// back (a reorganization deeper than the estimator's rollbacks), starts a
// new estimator that everything then feeds and reads: btcd's estimator
// cannot recover from either (its rollback of a later block panics).
type feeEstimates struct {
	p atomic.Pointer[mempool.FeeEstimator]
	// mu orders connected and disconnected: btcd sends chain
	// notifications with its lock released, so invalidateblock's and
	// netsync's may come at once.
	mu sync.Mutex
}

// newFeeEstimator returns an empty estimator with btcd's defaults.
func newFeeEstimator() *mempool.FeeEstimator {
	return mempool.NewFeeEstimator(mempool.DefaultEstimateFeeMaxRollback,
		mempool.DefaultEstimateFeeMinRegisteredBlocks)
}

// current returns the estimator to read.
func (f *feeEstimates) current() *mempool.FeeEstimator { return f.p.Load() }

// observe records transactions the pool accepted.
func (f *feeEstimates) observe(descs ...*mempool.TxDesc) {
	fe := f.p.Load()
	for _, d := range descs {
		fe.ObserveTransaction(d)
	}
}

// connected registers a block the chain connected.
func (f *feeEstimates) connected(block *btcutil.Block) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.p.Load().RegisterBlock(block); err != nil {
		log.Debugf("Fee estimator restarted: block %v: %v", block.Hash(), err)
		f.p.Store(newFeeEstimator())
	}
}

// disconnected takes back a block the chain disconnected.
func (f *feeEstimates) disconnected(block *btcutil.Block) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fe := f.p.Load()
	if fe.LastKnownHeight() == mining.UnminedHeight {
		return // new: it holds no block
	}
	if err := fe.Rollback(block.Hash()); err != nil {
		log.Debugf("Fee estimator restarted: disconnected block %v: %v", block.Hash(), err)
		f.p.Store(newFeeEstimator())
	}
}

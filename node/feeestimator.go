package node

import (
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/mempool"
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
		fe = mempool.NewFeeEstimator(mempool.DefaultEstimateFeeMaxRollback,
			mempool.DefaultEstimateFeeMinRegisteredBlocks)
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

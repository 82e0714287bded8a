package indexers

import (
	"bytes"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb"
)

// Internals exposed to the external tests of this package (which import
// internal/testchain, itself an importer of this package).

// RowPrefix starts every key of the index.
var RowPrefix = rowPrefix

// VersionKey is the key of the schema version.
var VersionKey = versionKey

// StatsKey is the key of the index's size.
var StatsKey = statsKey

// ReorgKey is the key of the reorg epoch.
var ReorgKey = reorgKey

// TipKey is the key of the copy of the index tip readers read.
var TipKey = tipKey

// SetMemTip sets the in-memory tip, so a benchmark can connect the same
// block again after rolling its transaction back.
func (idx *ElectrumIndex) SetMemTip(hash chainhash.Hash, height int32, txCount uint64) {
	idx.mu.Lock()
	idx.setTip(memTip{valid: true, hash: hash, height: height, txCount: txCount})
	idx.mu.Unlock()
}

// SetReadCacheMinRows makes the read cache keep answers of at least n rows,
// so that small test chains exercise it.
func (idx *ElectrumIndex) SetReadCacheMinRows(n int) { idx.reads.minRows = n }

// SetScanSplit makes reads of more than n unspent rows of a script split
// the rest between several cursors, so that small test chains exercise it.
func (idx *ElectrumIndex) SetScanSplit(n int) { idx.scanSplit = n }

// SetTrailingTuning sets the lag at which the trailing worker starts a run
// (through ffldb or into the base) and how long it waits for more blocks before catching up a smaller lag.
func (idx *ElectrumIndex) SetTrailingTuning(minTxs int64, idle time.Duration) {
	idx.trail.minTxs, idx.trail.baseTxs, idx.trail.idle = minTxs, minTxs, idle
	// An extension names every batch it commits.
	idx.trail.promote = 0
}

// TrailingCounts returns how many blocks the hooks left to the trailing
// worker, how many of its runs committed blocks and how many were stopped
// by a reorganization.
func (idx *ElectrumIndex) TrailingCounts() (skipped, runs, moved int) {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	return idx.trail.skipped, idx.trail.runs, idx.trail.moved
}

// SetAfterCatchUpCommit sets a function the catch-up's committer calls after
// each commit, before Progress reports it.
func (idx *ElectrumIndex) SetAfterCatchUpCommit(f func()) { idx.afterCommit = f }

// HeldScripts returns the scripts whose balances are held in memory.
func (idx *ElectrumIndex) HeldScripts() int {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	return len(idx.held)
}

// WaitHeldWriter waits until the background writer of held balances has
// written every offer and the reads of heavy scripts after a catch-up are
// done.
func (idx *ElectrumIndex) WaitHeldWriter() {
	for {
		idx.heldWG.Wait()
		idx.heldMu.Lock()
		idle := !idx.heldRunning && len(idx.heldQ) == 0
		idx.heldMu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// IsHeldKey reports whether k is a held balance row or their tip's entry.
func IsHeldKey(k []byte) bool { return isHeldKey(k) }

// MoveToBase moves every row of the index's blocks into a new base database
// in dir, as if the index had been built into it up to its tip (base.go),
// and reads and writes over it from then on. The chain must be idle.
func (idx *ElectrumIndex) MoveToBase(dir string) error {
	ldb, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		return err
	}
	idx.mu.Lock()
	top, topHash := idx.tip.height, idx.tip.hash
	idx.mu.Unlock()
	err = idx.db.Update(func(dbTx database.Tx) error {
		meta := dbTx.Metadata()
		var keys [][]byte
		batch := new(leveldb.Batch)
		c := meta.Cursor()
		for ok := c.Seek(rowPrefix); ok && bytes.HasPrefix(c.Key(), rowPrefix); ok = c.Next() {
			h, row := rowHeight(c.Key())
			if !row || h > top {
				continue
			}
			keys = append(keys, bytes.Clone(c.Key()))
			batch.Put(c.Key(), c.Value())
		}
		if err := ldb.Write(batch, nil); err != nil {
			return err
		}
		for _, k := range keys {
			if err := meta.Delete(k); err != nil {
				return err
			}
		}
		return meta.Put(baseKey, tipVal(&topHash, top))
	})
	if err != nil {
		ldb.Close()
		return err
	}
	idx.base, idx.baseTop = ldb, top
	return nil
}

// RowView is the index's view of dbTx, over its base when it has one.
func (idx *ElectrumIndex) RowView(dbTx database.Tx) (database.Bucket, func()) { return idx.view(dbTx) }

// HasBase reports whether the index reads a base.
func (idx *ElectrumIndex) HasBase() bool { return idx.base != nil }

// BaseKey is ffldb's entry naming the base's block.
var BaseKey = baseKey

// OpenBaseForReads opens the base in dir of an index built into one, for a
// benchmark that reads the index without a chain.
func (idx *ElectrumIndex) OpenBaseForReads(dir string) error {
	var top int32 = -1
	err := idx.db.View(func(dbTx database.Tx) error {
		if _, h, ok := decodeTipVal(dbTx.Metadata().Get(baseKey)); ok {
			top = h
		}
		return nil
	})
	if err != nil || top < 0 {
		return err
	}
	o := baseOptions()
	o.ErrorIfMissing = true
	ldb, err := leveldb.OpenFile(dir, o)
	if err != nil {
		return err
	}
	idx.base, idx.baseTop = ldb, top
	return nil
}

// BaseHeight is the height of the base the index reads (-1: none).
func (idx *ElectrumIndex) BaseHeight() int32 {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if idx.base == nil {
		return -1
	}
	return idx.baseTop
}

// BaseDirty reports whether the base is never to be extended again.
func (idx *ElectrumIndex) BaseDirty() bool {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	return idx.baseDirty
}

// BaseAheadHeight is the height of the base's own tip when it is above the
// height the index reads it to (-1: it is not).
func (idx *ElectrumIndex) BaseAheadHeight() int32 {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if !idx.baseAhead.valid {
		return -1
	}
	return idx.baseAhead.height
}

// SetBeforeName sets a function an extension of the base calls between
// committing a batch into the base and naming it.
func (idx *ElectrumIndex) SetBeforeName(f func()) { idx.beforeName = f }

// SetAheadPatience sets how long the base's rows above its named height
// wait for a chain below them that connects no block.
func (idx *ElectrumIndex) SetAheadPatience(d time.Duration) { idx.trail.patience = d }

// SetExtensionNaming sets how long an extension of the base goes on before
// it names what it built (0: at every batch).
func (idx *ElectrumIndex) SetExtensionNaming(d time.Duration) { idx.trail.promote = d }

// CopyTree copies the files under src to dst, but for leveldb's LOCK
// (forcedurable_test.go).
var CopyTree = copyTree

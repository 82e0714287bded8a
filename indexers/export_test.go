package indexers

import (
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/syndtr/goleveldb/leveldb"
)

// Internals exposed to the external tests of this package (which import
// internal/testchain, itself an importer of this package). Helpers of one
// test file live in that file's own export_*_test.go.

// BIP30Overwrites are the blocks whose coinbase replaces an earlier one's
// outputs (a test adds its own).
var BIP30Overwrites = bip30Overwrites

// RowPrefix starts every key of the index.
var RowPrefix = rowPrefix

// VersionKey, StatsKey and TipKey are the keys of the schema version, the
// index's size and the index tip.
var (
	VersionKey = versionKey
	StatsKey   = statsKey
	TipKey     = tipKey
)

// UndoKey is the key of the undo record of the block at height.
func UndoKey(height int32) []byte { return undoKey(height) }

// UndoRecordOf is the undo record the writer gives block, at its height,
// with btcd's spent outputs stxos: the one a block connected while the
// writer runs carries.
func UndoRecordOf(block *btcutil.Block, stxos []blockchain.SpentTxOut) []byte {
	return undoRecord(planBlock(block, stxos, block.Height() == 0))
}

// Store is the index's store, for tests that read or damage its rows.
func (idx *ElectrumIndex) Store() *leveldb.DB { return idx.store }

// SetScanSplit makes reads of more than n unspent rows or history entries
// of a script split the work between several cursors, so that small test
// chains exercise it.
func (idx *ElectrumIndex) SetScanSplit(n int) { idx.scanSplit = n }

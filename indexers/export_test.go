package indexers

import (
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
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

// TxIDAt returns the txid at a position of the main-chain block at height,
// or ErrNotFound.
func (idx *ElectrumIndex) TxIDAt(height int32, pos uint32) (chainhash.Hash, error) {
	var txid chainhash.Hash
	_, err := idx.read(func(r *snapView, _ Tip) error {
		count, _, ok := blockTxs(r, height)
		if !ok || pos >= count {
			return ErrNotFound
		}
		row, ok := txRowAt(r, txPos(height, int(pos)))
		if !ok {
			return corruptf("missing transaction %d of block %d", pos, height)
		}
		txid = row.txid
		return nil
	})
	return txid, err
}

// UndoSize returns the number of undo records and their bytes.
func (idx *ElectrumIndex) UndoSize() (records, bytes int64, err error) {
	pre := tablePrefix(tagUndo)
	it := idx.store.NewIterator(nil, nil)
	defer it.Release()
	for ok := it.Seek(pre); ok && len(it.Key()) == blkKeyLen && it.Key()[2] == tagUndo; ok = it.Next() {
		records++
		bytes += int64(len(it.Key()) + len(it.Value()))
	}
	return records, bytes, it.Error()
}

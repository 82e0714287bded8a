package indexers

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Undo (docs/ARCHITECTURE.md, "Undo and crash safety"). btcd deletes a
// block's spend journal with the block, and a crash can take blocks the index
// holds: the newest blocks carry an undo record written in their batch (kept
// UndoBlocks deep and undoKeep old); an older block is undone from btcd's
// block files with its spent outputs rebuilt from the index's rows.
//
// A record is rows(8) bytes(8), the undo's size change, then its writes:
// op(1) keylen(uvarint) key, and for a put vallen(uvarint) value. A restored
// unspent row's position is zero in it and looked up by the undo. The block's
// own rows are not listed, only the deletes of its history rows and a closing
// undoOwn: the undo reads them from the store (ownRows).

const (
	undoPut = 1
	undoDel = 2
	// undoOwn deletes the rows the block created: its transaction chunks,
	// their txid rows, its block row, and the unspent rows at its height
	// of every script whose history row the record deletes.
	undoOwn = 3
)

// undoKeep is how long a record stays after it was written, even when its
// block is more than UndoBlocks deep.
const undoKeep = 10 * time.Minute

// undoRef is a record the writer wrote in this run, and when.
type undoRef struct {
	height int32
	at     time.Time
}

// pruneUndo deletes, with del, the records of this run that are UndoBlocks
// below tip and undoKeep old. recent is in height order (an undo drops
// the records of the blocks it removes).
func (w *writer) pruneUndo(del func([]byte), tip int32, now time.Time) {
	n := int32(w.idx.opts.UndoBlocks)
	i := 0
	for ; i < len(w.recent); i++ {
		r := w.recent[i]
		if r.height > tip-n || now.Sub(r.at) < undoKeep {
			break
		}
		del(undoKey(r.height))
	}
	w.recent = w.recent[i:]
}

// pruneOldUndo deletes the records an earlier run left more than
// UndoBlocks below the index tip, and hands the others to pruneUndo as
// written long ago: every block the chain holds at start is on disk.
func (w *writer) pruneOldUndo() error {
	b := new(leveldb.Batch)
	var kept []undoRef
	it := w.idx.store.NewIterator(util.BytesPrefix(tablePrefix(tagUndo)), nil)
	for it.Next() {
		k := it.Key()
		if len(k) != blkKeyLen {
			continue
		}
		if h := int32(binary.BigEndian.Uint32(k[pfx:])); h <= w.tip.height-int32(w.idx.opts.UndoBlocks) {
			b.Delete(bytes.Clone(k))
		} else if !slices.ContainsFunc(w.recent, func(r undoRef) bool { return r.height == h }) {
			kept = append(kept, undoRef{height: h})
		}
	}
	w.recent = append(kept, w.recent...)
	it.Release()
	if err := it.Error(); err != nil {
		return err
	}
	return w.idx.store.Write(b, nil)
}

// undoRecorder is a rowWriter that encodes writes into an undo record.
type undoRecorder struct{ buf []byte }

// ownRecorder records the writes of applyDisconnect as a record does: the
// block's own rows left to undoOwn, so only its history rows' deletes. Its
// puts restore outputs of earlier blocks, which the record lists.
type ownRecorder struct{ undoRecorder }

func (r *ownRecorder) Delete(k []byte) error {
	if k[2] != tagHist {
		return nil
	}
	return r.undoRecorder.Delete(k)
}

func (r *undoRecorder) Put(k, v []byte) error {
	r.buf = append(r.buf, undoPut)
	r.buf = binary.AppendUvarint(r.buf, uint64(len(k)))
	r.buf = append(r.buf, k...)
	r.buf = binary.AppendUvarint(r.buf, uint64(len(v)))
	r.buf = append(r.buf, v...)
	return nil
}

func (r *undoRecorder) Delete(k []byte) error {
	r.buf = append(r.buf, undoDel)
	r.buf = binary.AppendUvarint(r.buf, uint64(len(k)))
	r.buf = append(r.buf, k...)
	return nil
}

func (r *undoRecorder) copiesRows() {}

// undoRecord encodes the undo record of a planned block.
func undoRecord(p *blockPlan) []byte {
	// Room for a restored unspent row per input and a history delete per
	// entry, so that the record is allocated once.
	n := 17 + len(p.bufs.spends)*(3+utxoKeyLen+utxoValLen) + len(p.hist)*(2+histKeyLen)
	r := &ownRecorder{undoRecorder{buf: make([]byte, 16, n)}}
	d := applyDisconnect(r, p)
	r.buf = append(r.buf, undoOwn)
	binary.BigEndian.PutUint64(r.buf[0:8], uint64(d.Rows))
	binary.BigEndian.PutUint64(r.buf[8:16], uint64(d.Bytes))
	return r.buf
}

// applyUndoRecord adds the writes of the undo record of the block at height
// to b, the positions of restored unspent outputs and the block's own rows
// read from r, and returns the size change.
func applyUndoRecord(b *leveldb.Batch, rec []byte, height int32, r kvReader) (sizeStats, error) {
	bad := errors.New("malformed undo record")
	if len(rec) < 16 {
		return sizeStats{}, bad
	}
	d := sizeStats{Rows: int64(binary.BigEndian.Uint64(rec[0:8])), Bytes: int64(binary.BigEndian.Uint64(rec[8:16]))}
	rd := bytes.NewReader(rec[16:])
	next := func() ([]byte, error) {
		n, err := binary.ReadUvarint(rd)
		if err != nil || n > uint64(rd.Len()) {
			return nil, bad
		}
		s := make([]byte, n)
		_, _ = rd.Read(s)
		return s, nil
	}
	c := r.Cursor()
	var hist []hashX
	for rd.Len() > 0 {
		op, _ := rd.ReadByte()
		if op == undoOwn {
			if rd.Len() > 0 {
				return d, bad
			}
			ownRows(b, c, height, hist)
			break
		}
		k, err := next()
		if err != nil {
			return d, err
		}
		switch op {
		case undoDel:
			if len(k) == histKeyLen && k[2] == tagHist && histHeight(k) == height {
				hist = append(hist, hashX(k[pfx:pfx+hashXLen]))
			}
			b.Delete(k)
		case undoPut:
			v, err := next()
			if err != nil {
				return d, err
			}
			if len(k) == utxoKeyLen && k[2] == tagUtxo && len(v) == utxoValLen {
				row, _ := decodeUtxo(k, v)
				pos, ok := txPosAt(r, c, &row.txid, row.height)
				if !ok {
					return d, fmt.Errorf("spent transaction %v of height %d is not indexed", row.txid, row.height)
				}
				binary.BigEndian.PutUint16(v[8:], uint16(pos))
			}
			b.Put(k, v)
		default:
			return d, bad
		}
	}
	return d, nil
}

// ownRows adds to b the deletes of the rows the block at height created,
// read with c: its transaction chunks (txids and places) and their txid
// rows, its block row, and the unspent rows at its height of the scripts of
// hist.
func ownRows(b *leveldb.Batch, c cursor, height int32, hist []hashX) {
	var k [utxoKeyLen]byte
	start := make([]byte, txKeyLen)
	txKey(start, txPos(height, 0))
	blockPrefix := start[:pfx+4]
	for ok := c.Seek(start); ok && bytes.HasPrefix(c.Key(), blockPrefix); ok = c.Next() {
		ck, v := c.Key(), c.Value()
		first := getTxPos(ck[pfx:])
		for i := 0; i < len(v)/txEntryLen; i++ {
			n := first + uint64(i)
			if row, ok := decodeTxEntry(v, n); ok {
				txidKey(k[:txidKeyLen], &row.txid, n)
				b.Delete(k[:txidKeyLen])
			}
		}
		b.Delete(ck)
		locKey(k[:txKeyLen], first)
		b.Delete(k[:txKeyLen])
	}
	b.Delete(blkKey(height))
	for i := range hist {
		histKey(k[:histKeyLen], &hist[i], height)
		k[2] = tagUtxo
		p := k[:pfx+hashXLen+4]
		for ok := c.Seek(p); ok && bytes.HasPrefix(c.Key(), p); ok = c.Next() {
			b.Delete(c.Key())
		}
	}
}

// undoTip removes the index tip block: one batch with the previous block as
// the new tip. The tip between two branches is not published: readers and
// OnCommit see the undo with the pass's next commit (writer.undone).
func (w *writer) undoTip() (err error) {
	t := w.tip
	view, err := newSnapView(w.idx.store)
	if err != nil {
		return err
	}
	defer view.release()
	defer func() { err = cmp.Or(view.Err(), err) }() // a row not read is no block that cannot be undone
	b := new(leveldb.Batch)
	var delta sizeStats
	if rec := view.Get(undoKey(t.height)); rec != nil {
		delta, err = applyUndoRecord(b, rec, t.height, view)
	} else {
		delta, err = w.undoFromBlock(b, view, t)
	}
	if err != nil {
		return err
	}
	b.Delete(undoKey(t.height))
	// A block connected again at this height writes a record of its own.
	w.recent = slices.DeleteFunc(w.recent, func(r undoRef) bool { return r.height >= t.height })
	nt := memTip{height: t.height - 1, stats: t.stats.add(delta)}
	if nt.height >= 0 {
		count, hash, ok := decodeBlkVal(view.Get(blkKey(nt.height)))
		if !ok {
			return corruptf("no block row at height %d below the tip", nt.height)
		}
		nt.hash, nt.txCount = hash, count
	}
	b.Put(tipKey, tipVal(&nt.hash, nt.height))
	b.Put(statsKey, encodeStats(nt.stats))
	if err := view.Err(); err != nil {
		return err // a batch missing what a cursor failed to read
	}
	if err := w.idx.storeWrite(func() error { return w.idx.store.Write(b, nil) }); err != nil {
		return err
	}
	w.tip = nt
	log.Infof("Electrum index: removed block %v at height %d, which is no longer in the main chain",
		t.hash, t.height)
	if !w.undone {
		w.undoneAt = time.Now()
	}
	w.undone = true
	return nil
}

// undoFromBlock adds the writes removing block t to b, from the block in
// btcd's files and its spent outputs rebuilt from the index.
func (w *writer) undoFromBlock(b *leveldb.Batch, view *snapView, t memTip) (sizeStats, error) {
	var (
		block *btcutil.Block
		stxos []blockchain.SpentTxOut
	)
	err := w.idx.db.View(func(dbTx database.Tx) error {
		raw, err := dbTx.FetchBlock(&t.hash)
		if err != nil {
			return err
		}
		block, err = btcutil.NewBlockFromBytes(raw)
		if err != nil {
			return err
		}
		block.SetHeight(t.height)
		stxos, err = spentOutputsFromIndex(dbTx, view, block)
		return err
	})
	if err != nil {
		return sizeStats{}, err
	}
	p := planBlock(block, stxos, t.height == 0)
	if err := fillSpendPositions(view, p); err != nil {
		return sizeStats{}, err
	}
	return applyDisconnect(batchWriter{b}, p), nil
}

// spentOutputsFromIndex rebuilds btcd's spent outputs of a block from the
// index: each input's previous transaction is found through the txid rows
// and read from btcd's block files.
func spentOutputsFromIndex(dbTx database.Tx, r kvReader, block *btcutil.Block) ([]blockchain.SpentTxOut, error) {
	var stxos []blockchain.SpentTxOut
	c := r.Cursor()
	for i, tx := range block.Transactions() {
		if i == 0 {
			continue
		}
		for _, in := range tx.MsgTx().TxIn {
			prev := in.PreviousOutPoint
			loc, row, err := txLocation(r, c, &prev.Hash, true)
			if err != nil {
				return nil, fmt.Errorf("spent transaction %v: %w", prev.Hash, err)
			}
			raw, err := dbTx.FetchBlockRegion(&database.BlockRegion{
				Hash: &loc.BlockHash, Offset: row.offset, Len: row.size,
			})
			if err != nil {
				return nil, err
			}
			var ptx wire.MsgTx
			if err := ptx.Deserialize(bytes.NewReader(raw)); err != nil {
				return nil, err
			}
			if int(prev.Index) >= len(ptx.TxOut) {
				return nil, fmt.Errorf("spent output %v does not exist", prev)
			}
			out := ptx.TxOut[prev.Index]
			stxos = append(stxos, blockchain.SpentTxOut{
				Amount: out.Value, PkScript: out.PkScript, Height: row.height,
				IsCoinBase: loc.Pos == 0,
			})
		}
	}
	return stxos, nil
}

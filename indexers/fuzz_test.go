package indexers

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// FuzzSchemaDecoders feeds arbitrary keys and values to every decoder of
// the index's rows (schema.go) and of its undo records (undo.go): none may
// panic, a row a decoder accepts has the layout's length, and where an
// encoder exists, encoding what was decoded gives the bytes back. An undo
// record is applied over an empty store: it must fail when it restores an
// unspent row (the store holds no transaction to find its position in) or
// is malformed, and otherwise encode back to what it decoded to.
func FuzzSchemaDecoders(f *testing.F) {
	var h chainhash.Hash
	for i := range h {
		h[i] = byte(i)
	}
	hx := hashX{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	uk := make([]byte, utxoKeyLen)
	utxoKey(uk, &hx, 7, &h, 3)
	uv := make([]byte, utxoValLen)
	putUtxoVal(uv, 5000, 2)
	chunk := make([]byte, 2*txEntryLen)
	copy(chunk[txEntryLen:], h[:])
	hk := make([]byte, histKeyLen)
	histKey(hk, &hx, 7)
	f.Add(uk, uv, uint64(0))
	f.Add(blkKey(7), blkVal(12, &h), uint64(1))
	f.Add(tipKey, tipVal(&h, 7), uint64(0))
	f.Add(statsKey, encodeStats(sizeStats{Rows: 3, Bytes: 99}), uint64(0))
	f.Add(hk, []byte{0, 2, 0, 9}, uint64(0))
	f.Add([]byte("Ext\x00\x00\x00\x07\x00\x00"), chunk, txPos(7, 1))
	f.Add([]byte("E"), []byte("x"), uint64(1<<63))
	// A chunk key of a height past 2^31 (a damaged row).
	f.Add([]byte("Ext\xbd\x00\x00\x00\x00\x00"), chunk, uint64(0))
	// Undo records: one of deletes only, one restoring an unspent row.
	dels := &undoRecorder{buf: make([]byte, 16)}
	_ = dels.Delete(hk)
	_ = dels.Delete(blkKey(7))
	binary.BigEndian.PutUint64(dels.buf[0:], uint64(1<<64-2))
	binary.BigEndian.PutUint64(dels.buf[8:], uint64(1<<64-65))
	f.Add(undoKey(7), dels.buf, uint64(0))
	puts := &undoRecorder{buf: make([]byte, 16)}
	_ = puts.Put(uk, uv)
	_ = puts.Put(hk, []byte{0, 1})
	f.Add(undoKey(8), puts.buf, uint64(0))

	empty, err := leveldb.Open(storage.NewMemStorage(), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { empty.Close() })

	f.Fuzz(func(t *testing.T, k, v []byte, n uint64) {
		if r, ok := decodeTxEntry(v, n); ok {
			i := int(n%txChunk) * txEntryLen
			if !bytes.Equal(r.txid[:], v[i:i+txEntryLen]) || r.height != posHeight(n) {
				t.Fatalf("tx entry %d of %x: %+v", n, v, r)
			}
		}
		if r, ok := decodeUtxo(k, v); ok {
			var x hashX
			copy(x[:], k[pfx:])
			gk, gv := make([]byte, utxoKeyLen), make([]byte, utxoValLen)
			utxoKey(gk, &x, r.height, &r.txid, r.vout)
			putUtxoVal(gv, r.value, uint32(r.pos))
			if !bytes.Equal(gk[pfx:], k[pfx:]) || !bytes.Equal(gv, v) {
				t.Fatalf("unspent row %x %x: %+v encodes to %x %x", k, v, r, gk, gv)
			}
		}
		if count, hash, ok := decodeBlkVal(v); ok {
			if got := blkVal(count, &hash); !bytes.Equal(got, v) {
				t.Fatalf("block row %x encodes to %x", v, got)
			}
		}
		if hash, height, ok := decodeTipVal(v); ok {
			if got := tipVal(&hash, height); !bytes.Equal(got, v) {
				t.Fatalf("tip %x encodes to %x", v, got)
			}
		}
		if s := decodeStats(v); len(v) == 16 {
			if got := encodeStats(s); !bytes.Equal(got, v) {
				t.Fatalf("stats %x encode to %x", v, got)
			}
		} else if s != (sizeStats{}) {
			t.Fatalf("stats of %d bytes decoded to %+v", len(v), s)
		}
		if len(k) >= txPosLen {
			p := getTxPos(k)
			got := make([]byte, txPosLen)
			putTxPos(got, p)
			if !bytes.Equal(got, k[:txPosLen]) || txPos(posHeight(p), int(posIndex(p))) != p {
				t.Fatalf("txpos %x: %d encodes to %x", k[:txPosLen], p, got)
			}
		}
		// The verifier's shape check decides which rows the rest of
		// verify reads: it must accept only rows of the layout's size.
		if why := malformed(k, v); why == "" {
			tag := tableTag(k)
			if want := keyLen(tag); len(k) != want {
				t.Fatalf("key %x of %d bytes accepted, want %d", k, len(k), want)
			}
			if part, _ := (&verifier{span: 1}).part(k); part < 0 || part >= verifyParts {
				t.Fatalf("row %x in partition %d", k, part)
			}
			if (tag == tagUtxo || tag == tagBlk) && len(v) != valLen(k) {
				t.Fatalf("row %x with a value of %d bytes accepted", k, len(v))
			}
			if tag == tagHist {
				// An accepted history row decodes to its positions,
				// ascending, in its block.
				var got []uint64
				histPositions(k, v, func(n uint64) bool { got = append(got, n); return true })
				if len(got) == 0 || len(got) != len(v)/histPosLen {
					t.Fatalf("history row %x %x decodes to %d positions", k, v, len(got))
				}
				for i, n := range got {
					if posHeight(n) != histHeight(k) || i > 0 && n <= got[i-1] {
						t.Fatalf("history row %x %x decodes to %x", k, v, got)
					}
				}
			}
		}
		// The rows verify does not recompute are the single entries and
		// the undo records, and none of them is a table's row.
		single := bytes.Equal(k, versionKey) || bytes.Equal(k, statsKey) || bytes.Equal(k, tipKey)
		if bookkeepingKey(k) != (single || len(k) == blkKeyLen && k[2] == tagUndo) {
			t.Fatalf("key %x: bookkeeping %v", k, bookkeepingKey(k))
		}
		if bookkeepingKey(k) && malformed(k, v) == "" {
			t.Fatalf("bookkeeping key %x accepted as a table's row", k)
		}

		// v as an undo record.
		view, err := newSnapView(empty)
		if err != nil {
			t.Fatal(err)
		}
		defer view.release()
		b := new(leveldb.Batch)
		d, err := applyUndoRecord(b, v, int32(n), view)
		if err != nil {
			return
		}
		if len(v) < 16 || d.Rows != int64(binary.BigEndian.Uint64(v)) || d.Bytes != int64(binary.BigEndian.Uint64(v[8:])) {
			t.Fatalf("undo record %x applied with a size change of %+v", v, d)
		}
		again := &undoRecorder{buf: bytes.Clone(v[:16])}
		if err := b.Replay(replayRecorder{again}); err != nil {
			t.Fatal(err)
		}
		for i := 16; i < len(again.buf); {
			op := again.buf[i]
			kl, m := binary.Uvarint(again.buf[i+1:])
			i += 1 + m + int(kl)
			if op == undoPut {
				if kl == utxoKeyLen && again.buf[i-int(kl)+2] == tagUtxo {
					if vl, _ := binary.Uvarint(again.buf[i:]); vl == utxoValLen {
						t.Fatalf("undo record %x restored an unspent row with no transaction to place it", v)
					}
				}
				vl, m := binary.Uvarint(again.buf[i:])
				i += m + int(vl)
			}
		}
		// Written again, the record decodes to the same writes; it is
		// the same bytes unless its lengths were not minimal varints.
		b2 := new(leveldb.Batch)
		if _, err := applyUndoRecord(b2, again.buf, int32(n), view); err != nil {
			t.Fatalf("undo record %x, written again as %x, fails: %v", v, again.buf, err)
		}
		if !bytes.Equal(b.Dump(), b2.Dump()) {
			t.Fatalf("undo record %x, written again as %x, decodes to other writes", v, again.buf)
		}
		if len(again.buf) == len(v) && !bytes.Equal(again.buf, v) {
			t.Fatalf("undo record %x written again as %x", v, again.buf)
		}
	})
}

// fuzzRowTags are the tables FuzzIndexReads writes rows of.
var fuzzRowTags = []byte{tagTx, tagTxid, tagHist, tagUtxo, tagBlk, tagUndo, tagLoc}

// FuzzIndexReads writes arbitrary rows into the tables of a real index
// store (rows of one script's history and unspent outputs, transaction
// chunks of txids and of places, txid rows, block rows, undo records, the tip, the size and the
// schema version: what a damaged or foreign store could hold) through
// Store, and runs every read of the read API over them, the loading of the
// index tip and the application of the undo record of the tip's height.
// Reads may fail, but none may panic. Each input's rows replace the
// previous input's in one batch, so one store serves the whole run. The
// status cache starts empty for each input (so that a failure replays) and
// each status is read twice, the second read resuming from the first's
// midstate when the history is long; the unspent scan splits after 2 rows.
func FuzzIndexReads(f *testing.F) {
	params := &chaincfg.RegressionNetParams
	db, err := database.Create("ffldb", filepath.Join(f.TempDir(), "db"), params.Net)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	idx, err := NewElectrumIndex(db, Options{Dir: filepath.Join(f.TempDir(), "index")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { idx.Close() })
	idx.SetScanSplit(2)
	store := idx.Store()
	sh := ScriptHashFromScript([]byte{0x51})
	hx := sh.hashX()

	// A row is tag(1) keylen(1) key valuelen(1) value; the tag is a
	// table's (any other byte picks one), 'T' (a transaction chunk whose
	// value is repeated to 32 entries), 'z' (the tip), 's' (the size) or
	// 'v' (the schema version), and keys of history and unspent rows
	// get the script's hashX in front. The first seed is a consistent
	// index of one block with its undo record: its reads find the
	// history, the unspent output, the balance and the transaction's
	// location (RawTx then fails: btcd's database has no block).
	row := func(tag byte, key, val []byte) []byte {
		return append(append(append([]byte{tag, byte(len(key))}, key...), byte(len(val))), val...)
	}
	var txid chainhash.Hash
	txid[0] = 0xab
	pos := make([]byte, txPosLen)
	putTxPos(pos, txPos(1, 0))
	entry := bytes.Clone(txid[:])
	place := make([]byte, locEntryLen)
	putLocEntry(place, 81, 60)
	utxo := append(append(binary.BigEndian.AppendUint32(nil, 1), txid[:]...), 0, 0, 0, 0)
	uval := make([]byte, utxoValLen)
	putUtxoVal(uval, 5000, 0)
	undo := &undoRecorder{buf: make([]byte, 16)}
	_ = undo.Put(append(append(tablePrefix(tagUtxo), hx[:]...), utxo...), uval)
	_ = undo.Delete(blkKey(1))
	var hash chainhash.Hash
	f.Add(bytes.Join([][]byte{
		row(tagHist, binary.BigEndian.AppendUint32(nil, 1), []byte{0, 0}), row(tagTx, pos, entry),
		row(tagLoc, pos, place), row(tagTxid, append(txid[:txidPrefix:txidPrefix], pos...), nil),
		row(tagUtxo, utxo, uval), row(tagBlk, binary.BigEndian.AppendUint32(nil, 0), blkVal(1, &hash)),
		row(tagBlk, binary.BigEndian.AppendUint32(nil, 1), blkVal(2, &hash)),
		row(tagUndo, binary.BigEndian.AppendUint32(nil, 1), undo.buf),
		row('z', nil, tipVal(&hash, 1)), row('s', nil, encodeStats(sizeStats{Rows: 5, Bytes: 300})),
	}, nil), txid[:], int32(1), uint32(0))
	f.Add(bytes.Join([][]byte{row(tagHist, pos[:3], nil), row(tagUtxo, utxo[:5], uval[:3]), row(tagTx, pos, entry[:7]),
		row('z', nil, []byte{1}), row('v', nil, []byte{0, 0, 0, 9})}, nil), txid[:], int32(-1), uint32(70000))
	// A long history in one row (127 positions) with full transaction
	// chunks, and unspent rows at several heights: the status cache and
	// the split scan get work.
	long := make([]byte, 0, 254)
	for i := 0; i < 127; i++ {
		long = binary.BigEndian.AppendUint16(long, uint16(i))
	}
	var rows [][]byte
	rows = append(rows, row(tagHist, binary.BigEndian.AppendUint32(nil, 1), long))
	for h := uint32(0); h < 5; h++ {
		rows = append(rows, row(tagUtxo, append(binary.BigEndian.AppendUint32(nil, h), utxo[4:]...), uval))
	}
	for first := 0; first < 128; first += txChunk {
		putTxPos(pos, txPos(1, first))
		rows = append(rows, row('T', pos, entry))
	}
	rows = append(rows, row(tagBlk, binary.BigEndian.AppendUint32(nil, 0), blkVal(1, &hash)),
		row(tagBlk, binary.BigEndian.AppendUint32(nil, 1), blkVal(128, &hash)), row('z', nil, tipVal(&hash, 3)))
	f.Add(bytes.Join(rows, nil), txid[:], int32(1), uint32(31))

	// The keys of the previous input's rows, deleted in the batch that
	// writes the next input's.
	var keys [][]byte
	inputs := 0
	f.Fuzz(func(t *testing.T, rows, txidBytes []byte, height int32, txPosition uint32) {
		// The deletes pile up as tombstones every seek steps over.
		if inputs++; inputs%256 == 0 {
			if err := store.CompactRange(util.Range{}); err != nil {
				t.Fatal(err)
			}
		}
		b := new(leveldb.Batch)
		for _, k := range keys {
			b.Delete(k)
		}
		keys = keys[:0]
		// The store's own entries go too: an input that writes none
		// reads a store without them.
		b.Delete(tipKey)
		b.Delete(statsKey)
		b.Delete(versionKey)
		for len(rows) >= 3 && len(keys) < 64 {
			tag, kl := rows[0], int(rows[1])
			rows = rows[2:]
			key := rows[:min(kl, len(rows))]
			rows = rows[len(key):]
			vl := 0
			if len(rows) > 0 {
				vl, rows = int(rows[0]), rows[1:]
			}
			val := rows[:min(vl, len(rows))]
			rows = rows[len(val):]
			var k []byte
			switch tag {
			case 'T':
				// A whole chunk of 32 transactions: val, repeated.
				k = append(tablePrefix(tagTx), key...)
				if len(val) > 0 {
					val = bytes.Repeat(val, txChunk*txEntryLen/len(val)+1)[:txChunk*txEntryLen]
				}
			case 'z':
				k = tipKey
			case 's':
				k = statsKey
			case 'v':
				k = versionKey
			default:
				t := tag
				if bytes.IndexByte(fuzzRowTags, t) < 0 {
					t = fuzzRowTags[int(tag)%len(fuzzRowTags)]
				}
				k = tablePrefix(t)
				if t == tagHist || t == tagUtxo {
					k = append(k, hx[:]...)
				}
				k = append(k, key...)
			}
			b.Put(k, val)
			keys = append(keys, k)
		}
		if err := store.Write(b, nil); err != nil {
			t.Fatal(err)
		}
		idx.republish()
		idx.statuses = newStatusCache(statusCacheEntries)

		var id chainhash.Hash
		copy(id[:], txidBytes)
		// A malformed tip fails the index's start; the reads below must
		// still cope with it.
		tip, err := idx.loadTip()
		_, _ = idx.Tip()
		idx.LatestTip()
		_, _, _ = idx.Size()
		_, _, _ = idx.UndoSize()
		_, _, _ = idx.History(sh, 0)
		_, _, _ = idx.History(sh, 2)
		for i := 0; i < 2; i++ {
			_, _, _ = idx.Status(sh, 0)
		}
		_, _, _, _ = idx.Statuses([]ScriptHash{sh, sh, {}}, 0)
		_, _, _ = idx.Status(sh, 3)
		_, _, _ = idx.Unspent(sh, 0)
		_, _, _ = idx.Unspent(sh, 3)
		_, _, _, _ = idx.UnspentTotals(sh)
		_, _ = idx.TxLocation(id)
		_, _ = idx.TxIDAt(height, txPosition)
		_, _ = idx.BlockTxIDs(height)
		_, _, _ = idx.Block(height)
		_, _, _ = idx.RawTx(id)
		_, _, _ = idx.PrevOut(wire.OutPoint{Hash: id, Index: txPosition})
		// The undo record of the tip block, as the writer applies it.
		if err == nil {
			view, err := newSnapView(store)
			if err != nil {
				t.Fatal(err)
			}
			if rec := view.Get(undoKey(tip.height)); rec != nil {
				_, _ = applyUndoRecord(new(leveldb.Batch), rec, tip.height, view)
			}
			_ = fillSpendPositions(view, &blockPlan{height: tip.height, txs: []txPlan{{spends: []spendRow{
				{prev: wire.OutPoint{Hash: id}, height: height}}}}})
			view.release()
		}
	})
}

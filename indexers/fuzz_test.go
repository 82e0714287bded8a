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
)

// FuzzSchemaDecoders feeds arbitrary keys and values to every decoder of
// the index's rows (schema.go): none may panic, a row a decoder accepts has
// the layout's length, and where an encoder exists, encoding what was
// decoded gives the bytes back.
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
	encodeTxEntry(chunk[txEntryLen:], &txRow{txid: h, offset: 81, size: 250})
	hk := make([]byte, histKeyLen)
	histKey(hk, &hx, 7)
	f.Add(uk, uv, uint64(0))
	f.Add(blkKey(7), blkVal(12, &h), uint64(1))
	f.Add(tipKey, tipVal(&h, 7), uint64(0))
	f.Add(statsKey, encodeStats(sizeStats{Rows: 3, Bytes: 99}), uint64(0))
	f.Add(hk, []byte{0, 2, 0, 9}, uint64(0))
	f.Add([]byte("Ext\x00\x00\x00\x07\x00\x00"), chunk, txPos(7, 1))
	f.Add([]byte("E"), []byte("x"), uint64(1<<63))
	f.Add(baseTipKey, encodeBaseTip(memTip{valid: true, hash: h, height: 7, txCount: 99, stats: sizeStats{Rows: 3, Bytes: 9}}), uint64(0))
	f.Add(hk, tombstone, uint64(0))
	f.Fuzz(func(t *testing.T, k, v []byte, n uint64) {
		if r, ok := decodeTxEntry(v, n); ok {
			i := int(n%txChunk) * txEntryLen
			got := make([]byte, txEntryLen)
			encodeTxEntry(got, &r)
			if !bytes.Equal(got, v[i:i+txEntryLen]) || r.height != posHeight(n) {
				t.Fatalf("tx entry %d of %x: %+v encodes to %x", n, v, r, got)
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
		if e, ok := decodeHeldVal(v); ok {
			if got := heldVal(e); !bytes.Equal(got, v) {
				t.Fatalf("held balance %x encodes to %x", v, got)
			}
		}
		if bt, ok := decodeBaseTip(v); ok && len(v) == chainhash.HashSize+12+16 {
			if got := encodeBaseTip(bt); !bytes.Equal(got, v) {
				t.Fatalf("base tip %x encodes to %x", v, got)
			}
		}
		if h, ok := rowHeight(k); ok {
			// A tombstone is never a row: the base's masking
			// depends on it.
			if why := malformed(k, tombstone); why == "" {
				t.Fatalf("row %x accepts a tombstone as its value", k)
			}
			if _, ph := (&verifier{span: 1}).part(k); ph != h {
				t.Fatalf("row %x: height %d, the verifier's %d", k, h, ph)
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
			if want := keyLen(tableTag(k)); len(k) != want {
				t.Fatalf("key %x of %d bytes accepted, want %d", k, len(k), want)
			}
			(&verifier{span: 1}).part(k)
			if tag := tableTag(k); (tag == tagUtxo || tag == tagBlk) && len(v) != valLen(k) {
				t.Fatalf("row %x with a value of %d bytes accepted", k, len(v))
			}
			if tableTag(k) == tagHist {
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
	})
}

// fuzzRowTags are the tables FuzzIndexReads writes rows of, and the
// single-row keys.
var fuzzRowTags = []byte{tagTx, tagTxid, tagHist, tagUtxo, tagBlk, tagHeld}

// FuzzIndexReads writes arbitrary rows into the index's tables of a real
// database (rows of one script's history and unspent outputs, transaction
// chunks, txid rows, block rows, the tip, the statistics and the reorg
// epoch: what a damaged or foreign database could hold) and runs every
// read of the read API over them. Reads may fail, but none may panic. Each
// input's rows replace the previous input's, so one database serves the
// whole run.
func FuzzIndexReads(f *testing.F) {
	params := &chaincfg.RegressionNetParams
	db, err := database.Create("ffldb", filepath.Join(f.TempDir(), "db"), params.Net)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	if err := db.Update(func(dbTx database.Tx) error {
		_, err := dbTx.Metadata().CreateBucketIfNotExists(indexTipsBucketName)
		return err
	}); err != nil {
		f.Fatal(err)
	}
	idx := NewElectrumIndex(db, params)
	// No caches: each input's reads must go to its own rows.
	idx.SetReadCacheBytes(0)
	idx.SetChunkCacheBytes(0)
	sh := ScriptHashFromScript([]byte{0x51})
	hx := sh.hashX()

	// A row is tag(1) keylen(1) key valuelen(1) value; the tag is a
	// table's (any other byte picks one), 'z' (the tip), 's' (the
	// statistics), 'r' (the reorg epoch) or 'q' (the held balances'
	// tip), and keys of history, unspent and held balance rows get the
	// script's hashX in front. The first seed is a consistent index of
	// one block: its reads find the history, the unspent output, the
	// balance and the transaction's location; the third holds a balance.
	row := func(tag byte, key, val []byte) []byte {
		return append(append(append([]byte{tag, byte(len(key))}, key...), byte(len(val))), val...)
	}
	var txid chainhash.Hash
	txid[0] = 0xab
	pos := make([]byte, txPosLen)
	putTxPos(pos, txPos(1, 0))
	entry := make([]byte, txEntryLen)
	encodeTxEntry(entry, &txRow{txid: txid, offset: 81, size: 60})
	utxo := append(append(binary.BigEndian.AppendUint32(nil, 1), txid[:]...), 0, 0, 0, 0)
	uval := make([]byte, utxoValLen)
	putUtxoVal(uval, 5000, 0)
	var hash chainhash.Hash
	f.Add(bytes.Join([][]byte{
		row(tagHist, binary.BigEndian.AppendUint32(nil, 1), []byte{0, 0}), row(tagTx, pos, entry), row(tagTxid, append(txid[:txidPrefix:txidPrefix], pos...), nil),
		row(tagUtxo, utxo, uval), row(tagBlk, binary.BigEndian.AppendUint32(nil, 0), blkVal(1, &hash)),
		row(tagBlk, binary.BigEndian.AppendUint32(nil, 1), blkVal(2, &hash)),
		row('z', nil, tipVal(&hash, 1)), row('s', nil, encodeStats(sizeStats{Rows: 5, Bytes: 300})),
	}, nil), txid[:], int32(1), uint32(0))
	f.Add(bytes.Join([][]byte{row(tagHist, pos[:3], nil), row(tagUtxo, utxo[:5], uval[:3]), row(tagTx, pos, entry[:7]),
		row('z', nil, []byte{1})}, nil), txid[:], int32(-1), uint32(70000))
	f.Add(bytes.Join([][]byte{
		row(tagUtxo, utxo, uval), row(tagBlk, binary.BigEndian.AppendUint32(nil, 1), blkVal(2, &hash)),
		row('z', nil, tipVal(&hash, 1)), row('q', nil, tipVal(&hash, 1)),
		row(tagHeld, nil, heldVal(heldEntry{balance: 5000, count: 1})), row(tagHeld, []byte{7}, []byte{1, 2}),
	}, nil), txid[:], int32(1), uint32(0))

	// The rows of the previous input, removed in the same transaction that
	// writes the next input's (one commit per input).
	var keys [][]byte
	f.Fuzz(func(t *testing.T, rows, txidBytes []byte, height int32, txPosition uint32) {
		err := db.Update(func(dbTx database.Tx) error {
			meta := dbTx.Metadata()
			for _, k := range keys {
				if err := meta.Delete(k); err != nil {
					return err
				}
			}
			keys = keys[:0]
			if err := meta.Bucket(indexTipsBucketName).Delete(electrumIndexKey); err != nil {
				return err
			}
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
				case 'z':
					k = tipKey
					if err := meta.Bucket(indexTipsBucketName).Put(electrumIndexKey, val); err != nil {
						return err
					}
				case 's':
					k = statsKey
				case 'r':
					k = reorgKey
				case 'q':
					k = heldMarkKey
				default:
					t := tag
					if bytes.IndexByte(fuzzRowTags, t) < 0 {
						t = fuzzRowTags[int(tag)%len(fuzzRowTags)]
					}
					k = tablePrefix(t)
					if t == tagHist || t == tagUtxo || t == tagHeld {
						k = append(k, hx[:]...)
					}
					k = append(k, key...)
				}
				if err := meta.Put(k, val); err != nil {
					return err
				}
				keys = append(keys, k)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// A malformed tip fails Init (and the node's start); the reads
		// below must still cope with it.
		idx.Init()
		var id chainhash.Hash
		copy(id[:], txidBytes)
		idx.Tip()
		idx.History(sh, 0)
		idx.History(sh, 2)
		idx.Status(sh, 0)
		idx.Statuses([]ScriptHash{sh, sh}, 0)
		idx.Unspent(sh, 0)
		idx.Balance(sh)
		idx.TxLocation(id)
		idx.TxIDAt(height, txPosition)
		idx.BlockTxIDs(height)
		idx.TxCount(height)
		idx.RawTx(id)
	})
}

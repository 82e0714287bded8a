package indexers

import (
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// TestLongHistoryLeavesBlockCache reads a history long enough to be split
// from a store whose transaction chunks sit in table files: its chunks are
// read around the block cache (the cache holds no more afterwards than
// before), the same history read as a short one fills the cache, and both
// reads return every entry's txid.
func TestLongHistoryLeavesBlockCache(t *testing.T) {
	db, err := openStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	const blocks = 600 // two chunks each: 1.2 MB, about 75 blocks of 16 KiB
	b := new(leveldb.Batch)
	var nums []uint64
	var want []chainhash.Hash
	for h := int32(1); h <= blocks; h++ {
		for first := 0; first < 2*txChunk; first += txChunk {
			k := make([]byte, txKeyLen)
			txKey(k, txPos(h, first))
			v := make([]byte, txChunk*txEntryLen)
			for i := 0; i < txChunk; i++ {
				v[i*txEntryLen] = byte(h)
				v[i*txEntryLen+1] = byte(h >> 8)
				v[i*txEntryLen+2] = byte(first + i)
			}
			b.Put(k, v)
		}
		pos := int(h) % (2 * txChunk)
		nums = append(nums, txPos(h, pos))
		var id chainhash.Hash
		id[0], id[1], id[2] = byte(h), byte(h>>8), byte(pos)
		want = append(want, id)
	}
	if err := db.Write(b, nil); err != nil {
		t.Fatal(err)
	}
	// Into table files, where the block cache applies.
	if err := db.CompactRange(util.Range{}); err != nil {
		t.Fatal(err)
	}

	cached := func() int {
		s, err := db.GetProperty("leveldb.cachedblock")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	read := func(split int) {
		t.Helper()
		v, err := newSnapView(db)
		if err != nil {
			t.Fatal(err)
		}
		defer v.release()
		got, err := readHistory(v, v.Cursor(), ScriptHash{}, nums, split)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i].TxHash != want[i] || got[i].Height != int32(i+1) {
				t.Fatalf("split %d: entry %d is %v at %d, want %v at %d", split, i,
					got[i].TxHash, got[i].Height, want[i], i+1)
			}
		}
	}

	before := cached()
	read(len(nums) - 1)
	if after := cached(); after != before {
		t.Fatalf("a long history's read took the block cache from %d to %d bytes", before, after)
	}
	read(len(nums))
	if after := cached(); after < before+blocks*txChunk*txEntryLen {
		t.Fatalf("a short history's read took the block cache from %d to %d bytes, want its chunks in it",
			before, after)
	}
}

package indexers

import (
	"encoding/binary"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestMergedBatchCrossesFlushMark pins what the catch-up's batch sizes
// rely on (catchup.go, batchBytes): ffldb keeps a committed transaction in
// its write cache, and the next commit writes the cache to leveldb once the
// cache holds more than two thirds of 100 MiB, counted as rowCost counts
// rows. A merged batch of batchBytes must therefore reach leveldb with the
// next commit, and one of 90% of the flush mark must not.
func TestMergedBatchCrossesFlushMark(t *testing.T) {
	const mark = 100 << 20 * 2 / 3
	for _, tc := range []struct {
		bytes int
		flush bool
	}{{mark * 9 / 10, false}, {batchBytes, true}} {
		dir := filepath.Join(t.TempDir(), "db")
		db, err := database.Create("ffldb", dir, wire.SimNet)
		if err != nil {
			t.Fatal(err)
		}
		// Rows of history-key size with 200-byte values: the treap node
		// and bucket id are a third of each row's cost, as in real
		// batches, with fewer rows to insert.
		v := make([]byte, 200)
		err = db.Update(func(tx database.Tx) error {
			meta := tx.Metadata()
			for i, cost := 0, 0; cost < tc.bytes; i++ {
				k := make([]byte, histKeyLen)
				putPrefix(k, tagHist)
				binary.BigEndian.PutUint64(k[pfx:], uint64(i)*0x9e3779b97f4a7c15)
				if err := meta.Put(k, v); err != nil {
					return err
				}
				cost += rowCost(k, v)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		before := dirSize(t, dir)
		err = db.Update(func(tx database.Tx) error { return tx.Metadata().Put([]byte("Exz"), []byte{1}) })
		if err != nil {
			t.Fatal(err)
		}
		written := dirSize(t, dir) - before
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if flushed := written > int64(tc.bytes)/4; flushed != tc.flush {
			t.Errorf("a batch of %d bytes: next commit wrote %d bytes to disk, want flush %v",
				tc.bytes, written, tc.flush)
		}
	}
}

// dirSize returns the size of the files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

package indexers_test

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/storage"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// flakyStorage is the store's file storage whose table reads fail with EIO
// while failing is set: a disk or network filesystem that errs for a
// moment.
type flakyStorage struct {
	storage.Storage
	failing atomic.Bool
	failed  atomic.Int64
}

func (s *flakyStorage) Open(fd storage.FileDesc) (storage.Reader, error) {
	r, err := s.Storage.Open(fd)
	if err != nil || fd.Type != storage.TypeTable {
		return r, err
	}
	return flakyReader{r, s}, nil
}

type flakyReader struct {
	storage.Reader
	s *flakyStorage
}

func (r flakyReader) ReadAt(p []byte, off int64) (int, error) {
	if r.s.failing.Load() {
		r.s.failed.Add(1)
		return 0, syscall.EIO
	}
	return r.Reader.ReadAt(p, off)
}

func (r flakyReader) Read(p []byte) (int, error) {
	if r.s.failing.Load() {
		r.s.failed.Add(1)
		return 0, syscall.EIO
	}
	return r.Reader.Read(p)
}

// TestTransientReadErrorAtStartKeepsIndex: a read of the store that fails
// for a moment while the index opens (EIO from a flaky disk, not a damaged
// row) fails that start, as a failed read of the schema version does, and
// leaves the index whole to the next one: it is not taken for a damaged tip,
// which would have the index deleted and rebuilt from the blocks.
func TestTransientReadErrorAtStartKeepsIndex(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	h := eqCreate(t, dir, indexers.Options{}, &idx)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	tip, err := idx.Tip()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	// Start 1: the store's table reads fail for a moment once the schema
	// version has been read.
	fs, err := storage.OpenFile(eqStoreDir(dir), false)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyStorage{Storage: fs}
	store, err := leveldb.Open(flaky, indexers.StoreOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(indexers.VersionKey, nil); err != nil {
		t.Fatal(err)
	}
	flaky.failing.Store(true)
	startErr := indexers.PrepareStoreOn(store)
	flaky.failing.Store(false)
	if flaky.failed.Load() == 0 {
		t.Skip("no table read happened while reads were failing")
	}
	t.Logf("start during the read errors: %v", startErr)
	store.Close()
	fs.Close()

	// Start 2: the disk answers again.
	db, err := database.Open("ffldb", h.DBPath(), h.Params.Net)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := indexers.NewElectrumIndex(db, indexers.Options{Dir: eqStoreDir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, err := again.Tip()
	if err != nil {
		t.Fatal(err)
	}
	if got.Height != tip.Height {
		var ce *indexers.CorruptError
		t.Fatalf("%d table reads failed with EIO during one start (start error: %v, corrupt: %v); "+
			"the next start has the index at height %d, want %d: the whole index was deleted to be rebuilt",
			flaky.failed.Load(), startErr, errors.As(startErr, &ce), got.Height, tip.Height)
	}
}

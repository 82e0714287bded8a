package indexers_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
)

// nextStoreFile returns one more than the largest goleveldb file number in
// the store directory dir.
func nextStoreFile(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^(?:MANIFEST-)?(\d+)(?:\.(?:ldb|log|tmp))?$`)
	next := 0
	for _, e := range ents {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n >= next {
				next = n + 1
			}
		}
	}
	return next
}

// TestFailedStoreWriteStopsWriter: a commit whose write fails (here the
// tables of a full batch cannot be created, as on a full disk) stops the
// writer for the rest of the run: nothing later waits for the store's write
// lock, which a failed goleveldb transaction may keep, so the index stays at
// its last commit and Close returns. After a restart the index resumes from
// there and equals a build from scratch.
func TestFailedStoreWriteStopsWriter(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	// Every batch counts as full: written as a transaction, to tables.
	opts := indexers.Options{BatchBytes: 1}
	h, err := testchain.Create(dir, eqFactory(dir, opts, &idx))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.MineEmpty(3); err != nil {
		t.Fatal(err)
	}
	before, _ := idx.LatestTip()
	store := eqStoreDir(dir)
	next := nextStoreFile(t, store)
	var blockers []string
	for n := next; n < next+64; n++ {
		p := filepath.Join(store, fmt.Sprintf("%06d.ldb", n))
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		blockers = append(blockers, p)
	}
	if _, err := h.MineEmpty(1); err == nil {
		t.Fatal("the block's commit did not fail")
	}
	for _, p := range blockers {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	// The disk works again; the writer stays stopped until a restart,
	// and waits for nothing.
	mined := make(chan error, 1)
	go func() {
		_, err := h.MineEmpty(1)
		mined <- err
	}()
	select {
	case err := <-mined:
		if err == nil {
			t.Fatal("the writer went on after a failed write")
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("the writer hangs after a failed write")
	}
	if tip, _ := idx.LatestTip(); tip != before {
		t.Fatalf("index tip %v after the failed write, want %v", tip, before)
	}
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case <-closed:
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("Close hangs after a failed write")
	}
	// The store was left open; the failed transaction was discarded, so
	// it closes now, as the process's exit would close it.
	if err := idx.Store().Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Reopen(eqFactory(dir, opts, &idx)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if tip, _ := idx.LatestTip(); tip.Hash != h.Chain.BestSnapshot().Hash {
		t.Fatalf("after the restart the index is at %v, the chain at %v", tip, h.Chain.BestSnapshot().Hash)
	}
	sameAsScratch(t, "after a failed write and a restart", h, idx)
}

// countingDB counts read transactions begun after Close; once armed, the
// trip-th read closes interrupt and every later one is slow.
type countingDB struct {
	database.DB
	armed      atomic.Bool
	views      atomic.Int64
	trip       int64
	interrupt  chan struct{}
	closed     atomic.Bool
	afterClose atomic.Int64
}

func (d *countingDB) View(fn func(database.Tx) error) error {
	if d.armed.Load() {
		n := d.views.Add(1)
		if n == d.trip {
			close(d.interrupt)
		}
		if n >= d.trip {
			time.Sleep(300 * time.Millisecond)
		}
	}
	if d.closed.Load() {
		d.afterClose.Add(1)
	}
	return d.DB.View(fn)
}

func (d *countingDB) Close() error {
	d.closed.Store(true)
	return d.DB.Close()
}

// TestFetchesEndBeforeClose: a catch-up cut short (here the start's, by the
// interrupt) waits for the block fetches it started, so that nothing of the
// index reads btcd's database once the index is closed and the database
// after it.
func TestFetchesEndBeforeClose(t *testing.T) {
	dir := t.TempDir()
	h, err := testchain.Create(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.MineEmpty(40); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	db := &countingDB{trip: 12, interrupt: make(chan struct{})}
	inner := eqFactory(dir, indexers.Options{}, nil)
	_, err = testchain.OpenWith(dir, testchain.Options{
		Interrupt: db.interrupt,
		WrapDB: func(d database.DB) database.DB {
			db.DB = d
			return db
		},
		Index: func(d database.DB, params *chaincfg.Params) blockchain.IndexManager {
			db.armed.Store(true)
			return inner(d, params)
		},
	})
	if err == nil {
		t.Fatal("the interrupted start succeeded")
	}
	if !db.closed.Load() {
		t.Fatalf("the harness did not close the database: %v", err)
	}
	time.Sleep(time.Second) // room for a fetch still running to show
	if n := db.afterClose.Load(); n > 0 {
		t.Fatalf("btcd's database read %d times after the index and the database were closed", n)
	}
}

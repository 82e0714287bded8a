package indexers_test

// How the index follows btcd's chain at its edges: blocks that keep
// arriving while a caller waits in Sync, and a store damaged while the
// node's chain is intact.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// newFollowRig is newEdgeRig with the index's options given.
func newFollowRig(t *testing.T, opts indexers.Options) *edgeRig {
	t.Helper()
	r := &edgeRig{t: t}
	inner := testchain.ElectrumIndex(t.TempDir(), opts, &r.idx, nil)
	h, err := testchain.CreateWith(t.TempDir(), testchain.Options{Index: func(db database.DB, p *chaincfg.Params) blockchain.IndexManager {
		return inner(db, p)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r.h = h
	return r
}

// TestSyncReturnsWhileBlocksKeepArriving: Sync promises the chain's tip as
// of the call. Here a new block arrives right after every commit of the
// index (as during an initial download, or on a regtest node another client
// keeps mining on), until Sync returns or 150 blocks have arrived. Sync
// returns once the index holds the tip of its call; it does not wait for
// the chain to stop moving.
func TestSyncReturnsWhileBlocksKeepArriving(t *testing.T) {
	const most = 150
	var (
		r        *edgeRig
		arriving atomic.Bool
		returned atomic.Bool
		arrived  atomic.Int32
		failed   atomic.Value
	)
	r = newFollowRig(t, indexers.Options{UndoBlocks: 6, OnCommit: func(c indexers.Commit) {
		if !arriving.Load() || returned.Load() || arrived.Load() >= most {
			return
		}
		// The next block arrives: mined on the chain's tip and processed
		// here, on the writer's side, so it is there before its next pass
		// ends.
		best := r.h.Chain.BestSnapshot()
		cb := r.coinbase(best.Height+1, edgeScript(int64(5000+best.Height)),
			blockchain.CalcBlockSubsidy(best.Height+1, r.h.Params))
		b := r.block(best.Hash, cb)
		if _, orphan, err := r.h.Chain.ProcessBlock(b, blockchain.BFNoPoWCheck); err != nil || orphan {
			failed.Store(fmt.Errorf("block %v: orphan %v, %v", b.Hash(), orphan, err))
			return
		}
		arrived.Add(1)
	}})
	r.mine(edgeScript(1))

	arriving.Store(true)
	r.mine(edgeScript(2)) // its commit starts the arrivals; mine calls Sync
	returned.Store(true)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("a block could not be processed: %v", err)
	}
	if n := arrived.Load(); n >= most {
		t.Errorf("Sync returned only once blocks stopped arriving: %d blocks arrived after the one it waited for", n)
	}
}

// TestCorruptStoreFileIsRebuilt: the index's store damaged on disk (here
// its MANIFEST, as a power loss can leave it: the store is written without
// fsync) while btcd's chain is intact. The node never refuses to start
// because of the index (docs/OPERATIONS.md): opened as the node opens it,
// the index is emptied to be built again.
func TestCorruptStoreFileIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	h := eqCreate(t, dir, indexers.Options{}, &idx)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	manifests, err := filepath.Glob(filepath.Join(eqStoreDir(dir), "MANIFEST-*"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no MANIFEST in the store: %v", err)
	}
	for _, m := range manifests {
		if err := os.WriteFile(m, []byte("not a manifest: torn by a power loss"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := database.Open("ffldb", h.DBPath(), h.Params.Net)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := indexers.NewElectrumIndex(db, indexers.Options{Dir: eqStoreDir(dir)})
	if err != nil {
		t.Fatalf("the node cannot start over a damaged index store: %v", err)
	}
	defer again.Close()
	if tip, err := again.Tip(); err != nil || tip.Height != -1 {
		t.Fatalf("the damaged index opened at %+v (%v), want it emptied to be built again", tip, err)
	}
}

// TestCorruptStoreTableIsRebuilt: a table file of the index's store
// damaged on disk (a bad sector; every block of it fails its checksum)
// while btcd's chain is intact. The node never refuses to start because of
// the index (docs/OPERATIONS.md): the index is emptied and built again
// rather than failing at open or serving reads that fail.
func TestCorruptStoreTableIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	h := eqCreate(t, dir, indexers.Options{}, &idx)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	// A reopen moves the journal's rows into a table.
	if err := h.Reopen(eqFactory(dir, indexers.Options{}, &idx)); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	tables, err := filepath.Glob(filepath.Join(eqStoreDir(dir), "*.ldb"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("no table in the store: %v", err)
	}
	for _, tb := range tables {
		b, err := os.ReadFile(tb)
		if err != nil {
			t.Fatal(err)
		}
		// Flip the bytes of the data blocks, leaving the footer (48
		// bytes) and the index blocks before it readable.
		for i := 0; i < len(b)/2; i++ {
			b[i] ^= 0xff
		}
		if err := os.WriteFile(tb, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := database.Open("ffldb", h.DBPath(), h.Params.Net)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := indexers.NewElectrumIndex(db, indexers.Options{Dir: eqStoreDir(dir)})
	if err != nil {
		t.Fatalf("the node cannot start over a damaged index table: %v", err)
	}
	defer again.Close()
	if tip, err := again.Tip(); err != nil || tip.Height != -1 {
		t.Fatalf("the damaged index opened at %+v (%v), want it emptied to be built again", tip, err)
	}
}

// TestSyncReturnsOnceOnCommitReturned: Sync's callers (the faucet, the
// integration harness) read what OnCommit brings about (the mempool view
// reconciled, notifications queued) right after it returns, so it returns
// once OnCommit has returned for the tip it waits for, not once the commit
// is published to readers.
func TestSyncReturnsOnceOnCommitReturned(t *testing.T) {
	var (
		blocking atomic.Bool
		entered  = make(chan struct{}, 1)
		release  = make(chan struct{})
		returned atomic.Bool
	)
	r := newFollowRig(t, indexers.Options{OnCommit: func(c indexers.Commit) {
		if !blocking.Load() {
			return
		}
		entered <- struct{}{}
		<-release
		returned.Store(true)
	}})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	r.mine(edgeScript(1))
	blocking.Store(true)
	t.Cleanup(unblock) // before the chain's close, which waits for the writer
	tip, height := r.h.Tip()
	cb := r.coinbase(height+1, edgeScript(2), blockchain.CalcBlockSubsidy(height+1, r.h.Params))
	if _, _, err := r.h.Chain.ProcessBlock(r.block(tip, cb), blockchain.BFNoPoWCheck); err != nil {
		t.Fatal(err)
	}
	<-entered // the block is published; OnCommit has not returned
	done := make(chan error, 1)
	go func() { done <- r.idx.Sync() }()
	select {
	case err := <-done:
		t.Fatalf("Sync returned (%v) while OnCommit of its tip had not returned", err)
	case <-time.After(200 * time.Millisecond): // room for an early return to show
	}
	unblock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !returned.Load() {
		t.Fatal("Sync returned before OnCommit did")
	}
}

// TestSyncAfterCatchUpAtStart: an index opened behind the chain catches up
// at start, before the writer runs on its own; Sync then returns at once
// (it once waited for ever: the start's commits were not counted).
func TestSyncAfterCatchUpAtStart(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	h := eqCreate(t, dir, indexers.Options{}, &idx)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	// A store of its own, empty: the start builds it from the chain.
	fresh := indexers.Options{Dir: filepath.Join(t.TempDir(), "electrum")}
	if err := h.Reopen(testchain.ElectrumIndex(fresh.Dir, fresh, &idx, nil)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- idx.Sync() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatal("Sync did not return on an index caught up at start")
	}
	if tip, _ := idx.LatestTip(); tip.Hash != h.Chain.BestSnapshot().Hash {
		t.Fatalf("index tip %d, want the chain's %d", tip.Height, h.Chain.BestSnapshot().Height)
	}
}

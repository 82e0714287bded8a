package indexers_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// eqStoreDir is where the index of a harness directory keeps its store:
// inside the directory, so that a copy of the directory copies both the
// chain and its index.
func eqStoreDir(dir string) string { return filepath.Join(dir, "electrum") }

// eqFactory returns the factory of an index with its store in the harness
// directory dir, recording the index in *out when out is not nil.
func eqFactory(dir string, opts indexers.Options, out **indexers.ElectrumIndex) testchain.IndexFactory {
	return testchain.ElectrumIndex(eqStoreDir(dir), opts, out, nil)
}

// eqCreate creates a harness in dir with the index of eqFactory, closed when
// the test ends.
func eqCreate(t *testing.T, dir string, opts indexers.Options, out **indexers.ElectrumIndex) *testchain.Harness {
	t.Helper()
	h, err := testchain.Create(dir, eqFactory(dir, opts, out))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// eqOpen opens the harness directory dir with the index of eqFactory (and
// btcd's indexes others makes), closed when the test ends.
func eqOpen(t *testing.T, dir string, opts indexers.Options, out **indexers.ElectrumIndex,
	others func(database.DB, *chaincfg.Params) []btcdindexers.Indexer) *testchain.Harness {
	t.Helper()
	h, err := testchain.Open(dir, testchain.ElectrumIndex(eqStoreDir(dir), opts, out, others))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// eqUndoPrefix starts the keys of the undo records.
var eqUndoPrefix = []byte("Exd")

// eqIndexData returns every row of the index's store, the tip, size and
// schema version included, keyed by key; the undo records, which depend on
// the way the index got to its tip, are left out (eqUndoData).
func eqIndexData(t testing.TB, idx *indexers.ElectrumIndex) map[string][]byte {
	t.Helper()
	data := make(map[string][]byte)
	it := idx.Store().NewIterator(nil, nil)
	defer it.Release()
	for it.Next() {
		if bytes.HasPrefix(it.Key(), eqUndoPrefix) {
			continue
		}
		if !bytes.HasPrefix(it.Key(), indexers.RowPrefix) {
			t.Fatalf("key %x outside the index's prefix in its store", it.Key())
		}
		data[string(it.Key())] = bytes.Clone(it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if _, ok := data[string(indexers.TipKey)]; !ok {
		t.Fatal("the store holds no index tip")
	}
	return data
}

// eqUndoData returns the undo records of the index's store.
func eqUndoData(t testing.TB, idx *indexers.ElectrumIndex) map[string][]byte {
	t.Helper()
	data := make(map[string][]byte)
	it := idx.Store().NewIterator(util.BytesPrefix(eqUndoPrefix), nil)
	defer it.Release()
	for it.Next() {
		data[string(it.Key())] = bytes.Clone(it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return data
}

// eqCompare fails the test unless got holds exactly the data of want.
func eqCompare(t testing.TB, what string, want, got map[string][]byte) {
	t.Helper()
	var missing, extra, differ []string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case !bytes.Equal(g, v):
			differ = append(differ, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra)+len(differ) == 0 {
		return
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(differ)
	first := func(ks []string) string {
		if len(ks) == 0 {
			return "-"
		}
		return fmt.Sprintf("%x", ks[0])
	}
	t.Fatalf("%s: %d keys missing (first %s), %d extra (first %s), %d with other values (first %s) of %d",
		what, len(missing), first(missing), len(extra), first(extra), len(differ), first(differ), len(want))
}

// eqNoUndo fails the test unless the index holds no undo record: every
// block it indexed was on disk when its writer started.
func eqNoUndo(t testing.TB, what string, idx *indexers.ElectrumIndex) {
	t.Helper()
	if hs := undoHeights(t, idx); len(hs) != 0 {
		t.Fatalf("%s: undo records at %v, want none (a catch-up of blocks on disk at start)", what, hs)
	}
}

// eqRebuilt reports whether commits include the empty index of a rebuild.
func eqRebuilt(commits []indexers.Commit) bool {
	for _, c := range commits {
		if c.Tip.Height < 0 {
			return true
		}
	}
	return false
}

// eqHeights returns the heights from..to.
func eqHeights(from, to int32) []int32 {
	var hs []int32
	for h := from; h <= to; h++ {
		hs = append(hs, h)
	}
	return hs
}

// eqFreshData builds an index from scratch on h's chain, in a store of its
// own, and returns its rows (eqIndexData) and undo records.
func eqFreshData(t testing.TB, h *testchain.Harness) map[string][]byte {
	t.Helper()
	data, _ := eqFreshDataUndo(t, h)
	return data
}

// eqFreshDataUndo is eqFreshData that also returns the fresh index's undo
// records.
func eqFreshDataUndo(t testing.TB, h *testchain.Harness) (map[string][]byte, map[string][]byte) {
	t.Helper()
	idx, err := indexers.NewElectrumIndex(h.DB, indexers.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	if err := indexers.NewManager(h.DB, idx).Init(h.Chain, nil); err != nil {
		t.Fatal(err)
	}
	hash, height := h.Tip()
	if tip, err := idx.Tip(); err != nil || tip.Hash != hash || tip.Height != height {
		t.Fatalf("fresh index at %d %v (%v), chain at %d %v", tip.Height, tip.Hash, err, height, hash)
	}
	return eqIndexData(t, idx), eqUndoData(t, idx)
}

// eqCopyDir copies a closed harness directory (or any tree of files).
func eqCopyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// eqScenario is a deterministic chain history in two phases; harnesses
// driven with the same seed build the same chain. hook, when set, is called
// after each block phase1 mines.
type eqScenario struct {
	rng  *rand.Rand
	hook func(i int)
}

// phase1 mines mature coins and random blocks with reorganizations and an
// invalidated-then-reconsidered block.
func (s *eqScenario) phase1(t *testing.T, h *testchain.Harness) {
	t.Helper()
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 15
	for i := 0; i < 40; i++ {
		if _, err := h.Mine(s.rng, spec); err != nil {
			t.Fatal(err)
		}
		if s.hook != nil {
			s.hook(i)
		}
		if i%10 == 9 {
			if _, err := h.Reorg(s.rng, 1+i/10, spec); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, height := h.Tip()
	hash, _ := h.Chain.BlockHashByHeight(height - 2)
	if err := h.InvalidateBlock(*hash); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Mine(s.rng, spec); err != nil {
		t.Fatal(err)
	}
	if err := h.ReconsiderBlock(*hash); err != nil {
		t.Fatal(err)
	}
}

// phase2 starts with a reorganization of blocks full of transactions, then
// mines on.
func (s *eqScenario) phase2(t *testing.T, h *testchain.Harness) {
	t.Helper()
	spec := testchain.DefaultSpec()
	spec.Txs = 15
	if _, err := h.Reorg(s.rng, 5, spec); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := h.Mine(s.rng, spec); err != nil {
			t.Fatal(err)
		}
	}
}

// eqCountingDB closes an interrupt channel once the chain and the index have
// opened a given number of read transactions after it was armed: a way to
// stop a catch-up part-way that does not depend on its batch size.
type eqCountingDB struct {
	database.DB
	armed     atomic.Bool
	views     atomic.Int64
	limit     int64
	interrupt chan struct{}
}

// View counts the read transaction and interrupts at the limit.
func (d *eqCountingDB) View(fn func(database.Tx) error) error {
	if d.armed.Load() && d.views.Add(1) == d.limit {
		close(d.interrupt)
	}
	return d.DB.View(fn)
}

// eqArmingManager arms the counting database when the index manager starts
// its work, so the chain's own start-up reads do not count.
type eqArmingManager struct {
	blockchain.IndexManager
	db *eqCountingDB
}

// Init arms the counter and runs the manager's Init.
func (m *eqArmingManager) Init(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	m.db.armed.Store(true)
	return m.IndexManager.Init(chain, interrupt)
}

// eqInterruptedOpen opens the chain in dir, of height height, with its index
// (a new one when the directory has none) and an interrupt that fires after
// views read transactions (two per block caught up: views = height
// interrupts at about half of the chain); the open must fail and leave the
// index part-way, whose tip it returns.
func eqInterruptedOpen(t *testing.T, dir string, height int32, views int64, opts indexers.Options) indexers.Tip {
	t.Helper()
	counting := &eqCountingDB{limit: views, interrupt: make(chan struct{})}
	var idx *indexers.ElectrumIndex
	inner := eqFactory(dir, opts, &idx)
	_, err := testchain.OpenWith(dir, testchain.Options{
		Interrupt: counting.interrupt,
		WrapDB: func(db database.DB) database.DB {
			counting.DB = db
			return counting
		},
		Index: func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
			return &eqArmingManager{IndexManager: inner(db, params), db: counting}
		},
	})
	if err == nil {
		t.Fatal("interrupted catch-up reported success")
	}
	if idx == nil {
		t.Fatalf("the chain did not open its index: %v", err)
	}
	// The chain never opened: its index is the test's to close.
	mid, terr := idx.Tip()
	if cerr := idx.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if terr != nil {
		t.Fatal(terr)
	}
	if mid.Height < 1 || mid.Height >= height {
		t.Fatalf("interrupt left the index at height %d of %d: not part-way (%v)", mid.Height, height, err)
	}
	return mid
}

// TestEquivalenceLiveCatchUpInterruptedStale builds one chain history in
// several ways and requires byte-identical index rows from all of them. The
// undo records depend on the way: a block btcd connected while the writer
// ran has one, a block btcd had on disk when the writer started has none
// (but for the records of an earlier run a restart keeps), and every record
// is the record of the main chain's block at its height (mainChainUndo):
//   - live: the index followed every block as the chain grew, and holds the
//     record of every block but genesis;
//   - lagging: the writer stalled on a block the chain then reorganized
//     away, while the rest of the history went on, then caught up at once
//     in small batches; its records are the live index's;
//   - catch-up: the chain built without the index, then opened with it,
//     alone and next to btcd's transaction index: no record;
//   - interrupted: the same catch-up stopped part-way by the interrupt
//     channel, then resumed by a second start, in one batch and in batches
//     of a few blocks: no record;
//   - interrupted, then the chain reorganized below the index tip while the
//     index was off (its blocks undone from the blocks, there being no undo
//     record, not rebuilt), then resumed: equal to a fresh index of that
//     chain;
//   - stale: the index enabled for the first phase (and restarted), disabled
//     while the chain reorganized blocks full of transactions, then enabled
//     again, so it must undo its tip off the abandoned branch before
//     catching up (with the default undo window, all from undo records, and
//     with one of two blocks, the rest from the blocks, never rebuilt); it
//     keeps the records of the first phase below the branch, within the
//     window.
func TestEquivalenceLiveCatchUpInterruptedStale(t *testing.T) {
	const seed = 21

	// Live.
	var liveIdx *indexers.ElectrumIndex
	live := eqCreate(t, t.TempDir(), indexers.Options{}, &liveIdx)
	s := &eqScenario{rng: rand.New(rand.NewSource(seed))}
	s.phase1(t, live)
	s.phase2(t, live)
	want := eqIndexData(t, liveIdx)
	wantUndo := eqUndoData(t, liveIdx)
	wantTip, wantHeight := live.Tip()
	t.Logf("chain height %d, %d index keys, %d undo records", wantHeight, len(want), len(wantUndo))
	verifyIndexOK(t, live, liveIdx, "live")
	genesisOnly := map[chainhash.Hash]bool{*live.Params.GenesisHash: true}
	checkUndoRule(t, "live", live.Chain, mainChainUndo(t, "live", live.Chain, wantUndo), genesisOnly, noneKept)

	// Lagging: the writer's commit of the block mined at phase1's step 9
	// stalls until the end of the scenario, during which that block is
	// reorganized away (its reorganization is right after the hook).
	var lagIdx *indexers.ElectrumIndex
	var stalling atomic.Bool
	release := make(chan struct{})
	var releaseOnce sync.Once
	stalled := make(chan indexers.Tip, 1)
	lagFactory := eqFactory(t.TempDir(), indexers.Options{BatchBytes: 4 << 10, OnCommit: func(c indexers.Commit) {
		if stalling.CompareAndSwap(true, false) {
			stalled <- c.Tip
			<-release
		}
	}}, &lagIdx)
	lag := testchain.New(t, func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		return lagManager{lagFactory(db, params)}
	})
	t.Cleanup(func() {
		releaseOnce.Do(func() { close(release) })
		lagIdx.Close()
	})
	s = &eqScenario{rng: rand.New(rand.NewSource(seed))}
	var stallTip indexers.Tip
	s.hook = func(i int) {
		switch i {
		case 8:
			if err := lagIdx.Sync(); err != nil {
				t.Fatal(err)
			}
			stalling.Store(true)
		case 9:
			// The writer commits the block just mined, and stalls.
			stallTip = <-stalled
		}
	}
	s.phase1(t, lag)
	s.phase2(t, lag)
	if lag.Chain.MainChainHasBlock(&stallTip.Hash) {
		t.Fatalf("the writer stalled on block %d %v, which stayed in the main chain", stallTip.Height, stallTip.Hash)
	}
	if tip, _ := lagIdx.Tip(); tip != stallTip {
		t.Fatalf("the stalled writer is at %d %v, not at the block it stalled on", tip.Height, tip.Hash)
	}
	releaseOnce.Do(func() { close(release) })
	if err := lagIdx.Sync(); err != nil {
		t.Fatal(err)
	}
	if p := lagIdx.Progress(); p.Batches < 5 || p.Target != wantHeight {
		t.Fatalf("the lagging writer's catch-up: %+v, want several batches up to %d", p, wantHeight)
	}
	eqCompare(t, "lagging", want, eqIndexData(t, lagIdx))
	// It connected every block while it ran, as the live index did.
	eqCompare(t, "lagging, undo records", wantUndo, eqUndoData(t, lagIdx))

	// Catch-up, and copies of the unindexed chain for the interrupted runs.
	cdir := t.TempDir()
	cu, err := testchain.Create(cdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cu.Close() })
	s = &eqScenario{rng: rand.New(rand.NewSource(seed))}
	s.phase1(t, cu)
	s.phase2(t, cu)
	if tip, _ := cu.Tip(); tip != wantTip {
		t.Fatalf("the same scenario built another chain: tip %v, want %v", tip, wantTip)
	}
	if err := cu.Close(); err != nil {
		t.Fatal(err)
	}
	idir, jdir, kdir, ldir := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{idir, jdir, kdir, ldir} {
		eqCopyDir(t, cdir, d)
	}
	var cuIdx *indexers.ElectrumIndex
	if err := cu.Reopen(eqFactory(cdir, indexers.Options{}, &cuIdx)); err != nil {
		t.Fatal(err)
	}
	eqCompare(t, "catch-up", want, eqIndexData(t, cuIdx))
	eqNoUndo(t, "catch-up", cuIdx)

	// Catch-up next to btcd's own transaction index.
	var txIdx *indexers.ElectrumIndex
	eqOpen(t, kdir, indexers.Options{}, &txIdx, func(db database.DB, _ *chaincfg.Params) []btcdindexers.Indexer {
		return []btcdindexers.Indexer{btcdindexers.NewTxIndex(db)}
	})
	eqCompare(t, "catch-up next to btcd's transaction index", want, eqIndexData(t, txIdx))
	eqNoUndo(t, "catch-up next to btcd's transaction index", txIdx)

	// Interrupted after about half of the blocks were read, then resumed;
	// once with one batch, once with batches of a few blocks each.
	mid := eqInterruptedOpen(t, idir, wantHeight, int64(wantHeight), indexers.Options{})
	t.Logf("interrupted at height %d of %d", mid.Height, wantHeight)
	var resumedIdx *indexers.ElectrumIndex
	eqOpen(t, idir, indexers.Options{}, &resumedIdx, nil)
	eqCompare(t, "interrupted and resumed catch-up", want, eqIndexData(t, resumedIdx))
	eqNoUndo(t, "interrupted and resumed catch-up", resumedIdx)
	small := indexers.Options{BatchBytes: 8 << 10}
	mid = eqInterruptedOpen(t, ldir, wantHeight, int64(wantHeight), small)
	t.Logf("interrupted at height %d of %d with small batches", mid.Height, wantHeight)
	var resumedSmallIdx *indexers.ElectrumIndex
	eqOpen(t, ldir, small, &resumedSmallIdx, nil)
	eqCompare(t, "interrupted and resumed catch-up in small batches", want, eqIndexData(t, resumedSmallIdx))
	eqNoUndo(t, "interrupted and resumed catch-up in small batches", resumedSmallIdx)

	// Interrupted, then the chain reorganizes below the index tip while
	// the index is off, then the index is enabled again: it must undo its
	// blocks off the abandoned branch and catch up to what a fresh index
	// holds. The interrupted catch-up wrote no undo record (its blocks were
	// on disk at its start): they are undone from the blocks, and the
	// index is not rebuilt.
	// Interrupted among the blocks with transactions, above the coinbases
	// maturing, so that the blocks undone spend outputs.
	window := indexers.Options{UndoBlocks: 2}
	mid = eqInterruptedOpen(t, jdir, wantHeight, int64(2*wantHeight-40), window)
	if mid.Height < 110 {
		t.Fatalf("interrupted at height %d, among the coinbase-only blocks", mid.Height)
	}
	t.Logf("interrupted at height %d of %d, then reorganized", mid.Height, wantHeight)
	rh, err := testchain.Open(jdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rh.Close() })
	// A branch of coinbases alone: the outputs the undone blocks spent
	// stay unspent, with the positions the undo gave their rows.
	spec := testchain.DefaultSpec()
	spec.Txs = 0
	depth := int(wantHeight-mid.Height) + 4
	if _, err := rh.Reorg(rand.New(rand.NewSource(seed)), depth, spec); err != nil {
		t.Fatal(err)
	}
	if rh.Chain.MainChainHasBlock(&mid.Hash) {
		t.Fatal("the reorganization left the interrupted index tip on the main chain")
	}
	var rIdx *indexers.ElectrumIndex
	rCommits := &commitLog{}
	rOpts := window
	rOpts.OnCommit = rCommits.add
	if err := rh.Reopen(eqFactory(jdir, rOpts, &rIdx)); err != nil {
		t.Fatal(err)
	}
	if eqRebuilt(rCommits.take()) {
		t.Fatal("interrupted, reorganized below its tip, resumed: the index was rebuilt instead of undone")
	}
	eqCompare(t, "interrupted, reorganized below its tip, resumed", eqFreshData(t, rh), eqIndexData(t, rIdx))
	eqNoUndo(t, "interrupted, reorganized below its tip, resumed", rIdx)
	verifyIndexOK(t, rh, rIdx, "interrupted, reorganized below its tip, resumed")

	// Stale: disabled across a reorganization.
	for _, opts := range []indexers.Options{{}, {UndoBlocks: 2}} {
		t.Run(fmt.Sprintf("stale undo window %d", opts.UndoBlocks), func(t *testing.T) {
			dir := t.TempDir()
			var stIdx *indexers.ElectrumIndex
			st := eqCreate(t, dir, opts, &stIdx)
			s := &eqScenario{rng: rand.New(rand.NewSource(seed))}
			s.phase1(t, st)
			// A restart drops the undo records beyond the window: the
			// undo of the stale branch then reads blocks beyond it.
			if err := st.Reopen(eqFactory(dir, opts, &stIdx)); err != nil {
				t.Fatal(err)
			}
			stale, err := stIdx.Tip()
			if err != nil {
				t.Fatal(err)
			}
			// Every block of the first phase was connected while the
			// writer ran: the restart keeps the records of the window.
			kept := eqHeights(1, stale.Height)
			if opts.UndoBlocks > 0 {
				kept = eqHeights(stale.Height-int32(opts.UndoBlocks)+1, stale.Height)
			}
			if hs := undoHeights(t, stIdx); fmt.Sprint(hs) != fmt.Sprint(kept) {
				t.Fatalf("undo records at %v after the restart, want %v", hs, kept)
			}
			staleChain := make([]chainhash.Hash, stale.Height+1)
			for height := range staleChain {
				hash, err := st.Chain.BlockHashByHeight(int32(height))
				if err != nil {
					t.Fatal(err)
				}
				staleChain[height] = *hash
			}
			if err := st.Reopen(nil); err != nil {
				t.Fatal(err)
			}
			s.phase2(t, st)
			if tip, _ := st.Tip(); tip != wantTip {
				t.Fatalf("the same scenario built another chain: tip %v, want %v", tip, wantTip)
			}
			if st.Chain.MainChainHasBlock(&stale.Hash) {
				t.Fatalf("index tip %d %v is on the main chain: the scenario did not leave it stale",
					stale.Height, stale.Hash)
			}
			fork := stale.Height
			for !st.Chain.MainChainHasBlock(&staleChain[fork]) {
				fork--
			}
			if opts.UndoBlocks > 0 && int(stale.Height-fork) <= opts.UndoBlocks {
				t.Fatalf("the stale branch of %d blocks is within the undo window %d: no undo reads blocks",
					stale.Height-fork, opts.UndoBlocks)
			}
			commits := &commitLog{}
			reopts := opts
			reopts.OnCommit = commits.add
			if err := st.Reopen(eqFactory(dir, reopts, &stIdx)); err != nil {
				t.Fatal(err)
			}
			if eqRebuilt(commits.take()) {
				t.Fatal("the stale index was rebuilt instead of undone")
			}
			eqCompare(t, "index re-enabled after a reorganization", want, eqIndexData(t, stIdx))
			// The records of the first phase below the branch stay (the
			// window keeps those of the whole phase, or none below the
			// branch); the blocks caught up at the start get none.
			undo := mainChainUndo(t, "index re-enabled after a reorganization", st.Chain, eqUndoData(t, stIdx))
			var wantHs []int32
			if opts.UndoBlocks == 0 {
				wantHs = eqHeights(1, fork)
			}
			if hs := undoHeights(t, stIdx); fmt.Sprint(hs) != fmt.Sprint(wantHs) || len(undo) != len(wantHs) {
				t.Fatalf("undo records at %v after the re-enabling, want %v (branch from %d)", hs, wantHs, fork)
			}
		})
	}
}

// TestUndoBothWaysEqualsFreshIndex reorganizes and invalidates an indexed
// chain whose undo window is three blocks, by depths within the window and
// beyond it. Before each step the index is restarted, which leaves undo
// records for the blocks of the window alone: a disconnect of depth d then
// undoes min(d, 3) blocks from their records and the older ones from the
// blocks in btcd's files, their spent outputs rebuilt from the index. After
// every step every row of the index equals, byte for byte, that of an index
// built from scratch on the new chain (which holds no undo record: its
// blocks were on disk at its start), and every undo record the index holds
// is the record of the main chain's block at its height. Last, without a
// restart, blocks connected while the index runs keep their records deeper
// than the window, and a deep reorganization undoes them from the records.
func TestUndoBothWaysEqualsFreshIndex(t *testing.T) {
	const window = 3
	var idx *indexers.ElectrumIndex
	dir := t.TempDir()
	factory := eqFactory(dir, indexers.Options{UndoBlocks: window}, &idx)
	h, err := testchain.Create(dir, factory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(31))
	spec := testchain.DefaultSpec()
	spec.Txs = 15
	spec.SameBlockSpend = 0.4
	for i := 0; i < 12; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	// The branches that replace blocks are light, so that most outputs
	// the replaced blocks spent stay unspent, with the positions the undo
	// gave their rows.
	branch := spec
	branch.Txs = 2
	// restart opens the index again and checks that the blocks of the
	// window below the tip, and only they, have an undo record (full), or
	// at least that no other block has one.
	restart := func(step string, full bool) {
		t.Helper()
		if err := h.Reopen(factory); err != nil {
			t.Fatal(err)
		}
		_, height := h.Tip()
		hs := undoHeights(t, idx)
		for _, ht := range hs {
			if ht <= height-window || ht > height {
				t.Fatalf("%s: undo records at %v, tip at %d", step, hs, height)
			}
		}
		if full && (len(hs) != window || hs[0] != height-window+1) {
			t.Fatalf("%s: undo records at %v, tip at %d", step, hs, height)
		}
	}
	check := func(step string) {
		t.Helper()
		fresh, freshUndo := eqFreshDataUndo(t, h)
		if len(freshUndo) != 0 {
			t.Fatalf("%s: a fresh index holds %d undo records, want none", step, len(freshUndo))
		}
		eqCompare(t, step, fresh, eqIndexData(t, idx))
		mainChainUndo(t, step, h.Chain, eqUndoData(t, idx))
	}
	var invalidated chainhash.Hash
	steps := []struct {
		name string
		full bool // the window is full before the step
		do   func() error
	}{
		{"reorg depth 1", true, func() error { _, err := h.Reorg(rng, 1, branch); return err }},
		{"reorg depth 3 (the window)", true, func() error { _, err := h.Reorg(rng, window, branch); return err }},
		{"reorg depth 4", true, func() error { _, err := h.Reorg(rng, window+1, branch); return err }},
		{"reorg depth 2 re-mining the replaced transactions", true, func() error {
			_, err := h.ReorgReplay(rng, 2, branch)
			return err
		}},
		{"reorg depth 7 re-mining the replaced transactions", true, func() error {
			_, err := h.ReorgReplay(rng, 7, branch)
			return err
		}},
		{"invalidate depth 6", true, func() error {
			_, height := h.Tip()
			hash, err := h.Chain.BlockHashByHeight(height - 5)
			if err != nil {
				return err
			}
			invalidated = *hash
			return h.InvalidateBlock(*hash)
		}},
		// The tip now has no undo record: the next disconnect is from
		// the blocks alone.
		{"reorg depth 2 below an invalidation", false, func() error { _, err := h.Reorg(rng, 2, branch); return err }},
		{"reconsider", true, func() error { return h.ReconsiderBlock(invalidated) }},
		{"mine", false, func() error { _, err := h.Mine(rng, spec); return err }},
		{"reorg depth 9", true, func() error { _, err := h.Reorg(rng, 9, branch); return err }},
	}
	for _, st := range steps {
		restart("before "+st.name, st.full)
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		check(st.name)
	}
	verifyIndexOK(t, h, idx, "end")

	// Without a restart: the blocks connected since the last one have
	// records, deeper than the window too; the earlier run's are gone once
	// deeper than the window.
	restart("before the blocks connected while running", true)
	_, before := h.Tip()
	for i := 0; i < 6; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	if hs := undoHeights(t, idx); len(hs) != 6 || hs[0] != before+1 {
		t.Fatalf("undo records at %v after 6 blocks on %d", hs, before)
	}
	if _, err := h.Reorg(rng, 8, branch); err != nil {
		t.Fatal(err)
	}
	check("reorg depth 8 of blocks connected while running")

	// A restart with a smaller window drops the records beyond it.
	var idx1 *indexers.ElectrumIndex
	if err := h.Reopen(eqFactory(dir, indexers.Options{UndoBlocks: 1}, &idx1)); err != nil {
		t.Fatal(err)
	}
	_, height := h.Tip()
	if hs := undoHeights(t, idx1); len(hs) != 1 || hs[0] != height {
		t.Fatalf("undo records at %v after a restart with a window of 1, tip at %d", hs, height)
	}
	idx = idx1
	if _, err := h.Reorg(rng, 5, branch); err != nil {
		t.Fatal(err)
	}
	check("reorg depth 5 after a restart with a window of 1")
}

// TestIndexAheadOfChainReconciledAtStart opens an index whose store holds
// blocks the chain no longer has in its main chain, as after the node ran
// without the index or crashed: the index manager's Init undoes them, catches
// up, and the index answers as the model of the chain and equals an index
// built from scratch, then follows the chain on.
func TestIndexAheadOfChainReconciledAtStart(t *testing.T) {
	type reopened struct {
		h       *testchain.Harness
		idx     *indexers.ElectrumIndex
		commits *commitLog
	}
	// build makes an indexed chain in dir with undo window window.
	build := func(t *testing.T, dir string, window int) *testchain.Harness {
		var idx *indexers.ElectrumIndex
		h := eqCreate(t, dir, indexers.Options{UndoBlocks: window}, &idx)
		if err := h.MineMature(); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(41))
		spec := testchain.DefaultSpec()
		spec.Txs = 15
		for i := 0; i < 8; i++ {
			if _, err := h.Mine(rng, spec); err != nil {
				t.Fatal(err)
			}
		}
		// A restart drops the undo records of the blocks beyond the
		// window: those are then undone from the blocks.
		if err := h.Reopen(eqFactory(dir, indexers.Options{UndoBlocks: window}, &idx)); err != nil {
			t.Fatal(err)
		}
		if hs := undoHeights(t, idx); len(hs) != window {
			t.Fatalf("undo records at %v after a restart, window %d", hs, window)
		}
		return h
	}
	// reopen opens the harness again with the index, recording its
	// commits, and checks it against the model and a fresh index.
	reopen := func(t *testing.T, h *testchain.Harness, dir string, window int) reopened {
		r := reopened{h: h, commits: &commitLog{}}
		err := h.Reopen(propIndexWith(eqStoreDir(dir), indexers.Options{UndoBlocks: window, OnCommit: r.commits.add}, &r.idx))
		if err != nil {
			t.Fatal(err)
		}
		c := newPropChecker(t, h, r.idx, nil, window)
		c.check("reopened", nil)
		verifyIndexOK(t, h, r.idx, "reopened")
		eqCompare(t, "reopened", eqFreshData(t, h), eqIndexData(t, r.idx))
		// And it follows the chain on.
		rng := rand.New(rand.NewSource(42))
		for i := 0; i < 2; i++ {
			b, err := h.Mine(rng, testchain.DefaultSpec())
			if err != nil {
				t.Fatal(err)
			}
			c.check(fmt.Sprintf("mined %d after the reopening", i), b.Hash())
		}
		if _, err := h.Reorg(rng, 4, testchain.DefaultSpec()); err != nil {
			t.Fatal(err)
		}
		c.check("reorganized after the reopening", nil)
		return r
	}
	rebuilt := eqRebuilt

	t.Run("invalidated while the index was off", func(t *testing.T) {
		dir := t.TempDir()
		h := build(t, dir, 2)
		if err := h.Reopen(nil); err != nil {
			t.Fatal(err)
		}
		_, height := h.Tip()
		hash, _ := h.Chain.BlockHashByHeight(height - 5)
		if err := h.InvalidateBlock(*hash); err != nil {
			t.Fatal(err)
		}
		r := reopen(t, h, dir, 2)
		if rebuilt(r.commits.take()) {
			t.Fatal("the index was rebuilt instead of undone")
		}
	})
	t.Run("another branch while the index was off", func(t *testing.T) {
		dir := t.TempDir()
		h := build(t, dir, 2)
		if err := h.Reopen(nil); err != nil {
			t.Fatal(err)
		}
		light := testchain.DefaultSpec()
		light.Txs = 1
		if _, err := h.Reorg(rand.New(rand.NewSource(43)), 6, light); err != nil {
			t.Fatal(err)
		}
		reopen(t, h, dir, 2)
	})
	// A crash took the newest blocks from btcd's database, which the
	// index's store holds: the chain's directory is a copy taken three
	// blocks earlier than the store. Blocks the index connected while it
	// ran have undo records, which need no block, whatever the window (the
	// three blocks are minutes younger than the records' retention). Blocks
	// the index caught up at its start have none, whatever the window:
	// btcd had them on disk then, and a real crash cannot take them. Should
	// btcd lose them anyway, as here, the block to undo is not in btcd's
	// files, and the index is rebuilt.
	for _, c := range []struct {
		window  int
		running bool
		rebuild bool
	}{{1, true, false}, {5, false, true}} {
		name := fmt.Sprintf("blocks lost by btcd, undo window %d, connected while running %v", c.window, c.running)
		t.Run(name, func(t *testing.T) {
			adir, bdir := t.TempDir(), t.TempDir()
			a := build(t, adir, c.window)
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			eqCopyDir(t, adir, bdir)
			var aIdx *indexers.ElectrumIndex
			aFactory := eqFactory(adir, indexers.Options{UndoBlocks: c.window}, &aIdx)
			var mineWith testchain.IndexFactory
			if c.running {
				mineWith = aFactory
			}
			if err := a.Reopen(mineWith); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(44))
			var lost []chainhash.Hash
			for i := 0; i < 3; i++ {
				b, err := a.Mine(rng, testchain.DefaultSpec())
				if err != nil {
					t.Fatal(err)
				}
				lost = append(lost, *b.Hash())
			}
			if !c.running {
				// The index catches the three blocks up at its start.
				if err := a.Reopen(aFactory); err != nil {
					t.Fatal(err)
				}
			}
			tip, _ := aIdx.Tip()
			if tip.Hash != lost[2] {
				t.Fatalf("index at %d %v, not at the last block", tip.Height, tip.Hash)
			}
			hs := undoHeights(t, aIdx)
			records := len(hs)
			// The lost blocks have records if and only if btcd connected
			// them while the writer ran.
			for i := range lost {
				height := tip.Height - int32(len(lost)-1-i)
				if has := slices.Contains(hs, height); has != c.running {
					t.Fatalf("lost block %d: undo record %v, want %v (records at %v)", height, has, c.running, hs)
				}
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(eqStoreDir(bdir)); err != nil {
				t.Fatal(err)
			}
			eqCopyDir(t, eqStoreDir(adir), eqStoreDir(bdir))

			b, err := testchain.Open(bdir, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			for _, hash := range lost {
				if ok, _ := b.Chain.HaveBlock(&hash); ok {
					t.Fatalf("block %v survived the crash", hash)
				}
			}
			r := reopen(t, b, bdir, c.window)
			if got := rebuilt(r.commits.take()); got != c.rebuild {
				t.Fatalf("index rebuilt: %v, want %v (%d undo records before the crash)", got, c.rebuild, records)
			}
		})
	}
}

// TestOtherSchemaVersionIsRebuilt opens an index whose store was written by
// another schema version (rows of an old layout, an undo record and the
// version entry of version 4): the index must wipe it at open and build the
// current one, identical to an index built live.
func TestOtherSchemaVersionIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	h := eqCreate(t, dir, indexers.Options{}, &idx)
	s := &eqScenario{rng: rand.New(rand.NewSource(5))}
	s.phase1(t, h)
	want := eqIndexData(t, idx)

	old := []byte("Ext\x00\x00\x00\x00\x07")
	oldHist := append([]byte("Exh\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b"), 0, 0, 0, 7, 0, 1)
	oldUndo := indexers.UndoKey(1 << 20)
	db := idx.Store()
	for _, kv := range [][2][]byte{
		{indexers.VersionKey, {0, 0, 0, 4}},
		{old, make([]byte, 44)},
		{oldHist, nil},
		{oldUndo, []byte{1, 2, 3}},
	} {
		if err := db.Put(kv[0], kv[1], nil); err != nil {
			t.Fatal(err)
		}
	}
	var reopened *indexers.ElectrumIndex
	if err := h.Reopen(eqFactory(dir, indexers.Options{}, &reopened)); err != nil {
		t.Fatal(err)
	}
	got := eqIndexData(t, reopened)
	for _, k := range [][]byte{old, oldHist} {
		if _, ok := got[string(k)]; ok {
			t.Fatalf("a row of an old schema survived the rebuild: %x", k)
		}
	}
	if _, ok := eqUndoData(t, reopened)[string(oldUndo)]; ok {
		t.Fatal("an undo record of an old schema survived the rebuild")
	}
	eqCompare(t, "rebuilt from another schema version", want, got)
	verifyIndexOK(t, h, reopened, "rebuilt")
}

// TestInterruptedWipeFinished: a wipe deletes the schema version first,
// so a crash in the middle of one leaves a store without a version and
// with some rows; the next start wipes it whole and builds it again. Here
// the crash came after the block rows were deleted, and the rows left
// include a history row and an undo record of a branch the chain no longer
// holds, which building the chain again would not overwrite.
func TestInterruptedWipeFinished(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	h := eqCreate(t, dir, indexers.Options{}, &idx)
	s := &eqScenario{rng: rand.New(rand.NewSource(8))}
	s.phase1(t, h)
	want := eqIndexData(t, idx)

	db := idx.Store()
	b := new(leveldb.Batch)
	stale := append([]byte("Exh\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b"), 0, 0, 0, 7)
	b.Put(stale, []byte{0, 1})
	b.Put(indexers.UndoKey(1<<20), []byte{1, 2, 3})
	b.Delete(indexers.VersionKey)
	it := db.NewIterator(util.BytesPrefix([]byte("Exb")), nil)
	for it.Next() {
		b.Delete(bytes.Clone(it.Key()))
	}
	it.Release()
	if b.Len() < 5 {
		t.Fatalf("%d writes", b.Len())
	}
	if err := db.Write(b, nil); err != nil {
		t.Fatal(err)
	}
	var reopened *indexers.ElectrumIndex
	if err := h.Reopen(eqFactory(dir, indexers.Options{}, &reopened)); err != nil {
		t.Fatal(err)
	}
	if _, ok := eqUndoData(t, reopened)[string(indexers.UndoKey(1<<20))]; ok {
		t.Fatal("an undo record survived the interrupted wipe")
	}
	eqCompare(t, "after an interrupted wipe", want, eqIndexData(t, reopened))
	verifyIndexOK(t, h, reopened, "after an interrupted wipe")
}

// TestLegacyRowsInBlockDatabaseRemoved opens the index on a block database
// in which an older version of the node kept the index: rows under "Ex" in
// btcd's metadata bucket and its tip in btcd's index tips bucket. The
// manager's Init deletes them, and nothing else, and the index in its
// store is the one built live.
func TestLegacyRowsInBlockDatabaseRemoved(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	h := eqCreate(t, dir, indexers.Options{}, &idx)
	s := &eqScenario{rng: rand.New(rand.NewSource(6))}
	s.phase1(t, h)
	want := eqIndexData(t, idx)

	tipsBucket, legacyTip, otherTip := []byte("idxtips"), []byte("electrumidx"), []byte("another index")
	legacy := [][]byte{
		[]byte("Exv"),
		[]byte("Ext\x00\x00\x00\x07\x00\x00"),
		append([]byte("Exh\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b"), 0, 0, 0, 7),
		[]byte("Exa-held"),
	}
	kept := [][]byte{[]byte("Ew-before"), []byte("Ey-after"), []byte("E")}
	err := h.DB.Update(func(dbTx database.Tx) error {
		meta := dbTx.Metadata()
		for _, k := range append(append([][]byte(nil), legacy...), kept...) {
			if err := meta.Put(k, []byte{1}); err != nil {
				return err
			}
		}
		tips, err := meta.CreateBucketIfNotExists(tipsBucket)
		if err != nil {
			return err
		}
		if err := tips.Put(legacyTip, make([]byte, 36)); err != nil {
			return err
		}
		return tips.Put(otherTip, make([]byte, 36))
	})
	if err != nil {
		t.Fatal(err)
	}
	// An older version's base beside the store goes too.
	base := filepath.Join(filepath.Dir(eqStoreDir(dir)), indexers.LegacyBaseDir)
	if err := os.MkdirAll(base, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "CURRENT"), []byte("MANIFEST-000001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var reopened *indexers.ElectrumIndex
	if err := h.Reopen(eqFactory(dir, indexers.Options{}, &reopened)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("the legacy base %s survived: %v", base, err)
	}
	err = h.DB.View(func(dbTx database.Tx) error {
		meta := dbTx.Metadata()
		for _, k := range legacy {
			if meta.Get(k) != nil {
				t.Errorf("legacy row %q survived", k)
			}
		}
		for _, k := range kept {
			if meta.Get(k) == nil {
				t.Errorf("row %q outside the index was deleted", k)
			}
		}
		tips := meta.Bucket(tipsBucket)
		if tips.Get(legacyTip) != nil {
			t.Error("the legacy index tip survived")
		}
		if tips.Get(otherTip) == nil {
			t.Error("another index's tip was deleted")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	eqCompare(t, "after removing the legacy rows", want, eqIndexData(t, reopened))
}

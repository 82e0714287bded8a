package indexers_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// eqIndexFactory builds the Electrum index behind the node's manager.
func eqIndexFactory(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
	return indexers.NewManager(db, indexers.NewElectrumIndex(db, params))
}

// eqTipsBucket and eqTipKey locate the index tip, kept where btcd keeps
// every index's tip.
var (
	eqTipsBucket = []byte("idxtips")
	eqTipKey     = []byte("electrumidx")
)

// eqIndexData returns every row of the index (the metadata keys under its
// prefix) and its tip entry, keyed by name. The reorg epoch, which counts
// the disconnects an index went through rather than describing the chain,
// is left out.
func eqIndexData(t *testing.T, db database.DB) map[string][]byte {
	t.Helper()
	return eqIndexDataOf(t, db, nil)
}

// eqIndexDataOf is eqIndexData read through the index's view, over its
// base when it has one (idx nil: ffldb's rows).
func eqIndexDataOf(t *testing.T, db database.DB, idx *indexers.ElectrumIndex) map[string][]byte {
	t.Helper()
	data := make(map[string][]byte)
	err := db.View(func(dbTx database.Tx) error {
		meta := dbTx.Metadata()
		if idx != nil {
			var done func()
			meta, done = idx.RowView(dbTx)
			defer done()
		}
		c := meta.Cursor()
		for ok := c.Seek(indexers.RowPrefix); ok && bytes.HasPrefix(c.Key(), indexers.RowPrefix); ok = c.Next() {
			if bytes.Equal(c.Key(), indexers.ReorgKey) || bytes.Equal(c.Key(), indexers.BaseKey) {
				continue
			}
			data["row "+string(c.Key())] = append([]byte(nil), c.Value()...)
		}
		tips := meta.Bucket(eqTipsBucket)
		if tips == nil {
			return errors.New("no index tips bucket")
		}
		v := tips.Get(eqTipKey)
		if v == nil {
			return errors.New("no Electrum index tip")
		}
		data["tip"] = append([]byte(nil), v...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// eqCompare fails the test unless got holds exactly the data of want.
func eqCompare(t *testing.T, what string, want, got map[string][]byte) {
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

// eqScenario is a deterministic chain history in two phases; harnesses
// driven with the same seed build the same chain.
type eqScenario struct{ rng *rand.Rand }

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

// eqCopyDir copies a closed harness directory.
func eqCopyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
}

// eqTipOnDisk reads the index tip of a closed harness directory.
func eqTipOnDisk(t *testing.T, dir string, params *chaincfg.Params) indexers.Tip {
	t.Helper()
	db, err := database.Open("ffldb", filepath.Join(dir, "blocks_ffldb"), params.Net)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tip, err := indexers.NewElectrumIndex(db, params).Tip()
	if err != nil {
		t.Fatal(err)
	}
	return tip
}

// TestEquivalenceLiveCatchUpInterruptedStale builds one chain history in
// several ways and requires byte-identical index data from all of them:
//   - live: the index connected every block as the chain grew;
//   - catch-up: the chain built without the index, then opened with it,
//     alone and next to btcd's transaction index;
//   - interrupted: the same catch-up stopped part-way by the interrupt
//     channel, then resumed by a second start;
//   - stale: the index enabled for the first phase, disabled while the
//     chain reorganized blocks full of transactions, then enabled again, so
//     it must walk its tip back off the abandoned branch before catching up;
//   - interrupted, then the chain reorganized below the index tip while the
//     index was off, then resumed: equal to a fresh index of that chain.
func TestEquivalenceLiveCatchUpInterruptedStale(t *testing.T) {
	const seed = 21

	// Live.
	live := testchain.New(t, eqIndexFactory)
	s := &eqScenario{rng: rand.New(rand.NewSource(seed))}
	s.phase1(t, live)
	s.phase2(t, live)
	want := eqIndexData(t, live.DB)
	wantTip, wantHeight := live.Tip()
	t.Logf("chain height %d, %d index keys", wantHeight, len(want))

	// Trailing: the index left the chain's blocks to its worker, which
	// caught up in batches of its own while the scenario went on
	// (reorganizations included).
	var trailIdx *indexers.ElectrumIndex
	trail := testchain.New(t, func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		trailIdx = indexers.NewElectrumIndex(db, params)
		trailIdx.SetTrailing(indexers.DefaultTrailAge, nil)
		trailIdx.SetTrailingTuning(1, time.Millisecond)
		trailIdx.SetCatchUpBatch(64 << 10)
		return indexers.NewManager(db, trailIdx)
	})
	t.Cleanup(trailIdx.StopTrailing)
	s = &eqScenario{rng: rand.New(rand.NewSource(seed))}
	s.phase1(t, trail)
	s.phase2(t, trail)
	if err := trailIdx.WaitCaughtUp(time.Minute); err != nil {
		t.Fatal(err)
	}
	if skipped, runs, _ := trailIdx.TrailingCounts(); skipped == 0 || runs == 0 {
		t.Fatalf("the index did not trail: %d blocks skipped, %d runs", skipped, runs)
	}
	eqCompare(t, "trailing", want, eqIndexData(t, trail.DB))

	// Catch-up, and a copy of the unindexed chain for the interrupted run.
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
	idir, jdir, kdir, bdir := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	eqCopyDir(t, cdir, idir)
	eqCopyDir(t, cdir, jdir)
	eqCopyDir(t, cdir, kdir)
	eqCopyDir(t, cdir, bdir)
	b2dir := t.TempDir()
	eqCopyDir(t, cdir, b2dir)
	if err := cu.Reopen(eqIndexFactory); err != nil {
		t.Fatal(err)
	}
	eqCompare(t, "catch-up", want, eqIndexData(t, cu.DB))

	// Catch-up next to btcd's own transaction index.
	withTx, err := testchain.Open(kdir, func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		return indexers.NewManager(db, indexers.NewElectrumIndex(db, params), btcdindexers.NewTxIndex(db))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { withTx.Close() })
	eqCompare(t, "catch-up next to btcd's transaction index", want, eqIndexData(t, withTx.DB))

	// Catch-up into a base of the index's own (base.go): the rows read
	// through the index's view are the live index's, and verify; the same
	// after a build interrupted part-way and resumed.
	baseOpen := func(dir, baseDir string) (*testchain.Harness, *indexers.ElectrumIndex) {
		var bidx *indexers.ElectrumIndex
		bh, err := testchain.Open(dir, func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
			bidx = indexers.NewElectrumIndex(db, params)
			bidx.SetBasePath(baseDir)
			bidx.SetCatchUpBatch(8 << 10)
			return indexers.NewManager(db, bidx)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bh.Close(); bidx.CloseBase() })
		if !bidx.HasBase() {
			t.Fatal("the catch-up of a new index built no base")
		}
		return bh, bidx
	}
	bh, bidx := baseOpen(bdir, t.TempDir())
	eqCompare(t, "catch-up into a base", want, eqIndexDataOf(t, bh.DB, bidx))
	verifyIndexOK(t, bh, bidx, "catch-up into a base")
	baseDir := t.TempDir()
	eqInterruptedOpenBase(t, b2dir, wantHeight, 8<<10, baseDir)
	bh2, bidx2 := baseOpen(b2dir, baseDir)
	eqCompare(t, "interrupted and resumed catch-up into a base", want, eqIndexDataOf(t, bh2.DB, bidx2))

	// Interrupted after about half of the blocks were read, then resumed;
	// once with one batch, once with batches of a few blocks each.
	ldir := t.TempDir()
	eqCopyDir(t, idir, ldir)
	mid := eqInterruptedOpen(t, idir, wantHeight, 0)
	t.Logf("interrupted at height %d of %d", mid.Height, wantHeight)
	resumed, err := testchain.Open(idir, eqIndexFactory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resumed.Close() })
	eqCompare(t, "interrupted and resumed catch-up", want, eqIndexData(t, resumed.DB))
	mid = eqInterruptedOpen(t, ldir, wantHeight, 8<<10)
	t.Logf("interrupted at height %d of %d with small batches", mid.Height, wantHeight)
	resumedSmall, err := testchain.Open(ldir, eqIndexFactory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resumedSmall.Close() })
	eqCompare(t, "interrupted and resumed catch-up in small batches", want, eqIndexData(t, resumedSmall.DB))

	// Interrupted, then the chain reorganizes below the index tip while
	// the index is off, then the index is enabled again: it must walk back
	// off the abandoned branch and catch up to what a fresh index holds.
	mid = eqInterruptedOpen(t, jdir, wantHeight, 0)
	rh, err := testchain.Open(jdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 10
	depth := int(wantHeight-mid.Height) + 4
	if _, err := rh.Reorg(rand.New(rand.NewSource(seed)), depth, spec); err != nil {
		t.Fatal(err)
	}
	if rh.Chain.MainChainHasBlock(&mid.Hash) {
		t.Fatal("the reorganization left the interrupted index tip on the main chain")
	}
	rtip, _ := rh.Tip()
	if err := rh.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := t.TempDir()
	eqCopyDir(t, jdir, fresh)
	eqDropIndex(t, fresh, live.Params)
	if err := rh.Reopen(eqIndexFactory); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rh.Close() })
	fh, err := testchain.Open(fresh, eqIndexFactory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	if ftip, _ := fh.Tip(); ftip != rtip {
		t.Fatalf("the copy of the chain is at %v, the chain at %v", ftip, rtip)
	}
	eqCompare(t, "interrupted, reorganized below its tip, resumed", eqIndexData(t, fh.DB), eqIndexData(t, rh.DB))

	// Stale: disabled across a reorganization.
	st := testchain.New(t, eqIndexFactory)
	s = &eqScenario{rng: rand.New(rand.NewSource(seed))}
	s.phase1(t, st)
	if err := st.Reopen(nil); err != nil {
		t.Fatal(err)
	}
	s.phase2(t, st)
	if tip, _ := st.Tip(); tip != wantTip {
		t.Fatalf("the same scenario built another chain: tip %v, want %v", tip, wantTip)
	}
	stale, err := indexers.NewElectrumIndex(st.DB, st.Params).Tip()
	if err != nil {
		t.Fatal(err)
	}
	if st.Chain.MainChainHasBlock(&stale.Hash) {
		t.Fatalf("index tip %d %v is on the main chain: the scenario did not leave it stale", stale.Height, stale.Hash)
	}
	if err := st.Reopen(eqIndexFactory); err != nil {
		t.Fatal(err)
	}
	eqCompare(t, "index re-enabled after a reorganization", want, eqIndexData(t, st.DB))
}

// eqInterruptedOpen opens the unindexed chain in dir with the index and an
// interrupt that fires after about half of the chain's blocks were read; the
// open must fail and leave the index part-way, whose tip it returns.
func eqInterruptedOpen(t *testing.T, dir string, height int32, batch int) indexers.Tip {
	t.Helper()
	return eqInterruptedOpenBase(t, dir, height, batch, "")
}

// eqInterruptedOpenBase is eqInterruptedOpen for an index built into a base
// in baseDir (empty: none), whose tip on disk stays empty until the build
// ends.
func eqInterruptedOpenBase(t *testing.T, dir string, height int32, batch int, baseDir string) indexers.Tip {
	t.Helper()
	counting := &eqCountingDB{limit: int64(height), interrupt: make(chan struct{})}
	_, err := testchain.OpenWith(dir, testchain.Options{
		Interrupt: counting.interrupt,
		WrapDB: func(db database.DB) database.DB {
			counting.DB = db
			return counting
		},
		Index: func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
			idx := indexers.NewElectrumIndex(db, params)
			idx.SetCatchUpBatch(batch)
			idx.SetBasePath(baseDir)
			t.Cleanup(idx.CloseBase)
			return &eqArmingManager{IndexManager: indexers.NewManager(db, idx), db: counting}
		},
	})
	if err == nil {
		t.Fatal("interrupted catch-up reported success")
	}
	mid := eqTipOnDisk(t, dir, testchain.RegtestParams())
	if baseDir != "" {
		if mid.Height >= 0 {
			t.Fatalf("an interrupted build of a base left the index tip at height %d", mid.Height)
		}
		return mid
	}
	if mid.Height < 1 || mid.Height >= height {
		t.Fatalf("interrupt left the index at height %d of %d: not part-way (%v)", mid.Height, height, err)
	}
	return mid
}

// eqDropIndex deletes every row and the tip of the index in a closed
// harness directory, as if the index had never been enabled there.
func eqDropIndex(t *testing.T, dir string, params *chaincfg.Params) {
	t.Helper()
	db, err := database.Open("ffldb", filepath.Join(dir, "blocks_ffldb"), params.Net)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(dbTx database.Tx) error {
		meta := dbTx.Metadata()
		var keys [][]byte
		c := meta.Cursor()
		for ok := c.Seek(indexers.RowPrefix); ok && bytes.HasPrefix(c.Key(), indexers.RowPrefix); ok = c.Next() {
			keys = append(keys, append([]byte(nil), c.Key()...))
		}
		for _, k := range keys {
			if err := meta.Delete(k); err != nil {
				return err
			}
		}
		return meta.Bucket(eqTipsBucket).Delete(eqTipKey)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOtherSchemaVersionIsRebuilt opens an index written by another schema
// version (rows of version 1, which had one "Ext" row per transaction keyed
// by txnum, and of version 3, which had one empty "Exh" row per transaction
// and script): the node must drop it and build the current one, identical
// to an index built live.
func TestOtherSchemaVersionIsRebuilt(t *testing.T) {
	h := testchain.New(t, eqIndexFactory)
	s := &eqScenario{rng: rand.New(rand.NewSource(5))}
	s.phase1(t, h)
	want := eqIndexData(t, h.DB)

	old := []byte("Ext\x00\x00\x00\x00\x07")
	oldHist := append([]byte("Exh\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b"), 0, 0, 0, 7, 0, 1)
	err := h.DB.Update(func(dbTx database.Tx) error {
		meta := dbTx.Metadata()
		if err := meta.Put(indexers.VersionKey, []byte{0, 0, 0, 1}); err != nil {
			return err
		}
		if err := meta.Put(oldHist, nil); err != nil {
			return err
		}
		return meta.Put(old, make([]byte, 44))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Reopen(eqIndexFactory); err != nil {
		t.Fatal(err)
	}
	got := eqIndexData(t, h.DB)
	for _, k := range [][]byte{old, oldHist} {
		if _, ok := got["row "+string(k)]; ok {
			t.Fatalf("a row of an old schema survived the rebuild: %x", k)
		}
	}
	eqCompare(t, "rebuilt from another schema version", want, got)
}

// TestTipCopyFollowsBtcdsEntry opens an index whose tip entry in btcd's
// "idxtips" bucket another program moved without the copy readers read (an
// older version of the node, which wrote no copy, or one that left the copy
// behind): loading the index sets the copy from btcd's entry, and the index
// answers for that tip.
func TestTipCopyFollowsBtcdsEntry(t *testing.T) {
	h := testchain.New(t, eqIndexFactory)
	s := &eqScenario{rng: rand.New(rand.NewSource(6))}
	s.phase1(t, h)
	want := eqIndexData(t, h.DB)
	for _, stale := range [][]byte{nil, make([]byte, 36)} {
		err := h.DB.Update(func(dbTx database.Tx) error {
			if stale == nil {
				return dbTx.Metadata().Delete(indexers.TipKey)
			}
			return dbTx.Metadata().Put(indexers.TipKey, stale)
		})
		if err != nil {
			t.Fatal(err)
		}
		var idx *indexers.ElectrumIndex
		err = h.Reopen(func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
			idx = indexers.NewElectrumIndex(db, params)
			return indexers.NewManager(db, idx)
		})
		if err != nil {
			t.Fatal(err)
		}
		eqCompare(t, "tip copy restored", want, eqIndexData(t, h.DB))
		hash, height := h.Tip()
		tip, err := idx.Tip()
		if err != nil || tip.Hash != hash || tip.Height != height {
			t.Fatalf("index tip %v/%d (%v), chain %v/%d", tip.Hash, tip.Height, err, hash, height)
		}
	}
}

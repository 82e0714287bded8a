package indexers_test

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btclog"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// createOnFlaky creates a chain in dir with the index on a store whose
// table reads fail while the returned storage's failing is set.
func createOnFlaky(t *testing.T, dir string, opts indexers.Options) (*testchain.Harness, *indexers.ElectrumIndex, *flakyStorage) {
	t.Helper()
	opts.Dir = eqStoreDir(dir)
	fs, err := storage.OpenFile(opts.Dir, false)
	if err != nil {
		t.Fatal(err)
	}
	flaky := &flakyStorage{Storage: fs}
	var idx *indexers.ElectrumIndex
	h, err := testchain.Create(dir, func(db database.DB, _ *chaincfg.Params) blockchain.IndexManager {
		store, err := leveldb.Open(flaky, indexers.StoreOptions())
		if err == nil {
			idx, err = indexers.NewElectrumIndexOn(db, opts, store)
		}
		if err != nil {
			panic(err)
		}
		return indexers.NewManager(db, idx)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return h, idx, flaky
}

// While the store's disk answers reads with EIO for a moment, a read of a
// script's history, status, unspent outputs or balance fails (the server
// answers an error the client retries), never answers as if the script had
// fewer or no transactions: a wallet shown an empty history or a zero
// balance takes it for the truth.
func TestTransientReadErrorIsNotAnAnswer(t *testing.T) {
	h, idx, flaky := createOnFlaky(t, t.TempDir(), indexers.Options{})
	t.Cleanup(func() { h.Close() })
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(9))
	for i := 0; i < 10; i++ {
		if _, err := h.Mine(rng, testchain.DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	m, err := testchain.BuildModel(h)
	if err != nil {
		t.Fatal(err)
	}
	// The script with the longest history that still holds coins.
	var sh indexers.ScriptHash
	for _, s := range m.ScriptHashes() {
		if m.Balance[s] > 0 && len(m.History[s]) > len(m.History[sh]) {
			sh = s
		}
	}
	if len(m.History[sh]) < 2 {
		t.Fatal("no script with a history")
	}
	// The rows in tables on disk, as on any node that has run a while.
	if err := idx.Store().CompactRange(util.Range{}); err != nil {
		t.Fatal(err)
	}

	flaky.failing.Store(true)
	hist, _, herr := idx.History(sh, 0)
	st, _, serr := idx.Status(sh, 0)
	us, _, uerr := idx.Unspent(sh, 0)
	n, bal, _, berr := idx.UnspentTotals(sh)
	flaky.failing.Store(false)
	if flaky.failed.Load() == 0 {
		t.Skip("no table read happened while reads were failing")
	}
	t.Logf("%d table reads failed with EIO", flaky.failed.Load())

	if herr == nil && len(hist) != len(m.History[sh]) {
		t.Errorf("History during the read errors: %d entries and no error; the script has %d",
			len(hist), len(m.History[sh]))
	}
	if serr == nil && !bytes.Equal(st.Sum(), m.Status(sh)) {
		t.Errorf("Status during the read errors: %x and no error; the script's status is %s",
			st.Sum(), m.StatusHex(sh))
	}
	if uerr == nil && len(us) != len(m.Unspent[sh]) {
		t.Errorf("Unspent during the read errors: %d outputs and no error; the script has %d",
			len(us), len(m.Unspent[sh]))
	}
	if berr == nil && bal != m.Balance[sh] {
		t.Errorf("UnspentTotals during the read errors: %d outputs, balance %d and no error; the script holds %d",
			n, bal, m.Balance[sh])
	}
}

// The store's disk answers reads with EIO for a moment while the writer
// undoes a block the chain disconnected. The block has its undo record and
// btcd has the block: it is undone once the disk answers again, and the
// index is not taken for one that cannot be undone, deleted and rebuilt
// from the blocks, now or at the next start.
func TestTransientReadErrorDuringUndoKeepsIndex(t *testing.T) {
	var logs lockedBuf
	l := btclog.NewBackend(&logs).Logger("ELEC")
	l.SetLevel(btclog.LevelInfo)
	indexers.UseLogger(l)
	defer indexers.UseLogger(btclog.Disabled)
	dir := t.TempDir()
	storeDir := eqStoreDir(dir)
	commits := &commitLog{}
	h, idx, flaky := createOnFlaky(t, dir, indexers.Options{OnCommit: commits.add})
	closed := false
	t.Cleanup(func() {
		if !closed {
			h.Close()
		}
	})
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 5; i++ {
		if _, err := h.Mine(rng, testchain.DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	tipHash, tipHeight := h.Tip()
	if hs := undoHeights(t, idx); len(hs) == 0 || hs[len(hs)-1] != tipHeight {
		t.Fatalf("undo records at %v, none for the tip %d", hs, tipHeight)
	}
	// The rows in tables on disk, as on any node that has run a while.
	if err := idx.Store().CompactRange(util.Range{}); err != nil {
		t.Fatal(err)
	}
	commits.take()

	// The disk errs for a moment while the chain drops its tip.
	flaky.failing.Store(true)
	if err := h.Chain.InvalidateBlock(&tipHash); err != nil {
		flaky.failing.Store(false)
		t.Fatal(err)
	}
	syncErr := idx.Sync()
	flaky.failing.Store(false)
	if flaky.failed.Load() == 0 {
		t.Skip("no table read happened while reads were failing")
	}
	t.Logf("%d reads failed with EIO; Sync during them: %v", flaky.failed.Load(), syncErr)

	// The disk answers again: the writer goes on.
	if err := idx.Sync(); err != nil {
		t.Fatalf("Sync after the disk recovered: %v", err)
	}
	got, err := idx.Tip()
	if err != nil {
		t.Fatal(err)
	}
	if got.Height != tipHeight-1 {
		t.Errorf("index at %d after the undo, want %d", got.Height, tipHeight-1)
	}
	run1 := commits.take()
	runLog := logs.take()
	_, verr := idx.Store().Get(indexers.VersionKey, nil)

	// Next start on the same store.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	flaky.Close() // the store's lock, for the next start
	closed = true
	commits2 := &commitLog{}
	var idx2 *indexers.ElectrumIndex
	h2, err := testchain.Open(dir, testchain.ElectrumIndex(storeDir, indexers.Options{OnCommit: commits2.add}, &idx2, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if err := idx2.Sync(); err != nil {
		t.Fatal(err)
	}
	p := idx2.Progress()
	if eqRebuilt(run1) || verr != nil || p.Batches > 0 && p.From == 0 {
		t.Logf("index log of the run:\n%s", runLog)
		t.Fatalf("a moment of EIO during the undo of block %d (which has its undo record, and btcd its block) "+
			"got the whole index deleted: rebuilt during the run %v; schema version entry after the run: %v; "+
			"next start caught up from height %d (%d batches, running %v)",
			tipHeight, eqRebuilt(run1), verr, p.From, p.Batches, p.Running)
	}
	if strings.Contains(runLog, "rebuilding the index") {
		t.Errorf("the index log of the run says it rebuilds:\n%s", runLog)
	}
}

// The undo of a block with its undo record reads the block's own rows with
// a cursor to delete them; when those reads fail, the undo is not written
// without the deletes (the block's rows would stay in the index for good):
// the pass fails and the next undoes the block whole.
func TestUndoOwnRowsReadErrorIsRetried(t *testing.T) {
	dir := t.TempDir()
	h, idx, flaky := createOnFlaky(t, dir, indexers.Options{})
	t.Cleanup(func() { h.Close() })
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	tipHash, tipHeight := h.Tip()
	if hs := undoHeights(t, idx); len(hs) == 0 || hs[len(hs)-1] != tipHeight {
		t.Fatalf("undo records at %v, none for the tip %d", hs, tipHeight)
	}
	// The rows in tables on disk, as on any node that has run a while.
	if err := idx.Store().CompactRange(util.Range{}); err != nil {
		t.Fatal(err)
	}
	// The undo record and the block rows below the tip were read a moment
	// ago (they are in the block cache); the tip block's own rows were not.
	undoKey := []byte{'E', 'x', 'd', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(undoKey[3:], uint32(tipHeight))
	if _, err := idx.Store().Get(undoKey, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := idx.Block(tipHeight - 1); err != nil {
		t.Fatal(err)
	}

	// The disk errs for a moment while the chain drops its tip.
	flaky.failing.Store(true)
	if err := h.Chain.InvalidateBlock(&tipHash); err != nil {
		flaky.failing.Store(false)
		t.Fatal(err)
	}
	syncErr := idx.Sync()
	flaky.failing.Store(false)
	if flaky.failed.Load() == 0 {
		t.Fatal("setup: no table read failed during the undo")
	}
	t.Logf("%d reads failed with EIO; Sync during them: %v", flaky.failed.Load(), syncErr)
	if err := idx.Sync(); err != nil {
		t.Fatalf("Sync after the disk recovered: %v", err)
	}
	if tip, err := idx.Tip(); err != nil || tip.Height != tipHeight-1 {
		t.Fatalf("index tip %d (%v), want %d", tip.Height, err, tipHeight-1)
	}

	// Another block takes the height: the undone block's coinbase output
	// must not be among the script's unspent outputs.
	if _, err := h.MineEmpty(1); err != nil {
		t.Fatal(err)
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	m, err := testchain.BuildModel(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range m.ScriptHashes() {
		us, _, err := idx.Unspent(sh, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(us) != len(m.Unspent[sh]) {
			t.Errorf("script %v: %d unspent outputs in the index, %d in the chain (the undone block's "+
				"rows were left behind when their reads failed)", sh, len(us), len(m.Unspent[sh]))
		}
	}
	eqCompare(t, "index after an undo whose reads of the block's own rows failed, against a fresh index",
		eqFreshData(t, h), eqIndexData(t, idx))
}

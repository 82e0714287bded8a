package indexers_test

import (
	"math/rand"
	"os"
	"strconv"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestTipGrowth mines TIP_BLOCKS blocks at the tip (1,000 unless set; make
// soak: 10,000), each
// spending old outputs, with the index following them one block at a time,
// and checks that the store holds nothing beyond the live rows: every row
// but the undo records equals a build from scratch on the final chain, the
// size count matches the rows, and after a restart the undo records are
// those of the newest UndoBlocks blocks.
func TestTipGrowth(t *testing.T) {
	n := 1000
	if s := os.Getenv("TIP_BLOCKS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("TIP_BLOCKS: %v", err)
		}
	}
	dir := t.TempDir()
	opts := indexers.Options{UndoBlocks: 288}
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, testchain.ElectrumIndex(dir, opts, &idx, nil))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(5))
	spec := testchain.DefaultSpec()
	for i := 0; i < n; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			checkSize(t, idx)
		}
	}
	sameAsScratch(t, "after the blocks", h, idx)

	// A restart drops the records more than UndoBlocks deep.
	if err := h.Reopen(testchain.ElectrumIndex(dir, opts, &idx, nil)); err != nil {
		t.Fatal(err)
	}
	if recs, _, err := idx.UndoSize(); err != nil || recs != int64(opts.UndoBlocks) {
		t.Fatalf("after a restart %d undo records (%v), want %d", recs, err, opts.UndoBlocks)
	}
	rows, bytes, err := idx.Size()
	if err != nil {
		t.Fatal(err)
	}
	_, want := buildBeside(t, h, indexers.Options{})
	var scratch int64
	for k, v := range want {
		if k != string(indexers.VersionKey) && k != string(indexers.StatsKey) && k != string(indexers.TipKey) {
			scratch += int64(len(k) + len(v))
		}
	}
	if scratch != bytes {
		t.Fatalf("the index holds %d bytes of rows, a build from scratch %d", bytes, scratch)
	}
	_, height := h.Tip()
	t.Logf("%d blocks at the tip (chain height %d): %d rows of %d bytes, as a build from scratch, and %d bytes of "+
		"undo records", n, height, rows, bytes, undoBytes(t, idx))
}

// undoBytes returns the bytes of idx's undo records.
func undoBytes(t testing.TB, idx *indexers.ElectrumIndex) int64 {
	t.Helper()
	_, b, err := idx.UndoSize()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEarlierRunUndoRecordsPruned: the undo records an earlier run left
// are deleted as their blocks go UndoBlocks deep, as the running writer's
// own are (without waiting undoKeep: their blocks were on disk at start),
// not only at the next start.
func TestEarlierRunUndoRecordsPruned(t *testing.T) {
	dir := t.TempDir()
	opts := indexers.Options{UndoBlocks: 5}
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, testchain.ElectrumIndex(dir, opts, &idx, nil))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(9))
	mine := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := h.Mine(rng, testchain.DefaultSpec()); err != nil {
				t.Fatal(err)
			}
		}
	}
	mine(10)
	if err := h.Reopen(testchain.ElectrumIndex(dir, opts, &idx, nil)); err != nil {
		t.Fatal(err)
	}
	if recs, _, err := idx.UndoSize(); err != nil || recs != int64(opts.UndoBlocks) {
		t.Fatalf("after a restart %d undo records (%v), want %d", recs, err, opts.UndoBlocks)
	}
	mine(opts.UndoBlocks + 1)
	// The earlier run's records are all deeper than UndoBlocks now; this
	// run's stay for undoKeep.
	if recs, _, err := idx.UndoSize(); err != nil || recs != int64(opts.UndoBlocks+1) {
		t.Fatalf("%d undo records (%v) after %d more blocks, want this run's %d", recs, err, opts.UndoBlocks+1, opts.UndoBlocks+1)
	}
	sameAsScratch(t, "after the blocks", h, idx)
}

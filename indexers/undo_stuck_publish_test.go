package indexers_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestUndoPublishedWhenNextCommitFails: a reorganization's undo is
// committed, then the commit of the new branch fails (the store is stuck).
// The index's last commit is the undo (the store's tip, the tip a restart
// resumes from), yet readers are left on the replaced block, which is no
// longer in the main chain, for the rest of the run.
func TestUndoPublishedWhenNextCommitFails(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	opts := indexers.Options{BatchBytes: 1}
	h, err := testchain.Create(dir, eqFactory(dir, opts, &idx))
	if err != nil {
		t.Fatal(err)
	}
	// The stuck store is left to the process's exit, as the node leaves
	// it (a failed goleveldb transaction may keep its write lock).
	defer h.Close()
	blocks, err := h.MineEmpty(3)
	if err != nil {
		t.Fatal(err)
	}
	a2, a3 := blocks[1], blocks[2]
	// A side block at A3's height: same work, the chain stays on A3.
	b3, err := h.MineOn(*a2.Hash(), nil, testchain.BlockSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if tip, _ := idx.LatestTip(); tip.Hash != *a3.Hash() {
		t.Fatalf("index at %v before the reorganization, want A3 %v", tip, a3.Hash())
	}
	store := eqStoreDir(dir)
	next := nextStoreFile(t, store)
	for n := next; n < next+64; n++ {
		p := filepath.Join(store, fmt.Sprintf("%06d.ldb", n))
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
	}
	// B4 makes the chain switch: the writer undoes A3 (a small write, to
	// the journal), then the commit of B3..B4 (tables) fails.
	if _, err := h.MineOn(*b3.Hash(), nil, testchain.BlockSpec{}); err == nil {
		t.Fatal("the new branch's commit did not fail")
	}
	if h.Chain.MainChainHasBlock(a3.Hash()) {
		t.Fatal("the chain did not leave A3")
	}
	stored, err := idx.Store().Get(indexers.TipKey, nil)
	if err != nil || len(stored) < 32 || !bytes.Equal(stored[:32], a2.Hash()[:]) {
		t.Fatalf("the store's tip is %x (%v), want A2 %v: the undo was not committed", stored, err, a2.Hash())
	}
	tip, _ := idx.LatestTip()
	t.Logf("published tip %v (A2 %v, A3 %v)", tip, a2.Hash(), a3.Hash())
	if tip.Hash != *a2.Hash() {
		t.Fatalf("after the undo of A3 was committed and the next commit failed, readers see %v at %d "+
			"(A3, not in the main chain); want the last commit, A2 %v", tip.Hash, tip.Height, a2.Hash())
	}
}

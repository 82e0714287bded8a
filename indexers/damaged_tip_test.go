package indexers_test

import (
	"encoding/binary"
	"testing"

	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestDamagedTipRowDoesNotStopStart: an index whose tip's block row was
// lost (one damaged row of the store) does not keep the node from starting
// (docs/OPERATIONS.md): opened as the node opens it, the index is emptied
// to be built again.
func TestDamagedTipRowDoesNotStopStart(t *testing.T) {
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
	// Lose the tip's block row: one row of the store damaged.
	k := []byte("Exb\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(k[3:], uint32(tip.Height))
	if err := idx.Store().Delete(k, nil); err != nil {
		t.Fatal(err)
	}
	// Start again as the node does (node.newIndexSet): open btcd's database
	// and the index on it.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := database.Open("ffldb", h.DBPath(), h.Params.Net)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := indexers.NewElectrumIndex(db, indexers.Options{Dir: eqStoreDir(dir)})
	if err != nil {
		t.Fatalf("the node cannot start over one damaged index row: %v", err)
	}
	defer again.Close()
	if tip, err := again.Tip(); err != nil || tip.Height != -1 {
		t.Fatalf("the damaged index opened at %+v (%v), want it emptied to be built again", tip, err)
	}
}

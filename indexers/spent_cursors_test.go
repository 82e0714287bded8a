package indexers_test

import (
	"math/rand"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestSpentOutputsRebuiltWithOneCursor: an undo without the block's record
// rebuilds the spent outputs of every input from the index's own rows. A
// read view keeps each cursor it hands out (and the table blocks each one
// holds) until it is released, so the rebuild locates every input's
// transaction with one cursor, not one per input: a full block has
// thousands of inputs.
func TestSpentOutputsRebuiltWithOneCursor(t *testing.T) {
	dir := t.TempDir()
	var idx *indexers.ElectrumIndex
	h := eqCreate(t, dir, indexers.Options{}, &idx)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	spec := testchain.DefaultSpec()
	spec.Txs = 20
	block, err := h.Mine(rand.New(rand.NewSource(5)), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	inputs := 0
	for _, tx := range block.Transactions()[1:] {
		inputs += len(tx.MsgTx().TxIn)
	}
	if inputs < 20 {
		t.Fatalf("the block has %d inputs, want at least 20", inputs)
	}
	outputs, cursors, err := idx.SpentOutputsCursors(h.DB, block)
	if err != nil {
		t.Fatal(err)
	}
	if outputs != inputs || cursors > 1 {
		t.Fatalf("rebuilt %d spent outputs of %d inputs with %d cursors, want all with one", outputs, inputs, cursors)
	}
}

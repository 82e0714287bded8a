package node

import (
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestParentsFirst: held transactions are submitted again parents first,
// whatever order the walk of the pool found them in.
func TestParentsFirst(t *testing.T) {
	spending := func(outs ...wire.OutPoint) *btcutil.Tx {
		m := wire.NewMsgTx(2)
		for _, op := range outs {
			m.AddTxIn(wire.NewTxIn(&op, nil, nil))
		}
		m.AddTxOut(wire.NewTxOut(1, []byte{0x51}))
		m.AddTxOut(wire.NewTxOut(2, []byte{0x51}))
		return btcutil.NewTx(m)
	}
	out := func(tx *btcutil.Tx, i uint32) wire.OutPoint { return wire.OutPoint{Hash: *tx.Hash(), Index: i} }
	// d spends a confirmed output; e spends d; f spends d and e; g spends
	// f and a transaction not held.
	d := spending(wire.OutPoint{Hash: chainhash.Hash{1}})
	e := spending(out(d, 0))
	f := spending(out(d, 1), out(e, 0))
	g := spending(out(f, 0), wire.OutPoint{Hash: chainhash.Hash{2}})
	got := parentsFirst([]*btcutil.Tx{g, f, e, d})
	if len(got) != 4 {
		t.Fatalf("%d transactions, want 4", len(got))
	}
	pos := make(map[chainhash.Hash]int)
	for i, tx := range got {
		pos[*tx.Hash()] = i
	}
	for _, c := range [][2]*btcutil.Tx{{d, e}, {d, f}, {e, f}, {f, g}} {
		if pos[*c[0].Hash()] > pos[*c[1].Hash()] {
			t.Errorf("%v comes after its spender %v", c[0].Hash(), c[1].Hash())
		}
	}
}

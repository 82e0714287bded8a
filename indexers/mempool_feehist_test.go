package indexers

import (
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestFeeHistogramFollowsAdds pins the validity of FeeHistogram's cache:
// a transaction added after a histogram was computed is in the next one
// (mempool.get_fee_histogram reflects the pool, not its state at the first
// call), as is one that leaves.
func TestFeeHistogramFollowsAdds(t *testing.T) {
	m := NewMempool(nil)
	mk := func(i byte, fee int64) *mempool.TxDesc {
		tx := wire.NewMsgTx(2)
		tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{i, 9}}, nil, nil))
		tx.AddTxOut(wire.NewTxOut(1000, make([]byte, 200)))
		return desc(tx, fee)
	}
	total := func(h [][2]float64) (v float64) {
		for _, b := range h {
			v += b[1]
		}
		return v
	}
	a, b := mk(1, 5000), mk(2, 20000)
	va, vb := mempool.GetTxVirtualSize(a.Tx), mempool.GetTxVirtualSize(b.Tx)
	m.Add(a)
	if got := total(m.FeeHistogram()); got != float64(va) {
		t.Fatalf("histogram of one transaction holds %v vbytes, want %d", got, va)
	}
	m.Add(b)
	if got := total(m.FeeHistogram()); got != float64(va+vb) {
		t.Fatalf("after a second Add the histogram holds %v vbytes, want %d: %v", got, va+vb, m.FeeHistogram())
	}
	m.Sync([]*mempool.TxDesc{b})
	if got := total(m.FeeHistogram()); got != float64(vb) {
		t.Fatalf("after the first left the histogram holds %v vbytes, want %d", got, vb)
	}
}

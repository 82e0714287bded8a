package testchain

import (
	"math/rand"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
)

func TestMineBigBlock(t *testing.T) {
	h := New(t, nil)
	const txs = 600
	block, stxos, err := h.MineBigBlock(rand.New(rand.NewSource(6)), txs)
	if err != nil {
		t.Fatal(err)
	}
	if tip, _ := h.Tip(); tip != *block.Hash() {
		t.Fatal("big block is not the tip")
	}
	inputs, outputs, heights := 0, 0, make(map[int32]bool)
	for i, tx := range block.Transactions() {
		outputs += len(tx.MsgTx().TxOut)
		if i > 0 {
			inputs += len(tx.MsgTx().TxIn)
		}
	}
	if len(stxos) != inputs {
		t.Fatalf("%d spent outputs for %d inputs", len(stxos), inputs)
	}
	for _, s := range stxos {
		heights[s.Height] = true
	}
	perTxIn, perTxOut := float64(inputs)/txs, float64(outputs)/float64(txs+1)
	t.Logf("%d txs, %.2f inputs and %.2f outputs per tx, inputs from %d heights", txs, perTxIn, perTxOut, len(heights))
	if perTxIn < 1.7 || perTxIn > 2.3 || perTxOut < 2.2 || perTxOut > 2.8 || len(heights) < 5 {
		t.Fatal("big block does not have the promised shape")
	}
	if err := blockchain.CheckBlockSanity(block, h.Params.PowLimit, blockchain.NewMedianTime()); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkCreateBulk(b *testing.B) {
	for i := 0; i < b.N; i++ {
		h, err := CreateBulk(b.TempDir(), 1, 200000, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(h.Chain.BestSnapshot().TotalTxns), "txs")
		h.Close()
	}
}

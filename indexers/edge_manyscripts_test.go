package indexers_test

import (
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestManyScriptsPerTxAndReplayReorg: transactions touching more than
// 16 distinct scripts (each paid twice, some also spent), a coinbase paying
// one script several times, zero values and OP_RETURN with value; then a
// reorganization at the tip (undo records) that replays the same
// transactions in another order and at other positions across the
// 32-transaction chunks.
func TestManyScriptsPerTxAndReplayReorg(t *testing.T) {
	r, _, _ := newReopenableRig(t, indexers.Options{UndoBlocks: 3})
	var cbs []*wire.MsgTx
	for i := 0; i < 160; i++ {
		blk := r.mine(edgeScript(int64(10 + i%3)))
		cbs = append(cbs, blk.MsgBlock().Transactions[0])
	}
	fork, forkHeight := r.h.Tip()
	op := func(tx *wire.MsgTx, i uint32) wire.OutPoint { return wire.OutPoint{Hash: tx.TxHash(), Index: i} }
	val := cbs[0].TxOut[0].Value
	// wide pays scripts 100..119 twice each, plus OP_RETURN with value.
	wide := func(in wire.OutPoint, base int64) *wire.MsgTx {
		var outs []*wire.TxOut
		per := (val - 1000) / 40
		for i := int64(0); i < 40; i++ {
			v := per
			if i%7 == 0 {
				v = 0
			}
			outs = append(outs, &wire.TxOut{Value: v, PkScript: edgeScript(base + i%20)})
		}
		var sum int64
		for _, o := range outs {
			sum += o.Value
		}
		outs = append(outs, &wire.TxOut{Value: val - sum, PkScript: []byte{0x6a, 0x01, 0x02}})
		return spend([]wire.OutPoint{in}, nil, outs...)
	}
	var txs []*wire.MsgTx
	for i := 0; i < 40; i++ {
		txs = append(txs, wide(op(cbs[i], 0), 100))
	}
	// gather spends 30 outputs of the first wide transactions (20+
	// distinct scripts as inputs) into the same scripts again.
	var ins []wire.OutPoint
	var sum int64
	for i := 0; i < 30; i++ {
		w := txs[i%5]
		ins = append(ins, op(w, uint32(i)))
		sum += w.TxOut[i].Value
	}
	var outs []*wire.TxOut
	for i := int64(0); i < 25; i++ {
		outs = append(outs, &wire.TxOut{Value: sum / 25, PkScript: edgeScript(100 + i)})
	}
	outs[0].Value += sum - (sum/25)*25
	gather := spend(ins, nil, outs...)
	blockTxs := append(append([]*wire.MsgTx{}, txs...), gather)
	// A coinbase paying one script several times.
	_, h := r.h.Tip()
	sub := blockchain.CalcBlockSubsidy(h+1, r.h.Params)
	cb := r.coinbase(h+1, edgeScript(100), sub/4)
	cb.AddTxOut(&wire.TxOut{Value: sub / 4, PkScript: edgeScript(100)})
	cb.AddTxOut(&wire.TxOut{Value: 0, PkScript: edgeScript(100)})
	cb.AddTxOut(&wire.TxOut{Value: sub - 2*(sub/4), PkScript: edgeScript(101)})
	tip, _ := r.h.Tip()
	r.submit(r.block(tip, cb, blockTxs...), blockchain.BFNone)
	r.mine(edgeScript(61))
	r.checkAgainstModel("wide transactions")
	verifyIndexOK(t, r.h, r.idx, "wide transactions")

	// Replay on a longer branch from the fork: other transactions first
	// (so the wide ones sit across other chunk boundaries), reversed.
	parent := fork
	hgt := forkHeight + 1
	var filler []*wire.MsgTx
	for i := 40; i < 52; i++ {
		filler = append(filler, spend([]wire.OutPoint{op(cbs[i], 0)}, nil, &wire.TxOut{Value: val, PkScript: edgeScript(105)}))
	}
	b1 := r.block(parent, r.coinbase(hgt, edgeScript(70), blockchain.CalcBlockSubsidy(hgt, r.h.Params)), filler...)
	r.submit(b1, blockchain.BFNone)
	var rev []*wire.MsgTx
	for i := len(txs) - 1; i >= 0; i-- {
		rev = append(rev, txs[i])
	}
	rev = append(rev, gather)
	b2 := r.block(*b1.Hash(), r.coinbase(hgt+1, edgeScript(71), blockchain.CalcBlockSubsidy(hgt+1, r.h.Params)), rev...)
	r.submit(b2, blockchain.BFNone)
	b3 := r.block(*b2.Hash(), r.coinbase(hgt+2, edgeScript(72), blockchain.CalcBlockSubsidy(hgt+2, r.h.Params)))
	r.submit(b3, blockchain.BFNone)
	if got, _ := r.h.Tip(); got != *b3.Hash() {
		t.Fatal("no reorganization")
	}
	r.checkAgainstModel("after the replay")
	r.checkEdgeScripts("after the replay", edgeScript(61), edgeScript(101))
	verifyIndexOK(t, r.h, r.idx, "after the replay")
}

package indexers_test

import (
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// newReopenableRig returns an edge rig whose index can be replaced by one in another
// directory (built by catch-up) or reopened.
func newReopenableRig(t *testing.T, opts indexers.Options) (*edgeRig, func(dir string, opts indexers.Options) testchain.IndexFactory, string) {
	t.Helper()
	r := &edgeRig{t: t}
	fac := func(dir string, opts indexers.Options) testchain.IndexFactory {
		inner := testchain.ElectrumIndex(dir, opts, &r.idx, nil)
		return func(db database.DB, p *chaincfg.Params) blockchain.IndexManager {
			m := inner(db, p)
			r.idx.SetScanSplit(2)
			return m
		}
	}
	dir := t.TempDir()
	h, err := testchain.CreateWith(t.TempDir(), testchain.Options{Index: fac(dir, opts)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r.h = h
	return r, fac, dir
}

// bigTxs makes n-1 transactions for one block: a chain of same-block
// spends through positions 1..n-1 crossing the 32-transaction chunks, each
// paying script a twice (one of them zero-valued at some positions),
// older coinbases spent at the chunk boundaries, and a last transaction
// spending a dozen outputs of a created earlier in the block.
func bigTxs(cbs []*wire.MsgTx, n int, a, b []byte) []*wire.MsgTx {
	op := func(tx *wire.MsgTx, i uint32) wire.OutPoint { return wire.OutPoint{Hash: tx.TxHash(), Index: i} }
	out := func(v int64, pk []byte) *wire.TxOut { return &wire.TxOut{Value: v, PkScript: pk} }
	var txs []*wire.MsgTx
	prev := cbs[0]
	next := 1
	for pos := 1; pos < n-1; pos++ {
		ins := []wire.OutPoint{op(prev, 0)}
		switch pos {
		case 31, 32, 63, 64, 65:
			ins = append(ins, op(cbs[next], 0))
			next++
		}
		var in int64
		in = prev.TxOut[0].Value
		if len(ins) == 2 {
			in += cbs[next-1].TxOut[0].Value
		}
		small := int64(1000)
		if pos%5 == 0 {
			small = 0
		}
		tx := spend(ins, nil, out(in-small-500, a), out(small, a), out(500, b))
		txs = append(txs, tx)
		prev = tx
	}
	// Last: spends out1 of a dozen of them, including those at the
	// boundaries.
	var ins []wire.OutPoint
	var sum int64
	for _, i := range []int{0, 1, 29, 30, 31, 32, 33, 61, 62, 63, 64} {
		if i < len(txs) {
			ins = append(ins, op(txs[i], 1))
			sum += txs[i].TxOut[1].Value
		}
	}
	ins = append(ins, op(prev, 0))
	sum += prev.TxOut[0].Value
	txs = append(txs, spend(ins, nil, out(sum/2, a), out(sum-sum/2, b), out(0, a)))
	return txs
}

// TestBigBlocksTipCatchUpDeepUndo builds blocks of 32, 33, 64, 65 and 70
// transactions crossing the chunk boundaries with same-block chains, and
// compares with testchain's model: the index built block by block at the
// tip, one built by catch-up (small batches) on the finished chain, and
// the first again after a reorganization deeper than its undo records.
func TestBigBlocksTipCatchUpDeepUndo(t *testing.T) {
	opts := indexers.Options{UndoBlocks: 3}
	r, fac, firstDir := newReopenableRig(t, opts)
	a, b := edgeScript(50), edgeScript(51)
	var cbs []*wire.MsgTx
	for i := 0; i < 130; i++ {
		blk := r.mine(edgeScript(int64(10 + i%3)))
		cbs = append(cbs, blk.MsgBlock().Transactions[0])
	}
	fork, forkHeight := r.h.Tip()
	used := 0
	for _, n := range []int{32, 33, 64, 65, 70} {
		txs := bigTxs(cbs[used:], n, a, b)
		used += 6
		blk := r.mine(edgeScript(60), txs...)
		if len(blk.Transactions()) != n {
			t.Fatalf("block of %d transactions, want %d", len(blk.Transactions()), n)
		}
	}
	// A block spending the remaining outputs of a from the big blocks.
	r.mine(edgeScript(61))
	r.checkAgainstModel("at the tip")
	verifyIndexOK(t, r.h, r.idx, "at the tip")
	if hist, _, _ := r.idx.History(shOf(a), 0); len(hist) < 200 {
		t.Fatalf("history of a has %d entries", len(hist))
	}

	tipHash, tipHeight := r.h.Tip()
	tipRows, tipBytes, err := r.idx.Size()
	if err != nil {
		t.Fatal(err)
	}
	// Catch-up on the whole chain, in small batches.
	cuDir := t.TempDir()
	r.reopenEdge(fac(cuDir, indexers.Options{UndoBlocks: 3, BatchBytes: 8 << 10}))
	if err := r.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	if tip, err := r.idx.Tip(); err != nil || tip.Hash != tipHash || tip.Height != tipHeight {
		t.Fatalf("catch-up tip %+v %v", tip, err)
	}
	r.checkAgainstModel("after catch-up")
	if rows, bytes, err := r.idx.Size(); err != nil || rows != tipRows || bytes != tipBytes {
		t.Errorf("catch-up index size %d rows %d bytes (%v), tip-built %d rows %d bytes", rows, bytes, err, tipRows, tipBytes)
	}
	verifyIndexOK(t, r.h, r.idx, "after catch-up")

	// Deep reorganization with the first index, reopened: records of its
	// newest 3 blocks only; replace the big blocks with a longer branch
	// from the fork.
	r.reopenEdge(fac(firstDir, opts))
	if tip, err := r.idx.Tip(); err != nil || tip.Hash != tipHash {
		t.Fatalf("reopened tip %+v %v", tip, err)
	}
	parent := fork
	for h := forkHeight + 1; h <= tipHeight+1; h++ {
		blk := r.block(parent, r.coinbase(h, edgeScript(70), blockchain.CalcBlockSubsidy(h, r.h.Params)))
		r.submit(blk, blockchain.BFNone)
		parent = *blk.Hash()
	}
	if got, _ := r.h.Tip(); got != parent {
		t.Fatal("no reorganization")
	}
	r.checkAgainstModel("after the deep reorganization")
	reorgRows, reorgBytes, _ := r.idx.Size()
	verifyIndexOK(t, r.h, r.idx, "after the deep reorganization")
	r.checkEdgeScripts("after the deep reorganization", a, b, edgeScript(60), edgeScript(61))

	// The catch-up index, left on the old branch, reconciled at start.
	r.reopenEdge(fac(cuDir, indexers.Options{UndoBlocks: 3}))
	if err := r.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	r.checkAgainstModel("stale index reconciled at start")
	if rows, bytes, err := r.idx.Size(); err != nil || rows != reorgRows || bytes != reorgBytes {
		t.Errorf("reconciled index size %d rows %d bytes (%v), the other %d rows %d bytes", rows, bytes, err, reorgRows, reorgBytes)
	}
	verifyIndexOK(t, r.h, r.idx, "stale index reconciled at start")
	r.checkEdgeScripts("stale index reconciled at start", a, b, edgeScript(60), edgeScript(61))
}

// reopenEdge closes the harness and opens its directory again (the wallet
// rebuilt from the chain) with index.
func (r *edgeRig) reopenEdge(index testchain.IndexFactory) {
	r.t.Helper()
	dir := r.h.Dir
	if err := r.h.Close(); err != nil {
		r.t.Fatal(err)
	}
	h, err := testchain.Open(dir, index)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { h.Close() })
	r.h = h
}

// checkEdgeScripts compares scripts the model may hold no history for (then
// the index must hold none either).
func (r *edgeRig) checkEdgeScripts(what string, pks ...[]byte) {
	t := r.t
	t.Helper()
	m, err := testchain.BuildModel(r.h)
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range pks {
		sh := shOf(pk)
		hist, _, err := r.idx.History(sh, 0)
		if err != nil || len(hist) != len(m.History[sh]) {
			t.Errorf("%s: History(%x) has %d entries (%v), model %d", what, pk, len(hist), err, len(m.History[sh]))
		}
		us, _, err := r.idx.Unspent(sh, 0)
		if err != nil || len(us) != len(m.Unspent[sh]) {
			t.Errorf("%s: Unspent(%x) has %d (%v), model %d", what, pk, len(us), err, len(m.Unspent[sh]))
		}
		if st, _, err := r.idx.Status(sh, 0); err != nil || string(st.Sum()) != string(m.Status(sh)) {
			t.Errorf("%s: Status(%x) = %x (%v), model %s", what, pk, st.Sum(), err, m.StatusHex(sh))
		}
		n, sum, _, err := r.idx.UnspentTotals(sh)
		if err != nil || n != len(m.Unspent[sh]) || sum != m.Balance[sh] {
			t.Errorf("%s: UnspentTotals(%x) = %d, %d (%v), model %d, %d", what, pk, n, sum, err, len(m.Unspent[sh]), m.Balance[sh])
		}
	}
}

package indexers_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestCraftedBlocksMatchModel builds blocks by hand with the cases the
// random generator rarely or never makes, and reorganizes them to other
// heights and positions, comparing every answer with testchain's model.
func TestCraftedBlocksMatchModel(t *testing.T) {
	r := newEdgeRig(t)
	s := func(n int64) []byte { return edgeScript(n) }
	var cbs []*wire.MsgTx
	for i := 0; i < 103; i++ {
		b := r.mine(s(int64(10 + i%3)))
		cbs = append(cbs, b.MsgBlock().Transactions[0])
	}
	fork, _ := r.h.Tip()
	val := cbs[0].TxOut[0].Value
	op := func(tx *wire.MsgTx, i uint32) wire.OutPoint { return wire.OutPoint{Hash: tx.TxHash(), Index: i} }
	out := func(v int64, pk []byte) *wire.TxOut { return &wire.TxOut{Value: v, PkScript: pk} }
	big := bytes.Repeat([]byte{txscript.OP_NOP}, txscript.MaxScriptSize+1)
	// A spendable script of exactly MaxScriptSize bytes: 19 pushes of 520
	// bytes and one of 50, dropped, then OP_NOP OP_TRUE.
	var exact []byte
	for i := 0; i < 19; i++ {
		exact = append(exact, txscript.OP_PUSHDATA2, 0x08, 0x02)
		exact = append(exact, bytes.Repeat([]byte{byte(i)}, 520)...)
	}
	exact = append(exact, 50)
	exact = append(exact, bytes.Repeat([]byte{0xee}, 50)...)
	exact = append(exact, bytes.Repeat([]byte{txscript.OP_2DROP}, 10)...)
	exact = append(exact, txscript.OP_NOP, txscript.OP_TRUE)
	if len(exact) != txscript.MaxScriptSize {
		t.Fatalf("script of %d bytes", len(exact))
	}
	empty := []byte{}
	falseReturn := []byte{txscript.OP_FALSE, txscript.OP_RETURN}
	malformed := []byte{txscript.OP_TRUE, txscript.OP_PUSHDATA1, 0x05, 0x01}

	// tx1: several outputs to one script, a zero-value output, an empty
	// script, OP_FALSE OP_RETURN, OP_RETURN, an oversized and a
	// malformed script.
	tx1 := spend([]wire.OutPoint{op(cbs[0], 0)}, nil,
		out(val/4, s(20)), out(val/4, s(20)), out(val/4, s(20)), out(0, s(21)),
		out(val/8, empty), out(0, falseReturn), out(0, []byte{txscript.OP_RETURN, 0x01, 0x02}),
		out(1, big), out(1, malformed), out(val/8-2, exact))
	// tx2: two inputs from s(20) in the block that created them, paying
	// s(20) again and s(22).
	tx2 := spend([]wire.OutPoint{op(tx1, 0), op(tx1, 1)}, nil, out(val/4, s(20)), out(val/4, s(22)))
	// tx3, tx4: a chain of same-block spends back to s(20), the empty
	// script spent (OP_TRUE signature script), the 10,000-byte script spent.
	tx3 := spend([]wire.OutPoint{op(tx2, 0)}, nil, out(val/4, s(20)))
	tx4 := spend([]wire.OutPoint{op(tx3, 0), op(tx1, 4), op(tx1, 2), op(tx1, 3), op(tx1, 9)},
		[][]byte{nil, {txscript.OP_TRUE}, nil, nil, nil},
		out(val/4, s(23)), out(val/4, s(20)), out(val/8-2, empty), out(val/8, s(21)))
	// tx5: spends an older coinbase, pays its own script twice.
	tx5 := spend([]wire.OutPoint{op(cbs[1], 0)}, nil, out(val/2, s(11)), out(val/2, s(11)))
	r.mine(s(30), tx1, tx2, tx3, tx4, tx5)
	r.mine(s(31))
	r.checkAgainstModel("crafted block")

	// Reorganize: the same transactions at other heights and positions.
	_, height := r.h.Tip()
	b1 := r.block(fork, r.coinbase(height-1, s(40), blockchain.CalcBlockSubsidy(height-1, r.h.Params)), tx5)
	r.submit(b1, blockchain.BFNone)
	filler := spend([]wire.OutPoint{op(cbs[2], 0)}, nil, out(val, s(20)))
	b2 := r.block(*b1.Hash(), r.coinbase(height, s(41), blockchain.CalcBlockSubsidy(height, r.h.Params)), filler, tx1, tx2, tx3, tx4)
	r.submit(b2, blockchain.BFNone)
	b3 := r.block(*b2.Hash(), r.coinbase(height+1, s(42), blockchain.CalcBlockSubsidy(height+1, r.h.Params)))
	r.submit(b3, blockchain.BFNone)
	if got, _ := r.h.Tip(); got != *b3.Hash() {
		t.Fatalf("no reorganization")
	}
	r.checkAgainstModel("after the reorganization")
}

// TestMempoolChainToOneScript: a pool transaction spending another
// pool transaction's output back to the same script, then the parent mined.
func TestMempoolChainToOneScript(t *testing.T) {
	r := newEdgeRig(t)
	pk := edgeScript(500)
	sh := shOf(pk)
	cb := r.mine(pk).MsgBlock().Transactions[0]
	for i := 0; i < int(r.h.Params.CoinbaseMaturity); i++ {
		r.mine(edgeScript(600))
	}
	c := cb.TxOut[0].Value
	pool := testchain.NewTxPool(r.h.Chain, r.h.Params, nil)
	m := indexers.NewMempool(r.idx.PrevOut)
	p := spend([]wire.OutPoint{{Hash: cb.TxHash()}}, nil,
		&wire.TxOut{Value: c / 2, PkScript: pk}, &wire.TxOut{Value: c/2 - 100000, PkScript: edgeScript(501)})
	ch := spend([]wire.OutPoint{{Hash: p.TxHash()}}, nil, &wire.TxOut{Value: c/2 - 100000, PkScript: pk})
	for _, tx := range []*wire.MsgTx{p, ch} {
		if _, err := pool.ProcessTransaction(btcutil.NewTx(tx), false, false, 0); err != nil {
			t.Fatal(err)
		}
	}
	m.Sync(pool.TxDescs())
	es := m.Entries(sh)
	if len(es) != 2 || es[0].TxHash != p.TxHash() || es[0].Height != 0 || es[1].TxHash != ch.TxHash() || es[1].Height != -1 {
		t.Errorf("entries %+v", es)
	}
	if got, want := balanceOf(m, sh), ch.TxOut[0].Value-c; got != want {
		t.Errorf("unconfirmed balance %d, want %d", got, want)
	}
	if us := m.Unspent(sh, nil); len(us) != 1 || us[0].TxHash != ch.TxHash() {
		t.Errorf("unspent %+v", us)
	}
	b := r.mine(edgeScript(700), p)
	testchain.RemoveMined(pool, b)
	m.Sync(pool.TxDescs())
	es = m.Entries(sh)
	if len(es) != 1 || es[0].TxHash != ch.TxHash() || es[0].Height != 0 {
		t.Errorf("after the parent was mined: entries %+v", es)
	}
	if got, want := balanceOf(m, sh), ch.TxOut[0].Value-p.TxOut[0].Value; got != want {
		t.Errorf("after the parent was mined: unconfirmed balance %d, want %d", got, want)
	}
	if _, ok := m.SpentBy(wire.OutPoint{Hash: p.TxHash()}); !ok {
		t.Error("p:0 not spent by the pool")
	}
	_, conf, _, _ := r.idx.UnspentTotals(sh)
	if conf+balanceOf(m, sh) != ch.TxOut[0].Value {
		t.Errorf("total %d", conf+balanceOf(m, sh))
	}
}

// TestHistoryPageNonPositiveN checks that a page of n <= 0 entries is
// empty, as HistoryTxs clamps its from argument, rather than a panic of the
// caller's goroutine.
func TestHistoryPageNonPositiveN(t *testing.T) {
	r := newEdgeRig(t)
	pk := edgeScript(7)
	r.mine(pk)
	r.mine(pk)
	sh := shOf(pk)
	if h, _, err := r.idx.History(sh, 0); err != nil || len(h) != 2 {
		t.Fatalf("history: %d entries, %v", len(h), err)
	}
	for _, n := range []int{0, -1, math.MinInt} {
		page, _, err := r.idx.HistoryPage(sh, nil, n, 0)
		if err != nil || len(page) != 0 {
			t.Errorf("HistoryPage(sh, nil, %d, 0): %d entries, %v; want none", n, len(page), err)
		}
	}
	if page, _, err := r.idx.HistoryPage(sh, nil, 1, 0); err != nil || len(page) != 1 {
		t.Errorf("HistoryPage(sh, nil, 1, 0): %d entries, %v; want 1", len(page), err)
	}
}

// balanceOf is the unconfirmed change of sh's balance in m.
func balanceOf(m *indexers.Mempool, sh indexers.ScriptHash) int64 {
	d, _ := m.BalanceOf(sh, nil)
	return d
}

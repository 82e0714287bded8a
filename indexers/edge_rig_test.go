package indexers_test

// A rig for hand-made blocks on a real btcd regtest chain (ffldb, btcd's
// blockchain.BlockChain, the Electrum index following it through its
// Manager), for edge cases the random generator of internal/testchain does
// not make. Outputs pay bare anyone-can-spend scripts `<n> OP_DROP OP_TRUE`
// spent with an empty signature script.

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

type edgeRig struct {
	t     *testing.T
	h     *testchain.Harness
	idx   *indexers.ElectrumIndex
	nonce int64
}

func newEdgeRig(t *testing.T) *edgeRig {
	t.Helper()
	r := &edgeRig{t: t}
	inner := testchain.ElectrumIndex(t.TempDir(), indexers.Options{UndoBlocks: 6}, &r.idx, nil)
	h, err := testchain.CreateWith(t.TempDir(), testchain.Options{Index: func(db database.DB, p *chaincfg.Params) blockchain.IndexManager {
		m := inner(db, p)
		r.idx.SetScanSplit(2)
		return m
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r.h = h
	return r
}

// edgeScript is the bare anyone-can-spend script `<n> OP_DROP OP_TRUE`.
func edgeScript(n int64) []byte {
	s, err := txscript.NewScriptBuilder().AddInt64(n).AddOp(txscript.OP_DROP).AddOp(txscript.OP_TRUE).Script()
	if err != nil {
		panic(err)
	}
	return s
}

func shOf(pk []byte) indexers.ScriptHash { return indexers.ScriptHash(sha256.Sum256(pk)) }

// coinbase returns a BIP 34 coinbase for height paying value to pk.
func (r *edgeRig) coinbase(height int32, pk []byte, value int64) *wire.MsgTx {
	r.nonce++
	sig, _ := txscript.NewScriptBuilder().AddInt64(int64(height)).AddInt64(r.nonce).Script()
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: *wire.NewOutPoint(&chainhash.Hash{}, wire.MaxPrevOutIndex),
		SignatureScript: sig, Sequence: wire.MaxTxInSequenceNum})
	tx.AddTxOut(&wire.TxOut{Value: value, PkScript: pk})
	return tx
}

// spend returns a transaction spending ins (outputs of edge scripts or
// OP_TRUE-satisfiable scripts: sigScript per input) into outs.
func spend(ins []wire.OutPoint, sigs [][]byte, outs ...*wire.TxOut) *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	for i, op := range ins {
		var sig []byte
		if sigs != nil {
			sig = sigs[i]
		}
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: op, SignatureScript: sig, Sequence: wire.MaxTxInSequenceNum})
	}
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	return tx
}

// block assembles and solves a block on parent.
func (r *edgeRig) block(parent chainhash.Hash, cb *wire.MsgTx, txs ...*wire.MsgTx) *btcutil.Block {
	r.t.Helper()
	ph, err := r.h.Chain.HeaderByHash(&parent)
	if err != nil {
		r.t.Fatal(err)
	}
	all := append([]*wire.MsgTx{cb}, txs...)
	utxs := make([]*btcutil.Tx, len(all))
	for i, tx := range all {
		utxs[i] = btcutil.NewTx(tx)
	}
	ts := ph.Timestamp.Add(time.Second)
	if first := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC); ts.Before(first) {
		ts = first
	}
	msg := &wire.MsgBlock{Header: wire.BlockHeader{Version: 4, PrevBlock: parent,
		MerkleRoot: blockchain.CalcMerkleRoot(utxs, false), Timestamp: ts, Bits: r.h.Params.PowLimitBits},
		Transactions: all}
	target := blockchain.CompactToBig(msg.Header.Bits)
	for {
		hash := msg.Header.BlockHash()
		if blockchain.HashToBig(&hash).Cmp(target) <= 0 {
			break
		}
		msg.Header.Nonce++
	}
	return btcutil.NewBlock(msg)
}

// submit processes a block with flags and waits for the index to hold the
// chain's tip.
func (r *edgeRig) submit(b *btcutil.Block, flags blockchain.BehaviorFlags) {
	r.t.Helper()
	_, orphan, err := r.h.Chain.ProcessBlock(b, flags|blockchain.BFNoPoWCheck)
	if err != nil || orphan {
		r.t.Fatalf("process block %v: orphan %v, %v", b.Hash(), orphan, err)
	}
	if err := r.idx.Sync(); err != nil {
		r.t.Fatal(err)
	}
}

// mine builds a block on the tip with a fresh coinbase paying pk and
// processes it; it returns the block.
func (r *edgeRig) mine(pk []byte, txs ...*wire.MsgTx) *btcutil.Block {
	r.t.Helper()
	tip, height := r.h.Tip()
	var fees int64
	// Fees are left at zero by the tests' transactions.
	cb := r.coinbase(height+1, pk, blockchain.CalcBlockSubsidy(height+1, r.h.Params)+fees)
	b := r.block(tip, cb, txs...)
	r.submit(b, blockchain.BFNone)
	return b
}

// checkAgainstModel compares every script's history, status, unspent list
// and balance, and every transaction's location, with testchain's model.
func (r *edgeRig) checkAgainstModel(what string) {
	t := r.t
	t.Helper()
	m, err := testchain.BuildModel(r.h)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range m.ScriptHashes() {
		hist, _, err := r.idx.History(sh, 0)
		if err != nil {
			t.Fatalf("%s: History: %v", what, err)
		}
		want := m.History[sh]
		ok := len(hist) == len(want)
		for i := 0; ok && i < len(hist); i++ {
			ok = hist[i].TxHash == want[i].TxHash && hist[i].Height == want[i].Height
		}
		if !ok {
			t.Errorf("%s: History(%v) = %v, model %v", what, sh, hist, want)
		}
		st, _, err := r.idx.Status(sh, 0)
		if err != nil || !bytes.Equal(st.Sum(), m.Status(sh)) {
			t.Errorf("%s: Status(%v) = %x (%v), model %s", what, sh, st.Sum(), err, m.StatusHex(sh))
		}
		us, _, err := r.idx.Unspent(sh, 0)
		if err != nil {
			t.Fatalf("%s: Unspent: %v", what, err)
		}
		wu := m.Unspent[sh]
		ok = len(us) == len(wu)
		for i := 0; ok && i < len(us); i++ {
			ok = us[i].TxHash == wu[i].TxHash && us[i].Vout == wu[i].Vout && us[i].Height == wu[i].Height && us[i].Value == wu[i].Value
		}
		if !ok {
			t.Errorf("%s: Unspent(%v) = %+v, model %+v", what, sh, us, wu)
		}
		_, bal, _, err := r.idx.UnspentTotals(sh)
		if err != nil || bal != m.Balance[sh] {
			t.Errorf("%s: UnspentTotals(%v) sum %d (%v), model %d", what, sh, bal, err, m.Balance[sh])
		}
	}
	for txid, at := range m.Txs {
		loc, err := r.idx.TxLocation(txid)
		if err != nil || loc.Height != at.Height || loc.Pos != at.Pos {
			t.Errorf("%s: TxLocation(%v) = %+v (%v), model %+v", what, txid, loc, err, at)
		}
	}
	for height, ids := range m.Blocks {
		got, err := r.idx.BlockTxIDs(int32(height))
		if err != nil || len(got) != len(ids) {
			t.Errorf("%s: BlockTxIDs(%d) = %d txids (%v), model %d", what, height, len(got), err, len(ids))
			continue
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Errorf("%s: BlockTxIDs(%d)[%d] differs", what, height, i)
			}
		}
	}
}

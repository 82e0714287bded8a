package indexers_test

import (
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestKeyScriptsTipAndCatchUp pays and spends (with signatures) the
// script shapes btcd compresses in its spend journal (P2PK with an
// uncompressed and a compressed key, P2PKH) and some it keeps raw (P2PK
// with a hybrid key, bare multisig), so that the spends the index reads
// back from the journal at catch-up are the journal's decompressed
// scripts; the index built at the tip and one built by catch-up must both
// match the model.
func TestKeyScriptsTipAndCatchUp(t *testing.T) {
	r, fac, _ := newReopenableRig(t, indexers.Options{UndoBlocks: 3})
	var cbs []*wire.MsgTx
	for i := 0; i < 102; i++ {
		blk := r.mine(edgeScript(int64(10 + i%3)))
		cbs = append(cbs, blk.MsgBlock().Transactions[0])
	}
	key := func(b byte) *btcec.PrivateKey {
		var s [32]byte
		s[31] = b
		s[0] = 1
		k, _ := btcec.PrivKeyFromBytes(s[:])
		return k
	}
	k1, k2, k3, k4, k5, k6 := key(1), key(2), key(3), key(4), key(5), key(6)
	p2pk := func(pub []byte) []byte {
		s, _ := txscript.NewScriptBuilder().AddData(pub).AddOp(txscript.OP_CHECKSIG).Script()
		return s
	}
	uncomp := p2pk(k1.PubKey().SerializeUncompressed())
	comp := p2pk(k2.PubKey().SerializeCompressed())
	a3, _ := address.NewAddressPubKeyHash(address.Hash160(k3.PubKey().SerializeCompressed()), r.h.Params)
	p2pkh, _ := txscript.PayToAddrScript(a3)
	m4, _ := address.NewAddressPubKey(k4.PubKey().SerializeCompressed(), r.h.Params)
	m5, _ := address.NewAddressPubKey(k5.PubKey().SerializeCompressed(), r.h.Params)
	multi, _ := txscript.MultiSigScript([]*address.AddressPubKey{m4, m5}, 1)
	hyb := k6.PubKey().SerializeUncompressed()
	hyb[0] = 0x06 | hyb[64]&1
	hybrid := p2pk(hyb)
	scripts := [][]byte{uncomp, comp, p2pkh, multi, hybrid}

	val := cbs[0].TxOut[0].Value
	fund := spend([]wire.OutPoint{{Hash: cbs[0].TxHash()}}, nil)
	for i, s := range scripts {
		fund.AddTxOut(&wire.TxOut{Value: val / 16, PkScript: s})
		fund.AddTxOut(&wire.TxOut{Value: int64(i), PkScript: s}) // a second, small one
	}
	fund.AddTxOut(&wire.TxOut{Value: val - 5*(val/16) - 10, PkScript: edgeScript(90)})
	r.mine(edgeScript(60), fund)

	// One transaction spends every output of fund to the keys, one per
	// input, signed.
	sp := wire.NewMsgTx(2)
	for i := 0; i < 10; i++ {
		sp.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: fund.TxHash(), Index: uint32(i)}, Sequence: wire.MaxTxInSequenceNum})
	}
	var total int64
	for i := 0; i < 10; i++ {
		total += fund.TxOut[i].Value
	}
	sp.AddTxOut(&wire.TxOut{Value: total, PkScript: uncomp})
	for i := 0; i < 10; i++ {
		pk := fund.TxOut[i].PkScript
		var sig []byte
		var err error
		switch i / 2 {
		case 0, 1, 4:
			k := []*btcec.PrivateKey{k1, k2, nil, nil, k6}[i/2]
			var s []byte
			s, err = txscript.RawTxInSignature(sp, i, pk, txscript.SigHashAll, k)
			if err == nil {
				sig, err = txscript.NewScriptBuilder().AddData(s).Script()
			}
		case 2:
			sig, err = txscript.SignatureScript(sp, i, pk, txscript.SigHashAll, k3, true)
		case 3:
			var s []byte
			s, err = txscript.RawTxInSignature(sp, i, pk, txscript.SigHashAll, k4)
			if err == nil {
				sig, err = txscript.NewScriptBuilder().AddOp(txscript.OP_0).AddData(s).Script()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		sp.TxIn[i].SignatureScript = sig
	}
	r.mine(edgeScript(61), sp)
	r.mine(edgeScript(62))
	r.checkAgainstModel("at the tip")
	r.checkEdgeScripts("at the tip", scripts...)
	verifyIndexOK(t, r.h, r.idx, "at the tip")

	r.reopenEdge(fac(t.TempDir(), indexers.Options{UndoBlocks: 3}))
	if err := r.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	r.checkAgainstModel("after catch-up")
	r.checkEdgeScripts("after catch-up", scripts...)
	verifyIndexOK(t, r.h, r.idx, "after catch-up")
}

package rpcext

import (
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// bigTxBytes is the size of the bulky output of bigTx: a block holding one
// such transaction is about 0.9 MB (weight 3.6 M, under the 4 M limit).
const bigTxBytes = 900_000

// bigTx spends the coinbase at height to payTo, with a second, zero-value
// output of bigTxBytes (consensus-valid: output scripts are not run).
func bigTx(t *testing.T, node *testNode, height int32, payTo address.Address) *btcutil.Tx {
	t.Helper()
	hash, err := node.chain.BlockHashByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	block, err := node.chain.BlockByHash(hash)
	if err != nil {
		t.Fatal(err)
	}
	cb := block.Transactions()[0]
	prev := cb.MsgTx().TxOut[0]
	script, err := txscript.PayToAddrScript(payTo)
	if err != nil {
		t.Fatal(err)
	}
	bulk := make([]byte, bigTxBytes)
	bulk[0] = txscript.OP_RETURN
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: *cb.Hash(), Index: 0}, nil, nil))
	tx.AddTxOut(wire.NewTxOut(prev.Value-100_000, script))
	tx.AddTxOut(wire.NewTxOut(0, bulk))
	sig, err := txscript.SignatureScript(tx, 0, prev.PkScript, txscript.SigHashAll, node.key, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.TxIn[0].SignatureScript = sig
	return btcutil.NewTx(tx)
}

// mineBig mines n blocks of about 0.9 MB, each holding one bigTx paying
// payTo, on a node whose coinbases from height 1 to n are mature, and
// returns their hashes.
func mineBig(t *testing.T, node *testNode, n int, payTo address.Address) []*chainhash.Hash {
	t.Helper()
	var hashes []*chainhash.Hash
	for i := 0; i < n; i++ {
		b, err := node.mine(nil, []*btcutil.Tx{bigTx(t, node, int32(i+1), payTo)}, node.minerTo)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, b.Hash())
	}
	return hashes
}

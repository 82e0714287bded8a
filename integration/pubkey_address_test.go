package integration

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// pubKeyAddress returns a regtest pay-to-pubkey address and its output
// script (the key itself and OP_CHECKSIG, not the key's P2PKH script).
func pubKeyAddress(t *testing.T) (*address.AddressPubKey, []byte) {
	t.Helper()
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := address.NewAddressPubKey(key.PubKey().SerializeCompressed(), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	return addr, script
}

// TestFundAndFaucetPayPubKeyAddress: Fund and Faucet given an
// *address.AddressPubKey pay its P2PK script, as they pay the script of
// any other address.
func TestFundAndFaucetPayPubKeyAddress(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{})
	addr, script := pubKeyAddress(t)
	op, err := n.Fund(addr, btcutil.Amount(70_000))
	if err != nil {
		t.Fatalf("Fund(%T %v): %v", addr, addr, err)
	}
	utxos, err := n.Electrum.ListUnspent(ctx, ScriptHash(script))
	if err != nil || len(utxos) != 1 || utxos[0].TxHash != op.Hash.String() || utxos[0].Height <= 0 {
		t.Fatalf("listunspent of the P2PK script %x: %+v (%v), want %v confirmed", script, utxos, err, op)
	}

	addr, script = pubKeyAddress(t)
	txid, err := n.Faucet(addr, btcutil.Amount(80_000))
	if err != nil {
		t.Fatalf("Faucet(%T %v): %v", addr, addr, err)
	}
	tx, err := n.RPC.GetRawTransaction(txid)
	if err != nil {
		t.Fatal(err)
	}
	if !paysScript(tx.MsgTx().TxOut, script, 80_000) {
		t.Fatalf("the faucet payment %v to %v has no output of 80000 to its P2PK script %x", txid, addr, script)
	}
}

// TestMineToPubKeyAddress: the coinbases of the blocks MineTo mines to an
// *address.AddressPubKey pay its P2PK script.
func TestMineToPubKeyAddress(t *testing.T) {
	n := StartNode(t, NodeConfig{})
	addr, script := pubKeyAddress(t)
	hashes, err := n.MineTo(addr, 2)
	if err != nil || len(hashes) != 2 {
		t.Fatalf("MineTo(%T): %v %v", addr, hashes, err)
	}
	for _, h := range hashes {
		blk, err := n.RPC.GetBlock(h)
		if err != nil {
			t.Fatal(err)
		}
		cb := blk.Transactions[0]
		if !paysScript(cb.TxOut, script, cb.TxOut[0].Value) {
			var got []string
			for _, out := range cb.TxOut {
				got = append(got, fmt.Sprintf("%x", out.PkScript))
			}
			t.Fatalf("the coinbase of block %v that MineTo(%v) mined pays %v, not the address's script %x", h, addr, got, script)
		}
	}
}

// paysScript reports whether outs has an output of value to script.
func paysScript(outs []*wire.TxOut, script []byte, value int64) bool {
	for _, out := range outs {
		if out.Value == value && bytes.Equal(out.PkScript, script) {
			return true
		}
	}
	return false
}

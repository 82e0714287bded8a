package electrum

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestVerboseNullDataAsBitcoinCore: blockchain.transaction.get with verbose is
// "Bitcoin Core's getrawtransaction object" (docs/PROTOCOL.md §5), which
// is what ElectrumX relays. Bitcoin Core names every output script that is
// OP_RETURN followed by push-only opcodes "nulldata" (src/script/solver.cpp,
// Solver: `scriptPubKey[0] == OP_RETURN &&
// scriptPubKey.IsPushOnly(scriptPubKey.begin()+1)`), whatever the number
// and size of the pushes: the Runes protocol's `OP_RETURN OP_13 <data>`,
// an 81-byte push, two pushes. The outputs are mined in a block and read
// back over TCP.
func TestVerboseNullDataAsBitcoinCore(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	runes, _ := txscript.NewScriptBuilder().AddOp(txscript.OP_RETURN).AddOp(txscript.OP_13).
		AddData([]byte{0x14, 0x01, 0x02, 0x03}).Script()
	long, _ := txscript.NewScriptBuilder().AddOp(txscript.OP_RETURN).AddData(bytes.Repeat([]byte{0xab}, 81)).Script()
	two, _ := txscript.NewScriptBuilder().AddOp(txscript.OP_RETURN).AddData([]byte("abc")).AddData([]byte("def")).Script()
	short, _ := txscript.NewScriptBuilder().AddOp(txscript.OP_RETURN).AddData([]byte("abc")).Script()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-100_000, p2wpkh(0x61)),
		wire.NewTxOut(0, short), wire.NewTxOut(0, runes), wire.NewTxOut(0, long), wire.NewTxOut(0, two))
	n.mine(nil, tx)
	var v struct {
		Vout []struct {
			N            int `json:"n"`
			ScriptPubKey struct {
				Hex  string `json:"hex"`
				Type string `json:"type"`
			} `json:"scriptPubKey"`
		} `json:"vout"`
		Confirmations int `json:"confirmations"`
	}
	c.must(&v, "blockchain.transaction.get", tx.TxHash().String(), true)
	if v.Confirmations != 1 || len(v.Vout) != 5 {
		t.Fatalf("verbose %+v", v)
	}
	for i, name := range []string{"", "OP_RETURN <3 bytes>", "OP_RETURN OP_13 <4 bytes> (Runes)", "OP_RETURN <81 bytes>", "OP_RETURN <3 bytes> <3 bytes>"} {
		if i == 0 {
			continue
		}
		if got := v.Vout[i].ScriptPubKey.Type; got != "nulldata" {
			t.Errorf("vout %d, %s: type %q, Bitcoin Core's getrawtransaction says \"nulldata\"", i, name, got)
		}
	}
}

package electrum

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/address/v2/bech32"
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

// TestVerboseWitnessUnknownAsBitcoinCore: Bitcoin Core's
// getrawtransaction names a witness program of version 1 or more that is
// neither taproot (version 1, 32 bytes) nor the anchor "witness_unknown"
// and gives its bech32m address (src/script/solver.cpp: `if
// (witnessversion != 0) return TxoutType::WITNESS_UNKNOWN;`;
// ExtractDestination's WitnessUnknown). Such outputs are valid and
// spendable by anyone today.
func TestVerboseWitnessUnknownAsBitcoinCore(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	prog := func(version byte, size int) []byte {
		op := byte(txscript.OP_1 + version - 1)
		return append([]byte{op, byte(size)}, bytes.Repeat([]byte{0x07}, size)...)
	}
	scripts := [][]byte{prog(2, 32), prog(1, 20), prog(16, 2)}
	versions := []byte{2, 1, 16}
	outs := []*wire.TxOut{wire.NewTxOut(coin.Value-100_000, p2wpkh(0x62))}
	for _, s := range scripts {
		outs = append(outs, wire.NewTxOut(1000, s))
	}
	// The programs Core names otherwise: the anchor, taproot, and a
	// version 0 program of neither 20 nor 32 bytes (nonstandard).
	others := map[int]string{len(outs): "anchor", len(outs) + 1: "witness_v1_taproot", len(outs) + 2: "nonstandard"}
	outs = append(outs, wire.NewTxOut(0, txscript.PayToAnchorScript), wire.NewTxOut(1000, prog(1, 32)),
		wire.NewTxOut(1000, append([]byte{txscript.OP_0, 25}, bytes.Repeat([]byte{0x07}, 25)...)))
	tx := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	n.mine(nil, tx)
	var v struct {
		Vout []struct {
			ScriptPubKey struct {
				Type    string `json:"type"`
				Address string `json:"address"`
			} `json:"scriptPubKey"`
		} `json:"vout"`
	}
	c.must(&v, "blockchain.transaction.get", tx.TxHash().String(), true)
	for i, s := range scripts {
		conv, err := bech32.ConvertBits(s[2:], 8, 5, true)
		if err != nil {
			t.Fatal(err)
		}
		want, err := bech32.EncodeM(n.h.Params.Bech32HRPSegwit, append([]byte{versions[i]}, conv...))
		if err != nil {
			t.Fatal(err)
		}
		got := v.Vout[i+1].ScriptPubKey
		if got.Type != "witness_unknown" || got.Address != want {
			t.Errorf("vout %d (version %d, %d bytes): type %q address %q; Bitcoin Core: \"witness_unknown\" %s",
				i+1, versions[i], len(s)-2, got.Type, got.Address, want)
		}
	}
	for i, typ := range others {
		if got := v.Vout[i].ScriptPubKey.Type; got != typ {
			t.Errorf("vout %d: type %q, Bitcoin Core: %q", i, got, typ)
		}
	}
}

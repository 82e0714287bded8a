package electrum

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestPositionalNullIsMissing: docs/PROTOCOL.md: a null member
// counts as absent, a missing required one is -32602, and the
// named form {"scripthash": null} is answered so. The positional form
// [null] must get the same answer, not a code-1 error about an empty value
// (" is not a valid script hash", " should be a transaction hash").
func TestPositionalNullIsMissing(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	cases := []struct{ method, param string }{
		{"blockchain.scripthash.get_balance", "scripthash"},
		{"blockchain.transaction.get", "tx_hash"},
		{"blockchain.block.header", "height"},
	}
	for _, tc := range cases {
		named := c.await(c.sendExpect("1", `{"jsonrpc":"2.0","id":1,"method":"`+tc.method+`","params":{"`+tc.param+`":null}}`))
		pos := c.await(c.sendExpect("2", `{"jsonrpc":"2.0","id":2,"method":"`+tc.method+`","params":[null]}`))
		if named.Error == nil || pos.Error == nil {
			t.Fatalf("%s: named %+v positional %+v", tc.method, named.Error, pos.Error)
		}
		if pos.Error.Code != codeInvalidParams || *pos.Error != *named.Error {
			t.Errorf("%s [null]: got code %d %q; want as {%q: null}: code %d %q",
				tc.method, pos.Error.Code, pos.Error.Message, tc.param, named.Error.Code, named.Error.Message)
		}
	}
}

// TestOversizedBatchWithVersionNegotiatesNothing: a batch over MaxBatch is
// refused whole with one error, also when it opens with server.version
// before negotiation: nothing in it runs, so the client's server.version
// afterwards negotiates.
func TestOversizedBatchWithVersionNegotiatesNothing(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.MaxBatch = 3 })
	c := dial(t, fx.addr)
	ch := c.expectNullID()
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"server.version","params":["x","1.6"]},` +
		`{"jsonrpc":"2.0","id":2,"method":"server.ping"},{"jsonrpc":"2.0","id":3,"method":"server.ping"},` +
		`{"jsonrpc":"2.0","id":4,"method":"server.ping"}]`)
	r := c.await(ch)
	if r.Error == nil || r.Error.Code != codeLimitExceeded {
		t.Fatalf("oversized batch: %+v", r)
	}
	res, rerr := c.call("server.version", "x", "1.6")
	if rerr != nil {
		t.Fatalf("server.version after the refused batch: error %d %q; want the negotiation (the batch was refused whole)", rerr.Code, rerr.Message)
	}
	t.Logf("negotiated %s", res)
}

// TestVersionParamsNotContainer: server.version whose params is not
// an array or object is a -32602 "invalid params: must be an array or an
// object" (docs/PROTOCOL.md), not "use server.version to identify
// client" said to a client that just sent server.version.
func TestVersionParamsNotContainer(t *testing.T) {
	fx := newFixture(t, nil)
	c := dial(t, fx.addr)
	r := c.await(c.sendExpect("1", `{"jsonrpc":"2.0","id":1,"method":"server.version","params":"1.4"}`))
	if r.Error == nil || r.Error.Code != codeInvalidParams {
		t.Fatalf("server.version with params \"1.4\": got %+v; want -32602 invalid params", r.Error)
	}
}

// TestBroadcastTrailingBytesRefused: bitcoind's sendrawtransaction (which
// ElectrumX, Fulcrum and electrs relay to) refuses hex with bytes after the
// transaction ("TX decode failed"): DecodeHexTx requires the whole input to
// be consumed.
func TestBroadcastTrailingBytesRefused(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, n.h.Pool.Spendable[0].PkScript))
	res, rerr := c.call("blockchain.transaction.broadcast", txHex(tx)+"00")
	if rerr == nil {
		t.Errorf("raw_tx with a trailing byte was broadcast: result %s; want error 1 \"the transaction was rejected by network rules.\\n\\nTX decode failed…\"", res)
	}
	// broadcast_package decodes its members the same way.
	c16 := dial(t, n.addr)
	c16.negotiate("1.6")
	coin = n.coin()
	tx = testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, n.h.Pool.Spendable[0].PkScript))
	res, rerr = c16.call("blockchain.transaction.broadcast_package", []string{txHex(tx) + "00"})
	if rerr == nil {
		t.Errorf("package member with a trailing byte was submitted: result %s; want error 1 \"the tx package was rejected by network rules.\\n\\nTX decode failed…\"", res)
	}
}

// TestVerboseBareKeyHasNoAddress: blockchain.transaction.get verbose is
// "Bitcoin Core's getrawtransaction object" (docs/PROTOCOL.md). Core's
// ScriptToUniv adds "address" only when `type != TxoutType::PUBKEY`: a
// P2PK output has none.
func TestVerboseBareKeyHasNoAddress(t *testing.T) {
	fx := newFixtureChain(t)
	// The genesis output's key , as a P2PK script.
	p2pk, _ := hex.DecodeString("4104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac")
	_, h, _ := fx.f.mine(p2pk)
	fx.s, fx.addr = startServer(t, fx.f, nil)
	c := fx.client(t, "1.4")
	var cb string
	c.must(&cb, "blockchain.transaction.id_from_pos", h, 0)
	var v struct {
		Vout []struct {
			ScriptPubKey map[string]json.RawMessage `json:"scriptPubKey"`
		} `json:"vout"`
	}
	c.must(&v, "blockchain.transaction.get", cb, true)
	spk := v.Vout[0].ScriptPubKey
	if string(spk["type"]) != `"pubkey"` {
		t.Fatalf("type %s, want pubkey", spk["type"])
	}
	if a, ok := spk["address"]; ok {
		t.Errorf("P2PK output has \"address\": %s; bitcoind gives none for type pubkey", a)
	}
}

// TestBurnsAsBitcoind: an output counts as burning its value as bitcoind's
// maxburnamount counts it: a script starting with OP_RETURN, over the size
// limit, not parsing, or with an opcode past OP_CHECKSIGADD (MAX_OPCODE);
// OP_CHECKSIGADD itself and the NOPs are valid opcodes.
func TestBurnsAsBitcoind(t *testing.T) {
	for _, tc := range []struct {
		script []byte
		burns  bool
	}{
		{[]byte{txscript.OP_RETURN}, true},
		{[]byte{txscript.OP_1, txscript.OP_PUSHDATA1}, true},
		{[]byte{txscript.OP_1, 0xbb}, true},
		{[]byte{txscript.OP_1, txscript.OP_CHECKSIGADD}, false},
		{[]byte{txscript.OP_1, txscript.OP_NOP10}, false},
		{[]byte{txscript.OP_TRUE}, false},
	} {
		if got := Burns(tc.script); got != tc.burns {
			t.Errorf("Burns(%x) = %v, want %v", tc.script, got, tc.burns)
		}
	}
}

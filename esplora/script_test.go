package esplora

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// TestScriptForms checks the assembly, type and address of scripts against
// answers of Esplora servers (blockstream.info, mempool.space) and
// rust-bitcoin's own vectors for its assembly.
func TestScriptForms(t *testing.T) {
	key := strings.Repeat("02", 1) + strings.Repeat("ab", 32)
	for _, c := range []struct {
		script, asm, typ, addr string
	}{
		{"5120727da28731cccc6f227d0200b43c384ae06e717f6f14f62f31145a8cbb145048",
			"OP_PUSHNUM_1 OP_PUSHBYTES_32 727da28731cccc6f227d0200b43c384ae06e717f6f14f62f31145a8cbb145048",
			"v1_p2tr", "bc1pwf769pe3enxx7gnaqgqtg0pcftsxuutldu20vte3z3dgewc52pyq83gryt"},
		{"5120d5e19bcba9c3442bae90beea0dee2e5760177ee7ac5d4196118e657bbb302141",
			"OP_PUSHNUM_1 OP_PUSHBYTES_32 d5e19bcba9c3442bae90beea0dee2e5760177ee7ac5d4196118e657bbb302141",
			"v1_p2tr", "bc1p6hsehjafcdzzht5shm4qmm3w2aspwlh843w5r9s33ejhhwesy9qss2hxhp"},
		{"76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac",
			"OP_DUP OP_HASH160 OP_PUSHBYTES_20 62e907b15cbf27d5425399ebf6f0fb50ebb88f18 OP_EQUALVERIFY OP_CHECKSIG",
			"p2pkh", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"},
		{"0014751e76e8199196d454941c45d1b3a323f1433bd6",
			"OP_0 OP_PUSHBYTES_20 751e76e8199196d454941c45d1b3a323f1433bd6",
			"v0_p2wpkh", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"},
		{"a914748284390f9e263a4b766a75d0633c50426eb87587",
			"OP_HASH160 OP_PUSHBYTES_20 748284390f9e263a4b766a75d0633c50426eb875 OP_EQUAL",
			"p2sh", "3CK4fEwbMP7heJarmU4eqA3sMbVJyEnU3V"},
		{"51024e73", "OP_PUSHNUM_1 OP_PUSHBYTES_2 4e73", "anchor", "bc1pfeessrawgf"},
		{"6a0568656c6c6f", "OP_RETURN OP_PUSHBYTES_5 68656c6c6f", "op_return", ""},
		{"", "", "empty", ""},
		{"21" + key + "ac", "OP_PUSHBYTES_33 " + key + " OP_CHECKSIG", "p2pk", ""},
		{"5121" + key + "51ae", "OP_PUSHNUM_1 OP_PUSHBYTES_33 " + key + " OP_PUSHNUM_1 OP_CHECKMULTISIG", "multisig", ""},
		{"0019" + strings.Repeat("00", 25), "OP_0 OP_PUSHBYTES_25 " + strings.Repeat("00", 25), "unknown", ""},
		{"ba", "OP_CHECKSIGADD", "provably_unspendable", ""},
		{"7e", "OP_CAT", "provably_unspendable", ""},
		// rust-bitcoin's assembly vectors and opcode names.
		{"03aabbcc", "OP_PUSHBYTES_3 aabbcc", "unknown", ""},
		{"4c02", "OP_PUSHDATA1 <push past end>", "unknown", ""},
		{"4c", "<unexpected end>", "unknown", ""},
		{"764c", "OP_DUP<unexpected end>", "unknown", ""},
		{"4c0100", "OP_PUSHDATA1 00", "unknown", ""},
		{"4f00b0b1b2b3b9bbfeff", "OP_PUSHNUM_NEG1 OP_0 OP_NOP1 OP_CLTV OP_CSV OP_NOP4 OP_NOP10 OP_RETURN_187 OP_RETURN_254 OP_INVALIDOPCODE",
			"unknown", ""},
	} {
		script, err := hex.DecodeString(c.script)
		if err != nil {
			t.Fatal(err)
		}
		if got := scriptAsm(script); got != c.asm {
			t.Errorf("asm %s: %q, want %q", c.script, got, c.asm)
		}
		if got := scriptType(script); got != c.typ {
			t.Errorf("type %s: %q, want %q", c.script, got, c.typ)
		}
		if got := scriptAddress(script, &chaincfg.MainNetParams); got != c.addr {
			t.Errorf("address %s: %q, want %q", c.script, got, c.addr)
		}
	}
}

// TestAddressNetworks checks which addresses the server takes: those of its
// network (and testnet's on regtest, as electrs), and no other.
func TestAddressNetworks(t *testing.T) {
	for _, c := range []struct {
		addr string
		net  *chaincfg.Params
		err  string
	}{
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", &chaincfg.MainNetParams, ""},
		{"1MqgAUsLcDvgUBXnhRQA72No3jdo6S9zWr", &chaincfg.MainNetParams, ""},
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", &chaincfg.RegressionNetParams, "Address on invalid network"},
		{"1MqgAUsLcDvgUBXnhRQA72No3jdo6S9zWr", &chaincfg.TestNet3Params, "Address on invalid network"},
		{"tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx", &chaincfg.RegressionNetParams, ""},
		{"tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx", &chaincfg.MainNetParams, "Address on invalid network"},
		{"bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", &chaincfg.TestNet3Params, "Address on invalid network"},
		{"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", &chaincfg.MainNetParams, "Invalid Bitcoin address"},
		{"02" + strings.Repeat("ab", 32), &chaincfg.MainNetParams, "Invalid Bitcoin address"},
		{"hello", &chaincfg.MainNetParams, "Invalid Bitcoin address"},
	} {
		_, err := decodeAddress(c.addr, c.net)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.err {
			t.Errorf("%s on %s: %q, want %q", c.addr, c.net.Name, got, c.err)
		}
	}
}

// TestAddressScriptHashes: mainnet addresses of every standard kind give
// the Electrum script hashes the protocol's documentation, ElectrumX's and
// the Electrum client's tests give for them.
func TestAddressScriptHashes(t *testing.T) {
	for _, c := range []struct{ addr, scriptHash string }{
		{"1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "8b01df4e368ea28f8dc0423bcf7a4923e3a12d307c875e47a0cfbf90b5c39161"},
		{"34xp4vRoCGJym3xR7yCVPFHoCNxv4Twseo", "2375f2bbf7815e3cdc835074b052d65c9b2f101bab28d37250cc96b2ed9a6809"},
		{"13xDKJbjh4acmLpNVr6Lc9hFcXRr9fyt4x", "8071d0292bab0bd456ade29aa8a9739df30f32800e7e2ab1f532896eb280cbb8"},
		{"3GxRZWkJufR5XA8hnNJgQ2gkASSheoBcmW", "d0d086be88e3b2aa403dbedd5300ac399be7341eb8733a8a2bb90ce515852d06"},
		{"17azqT8T16coRmWKYFj3UjzJuxiYrYFRBR", "c9aecd1fef8d661a42c560bf75c8163e337099800b8face5ca3d1393a30508a7"},
		{"1GXgZ5Qi6gmXTHVSpUPZLy4Ci2nbfb3ZNb", "a9b2a76fc196c553b352186dfcca81fcf323a721cd8431328f8e9d54216818c1"},
		{"1GPHVTY8UD9my6jyP4tb2TYJwUbDetyNC6", "f5914651408417e1166f725a5829ff9576d0dbf05237055bf13abd2af7f79473"},
		{"147kiRHHm9fqeMQSgqf4k35XzuWLP9fmmS", "6dd2e07ad2de9ba8eec4bbe8467eb53f8845acff0d9e6f5627391acc22ff62df"},
		{"3GeVJB3oKr7psgKR6BTXSxKtWUkfsHHhk7", "d7b04e882fa6b13246829ac552a2b21461d9152eb00f0a6adb58457a3e63d7c5"},
		{"3C79goMwT7zSTjXnPoCg6VFGAnUpZAkyus", "714bf6bfe1083e69539f40d4c7a7dca85d187471b35642e55f20d7e866494cf7"},
		{"bc1qqmpt7u5e9hfznljta5gnvhyvfd2kdd0r90hwue", "1929acaaef3a208c715228e9f1ca0318e3a6b9394ab53c8d026137f847ecf97b"},
		{"bc1qpakeeg4d9ydyjxd8paqrw4xy9htsg532xzxn50", "242f02adde84ebb2a7dd778b2f3a81b3826f111da4d8960d826d7a4b816cb261"},
		{"1CC3X2gu58d6wXUWMffpuzN9JAfTUWu4Kj", "5b07ddfde826f5125ee823900749103cea37808038ecead5505a766a07c34445"},
	} {
		script, err := decodeAddress(c.addr, &chaincfg.MainNetParams)
		if err != nil {
			t.Errorf("%s: %v", c.addr, err)
			continue
		}
		if got := indexers.ScriptHashFromScript(script).String(); got != c.scriptHash {
			t.Errorf("%s: script hash %s, want %s", c.addr, got, c.scriptHash)
		}
	}
}

// FuzzScriptForms checks that any bytes, as an output script or a
// serialized transaction, render without a panic, and that the assembly of
// a script that parses names one opcode per token btcd's tokenizer finds.
func FuzzScriptForms(f *testing.F) {
	for _, s := range []string{"", "00", "4c", "4c02", "4d0100", "4e01000000", "76a914", "51024e73", "0014" + strings.Repeat("ab", 20)} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		asm := scriptAsm(script)
		_ = scriptType(script)
		_ = scriptAddress(script, &chaincfg.MainNetParams)
		paidIn(script, &scriptMatcher{})
		tok := txscript.MakeScriptTokenizer(0, script)
		ops := 0
		for tok.Next() {
			ops++
		}
		if tok.Err() == nil && len(script) > 0 {
			words := 0
			for _, w := range strings.Fields(asm) {
				if strings.HasPrefix(w, "OP_") {
					words++
				}
			}
			if words != ops {
				t.Fatalf("%x: %d opcodes in %q, the tokenizer finds %d", script, words, asm, ops)
			}
		}
	})
}

package esplora

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2/bech32"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// segwitAddr encodes a witness program of any version as rust-bitcoin (and
// so electrs) encodes and decodes it: bech32 for v0, bech32m after.
func segwitAddr(t *testing.T, hrp string, version byte, program []byte) string {
	t.Helper()
	conv, err := bech32.ConvertBits(program, 8, 5, true)
	if err != nil {
		t.Fatal(err)
	}
	data := append([]byte{version}, conv...)
	var a string
	if version == 0 {
		a, err = bech32.Encode(hrp, data)
	} else {
		a, err = bech32.EncodeM(hrp, data)
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// witnessScript is OP_n <program>.
func witnessScript(version byte, program []byte) []byte {
	op := byte(0x00)
	if version > 0 {
		op = 0x50 + version
	}
	return append([]byte{op, byte(len(program))}, program...)
}

// TestAddressWitnessV1Of20BytesIsNotP2WPKH: a bech32m address of
// witness version 1 with a 20-byte program is the script OP_1 <20 bytes>
// (rust-bitcoin's Address::from_str, which electrs' address_to_scripthash
// uses, keeps the version). The server must answer for that script, not for
// the v0 P2WPKH script with the same 20 bytes.
func TestAddressWitnessV1Of20BytesIsNotP2WPKH(t *testing.T) {
	n := newTestNode(t, "")
	program := bytes.Repeat([]byte{0x42}, 20)
	p2wpkh := witnessScript(0, program)
	coin := n.coin()
	n.mine(testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: 7_000, PkScript: p2wpkh},
		&wire.TxOut{Value: coin.Value - 8_000, PkScript: p2wpkh}))

	hrp := n.h.Params.Bech32HRPSegwit
	v1 := segwitAddr(t, hrp, 1, program)
	v1Script := witnessScript(1, program)

	type stats struct {
		ChainStats scriptStats `json:"chain_stats"`
	}
	var byHash, byAddr stats
	n.getJSON("/scripthash/"+esploraHash(v1Script), &byHash)
	code, body := n.get("/address/" + v1)
	if code != http.StatusOK {
		t.Fatalf("GET /address/%s (OP_1 <20 bytes>): %d %q; electrs answers 200 with the stats of that script", v1, code, body)
	}
	if err := json.Unmarshal([]byte(body), &byAddr); err != nil {
		t.Fatal(err)
	}
	if byAddr.ChainStats != byHash.ChainStats {
		t.Fatalf("GET /address/%s answers the stats of another script:\n got %+v\nwant %+v (/scripthash of OP_1 <20 bytes>, which has no history)\n(the P2WPKH script 0014%x was paid twice)",
			v1, byAddr.ChainStats, byHash.ChainStats, program)
	}
}

// TestAddressWitnessV2: rust-bitcoin parses any witness version
// 1..16 with a 2..40-byte program, so electrs answers /address for it
// (with empty stats when unused); the server's own scriptpubkey_address
// produces such addresses.
func TestAddressWitnessV2(t *testing.T) {
	n := newTestNode(t, "")
	program := bytes.Repeat([]byte{0x07}, 32)
	v2 := segwitAddr(t, n.h.Params.Bech32HRPSegwit, 2, program)
	if got := scriptAddress(witnessScript(2, program), n.h.Params); got != v2 {
		t.Fatalf("scriptAddress of OP_2 <32 bytes>: %q, want %q", got, v2)
	}
	code, body := n.get("/address/" + v2)
	want := `{"address":"` + v2 + `","chain_stats":{"funded_txo_count":0,"funded_txo_sum":0,"spent_txo_count":0,"spent_txo_sum":0,"tx_count":0},"mempool_stats":{"funded_txo_count":0,"funded_txo_sum":0,"spent_txo_count":0,"spent_txo_sum":0,"tx_count":0}}`
	if code != http.StatusOK || body != want {
		t.Fatalf("GET /address/%s (witness v2, as this server's own scriptpubkey_address writes it): %d %q\nwant 200 %s", v2, code, body, want)
	}
}

// TestBlockTxsStartIndexErrors: electrs (rest.rs, GET
// /block/:hash/txs/:start_index) checks the range first, answering 404
// "start index out of range", then the page boundary, 400 "start index
// must be a multipication of 25" (its spelling).
func TestBlockTxsStartIndexErrors(t *testing.T) {
	n := newTestNode(t, "")
	tip := n.h.Chain.BestSnapshot()
	var big string
	var bigTxs int
	for h := tip.Height; h > 0; h-- {
		b, _ := n.h.Chain.BlockByHeight(h)
		if len(b.Transactions()) > chainTxsPerPage {
			big, bigTxs = b.Hash().String(), len(b.Transactions())
			break
		}
	}
	if big == "" {
		t.Fatal("no block of more than 25 transactions")
	}
	past := (bigTxs/chainTxsPerPage + 1) * chainTxsPerPage // a multiple of 25 past the end
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/block/" + big + "/txs/" + strconv.Itoa(past), 404, "start index out of range"},
		{"/block/" + big + "/txs/" + strconv.Itoa(past+5), 404, "start index out of range"},
		{"/block/" + big + "/txs/5", 400, "start index must be a multipication of 25"},
	} {
		if code, body := n.get(c.path); code != c.code || body != c.body {
			t.Errorf("GET %s: %d %q, electrs answers %d %q", c.path, code, body, c.code, c.body)
		}
	}
}

// TestHeightsPastU32: electrs parses heights as usize, so a height
// too large for the chain (but a number) is 404 "Block not found" for
// /block-height/:height and /blocks/:start_height, not "Invalid number" nor
// the tip's blocks.
func TestHeightsPastU32(t *testing.T) {
	n := newTestNode(t, "")
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/block-height/4294967296", 404, "Block not found"},
		{"/block-height/99999999999", 404, "Block not found"},
		{"/blocks/4294967296", 404, "Block not found"},
		{"/blocks/99999999999", 404, "Block not found"},
		// Rust's usize/u32 parse takes a leading '+'.
		{"/block-height/+1", 200, n.getText("/block-height/1")},
	} {
		if code, body := n.get(c.path); code != c.code || body != c.body {
			if len(body) > 80 {
				body = body[:80] + "..."
			}
			t.Errorf("GET %s: %d %q, electrs answers %d %q", c.path, code, body, c.code, c.body)
		}
	}
}

// TestFloatsAsSerdeJSON: electrs' difficulty is an f64 that
// serde_json writes with ryu: decimal notation for values below 1e16
// (ryu's format64: `0 < kk && kk <= 16`), so every mainnet block since 2011
// shows e.g. 86388558925171.02, not 8.638855892517102e13. jsonFloat claims
// to write numbers "as serde_json writes an f64".
func TestFloatsAsSerdeJSON(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{difficulty(0x17034219), "86388558925171.02"}, // block 840000's bits
		{1234567.5, "1234567.5"},
		{0.00001234, "0.00001234"},
		{1.5e-7, "1.5e-7"},
		{1e16, "1e16"},
		{123, "123.0"},
		{-0.5, "-0.5"},
		{4.656542373906925e-10, "4.656542373906925e-10"}, // regtest's difficulty
	} {
		b, _ := json.Marshal(jsonFloat(c.f))
		if string(b) != c.want {
			t.Errorf("jsonFloat(%v) = %s, serde_json writes %s", c.f, b, c.want)
		}
	}
}

// TestAddressPrefixDisabled: electrs answers /address-prefix/:prefix,
// when address search is off (its default), 400 "address search disabled"
// (rest.rs, the address-prefix arm), not 404.
func TestAddressPrefixDisabled(t *testing.T) {
	n := newTestNode(t, "")
	if code, body := n.get("/address-prefix/bcrt1q"); code != 400 || body != "address search disabled" {
		t.Fatalf("GET /address-prefix/bcrt1q: %d %q, electrs answers 400 %q", code, body, "address search disabled")
	}
}

// TestLongAddressRefusedUndecoded: no address is longer than 90
// characters, so a longer path (up to the 64 KiB header limit) is refused
// before any decoding: base58-decoding it once per network took about 0.3 s
// of CPU for 60,000 characters. A decode allocates; the refusal does not
// beyond its error.
func TestLongAddressRefusedUndecoded(t *testing.T) {
	long := strings.Repeat("2", 60_000)
	var err error
	allocs := testing.AllocsPerRun(3, func() { _, err = decodeAddress(long, testParams) })
	if err == nil || err.Error() != "Invalid Bitcoin address" {
		t.Fatalf("a 60,000-character address: %v", err)
	}
	if allocs > 2 {
		t.Fatalf("refusing a 60,000-character address made %v allocations: it was decoded", allocs)
	}
}

package indexers

import (
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

func mustHash(t *testing.T, s string) chainhash.Hash {
	t.Helper()
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		t.Fatal(err)
	}
	return *h
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Script hash vectors from ../shared/VECTORS.md §4.1 (electrum-protocol
// protocol-basics.rst and the Electrum client's tests).
func TestScriptHashVectors(t *testing.T) {
	cases := []struct{ script, scripthash string }{
		{"76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac",
			"8b01df4e368ea28f8dc0423bcf7a4923e3a12d307c875e47a0cfbf90b5c39161"},
		{"4104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac",
			"740485f380ff6379d11ef6fe7d7cdd68aea7f8bd0d953d9fdf3531fb7d531833"},
		{"76a914206168f5322583ff37f8e55665a4789ae896353288ac",
			"8071d0292bab0bd456ade29aa8a9739df30f32800e7e2ab1f532896eb280cbb8"},
		{"a914a773db925b09add367dcc253c1f9bbc1d11ec6fd87",
			"d0d086be88e3b2aa403dbedd5300ac399be7341eb8733a8a2bb90ce515852d06"},
		{"00149f9aa3795e57c535d2f7b160ff023804c60fca6e",
			"f04bf26fc16a27abaa2f10540da7a24e369e6ec408f2d901202a7c0cd4a6112d"},
	}
	for _, c := range cases {
		sh := ScriptHashFromScript(mustHex(t, c.script))
		if sh.String() != c.scripthash {
			t.Errorf("script %s: scripthash %s, want %s", c.script, sh, c.scripthash)
		}
		back, err := ParseScriptHash(c.scripthash)
		if err != nil || back != sh {
			t.Errorf("ParseScriptHash(%s) = %v, %v", c.scripthash, back, err)
		}
	}
	// ElectrumX's hashX of the first vector is the first 11 bytes.
	sh := ScriptHashFromScript(mustHex(t, cases[0].script))
	hx := sh.hashX()
	if got := hex.EncodeToString(hx[:]); got != "6191c3b590bfcfa0475e87" {
		t.Errorf("hashX %s", got)
	}
	for _, bad := range []string{"", "zz", "8b01df4e368ea28f8dc0423bcf7a4923e3a12d307c875e47a0cfbf90b5c3916",
		"8b01df4e368ea28f8dc0423bcf7a4923e3a12d307c875e47a0cfbf90b5c3916g"} {
		if _, err := ParseScriptHash(bad); err == nil {
			t.Errorf("ParseScriptHash(%q) accepted", bad)
		}
	}
}

// The status example of electrum-protocol protocol-basics.rst ("Status
// Example"), ../shared/VECTORS.md §4.2.
func TestStatusVector(t *testing.T) {
	entries := []struct {
		txid   string
		height int32
	}{
		{"a6c9c361bd0bc536d6a22648efbf8f9b200e425ef6c3a7a9669dc444c532a347", 2472},
		{"9c42f84b2fcdaff676ba25d9d4941741cc0d1a01cce0c23fdc4c0b2afa38431c", 2473},
		{"770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30", 2473},
		{"80b19848aed792565ab7c5a79b7c2a00fbf985741579396ebe0ab6098e607311", 0},
		{"e02a1dadfa83b996b24175df807b271ea5d02937ef5b35c195fac1e1bdc3198f", 0},
		{"bb4c8ab438c13b89ca80d1d5bee25b0b6b7f55673f4d801998ba97db161d9e85", -1},
	}
	s := NewStatusHasher()
	if s.Sum() != nil {
		t.Fatal("empty history must have a null status")
	}
	for i, e := range entries {
		s.Add(mustHash(t, e.txid), e.height)
		if i == 2 {
			// Resuming from the midstate after the confirmed part gives
			// the same status as hashing straight through.
			m := s.midstate(hashX{}, Tip{}, 0)
			r, ok := m.resume()
			if !ok {
				t.Fatal("resume failed")
			}
			for _, e := range entries[3:] {
				r.Add(mustHash(t, e.txid), e.height)
			}
			if got := hex.EncodeToString(r.Sum()); got != "78e96c6562cafa71c115503b9411fdfdc595a45031e2ab76ff75162fe1b0590d" {
				t.Errorf("resumed status %s", got)
			}
		}
	}
	if got := hex.EncodeToString(s.Sum()); got != "78e96c6562cafa71c115503b9411fdfdc595a45031e2ab76ff75162fe1b0590d" {
		t.Errorf("status %s", got)
	}
	if s.Len() != 6 {
		t.Errorf("Len %d", s.Len())
	}
}

// The byte layout of every row, as documented in schema.go and
// docs/ARCHITECTURE.md.
func TestKeyLayouts(t *testing.T) {
	txid := mustHash(t, "a6c9c361bd0bc536d6a22648efbf8f9b200e425ef6c3a7a9669dc444c532a347")
	internal := "47a332c544c49d66a9a7c3f65e420e209b8fbfef4826a2d636c50bbd61c3c9a6"
	var hx hashX
	copy(hx[:], mustHex(t, "6191c3b590bfcfa0475e87"))

	// Transaction 37 of block 2472 lives in the chunk starting at 32.
	n := txPos(2472, 37)
	if posHeight(n) != 2472 || posIndex(n) != 37 {
		t.Errorf("txPos %x", n)
	}
	k := make([]byte, txKeyLen)
	txKey(k, n)
	want(t, "tx key", k, "457874"+"000009a8"+"0020")

	v := make([]byte, 6*txEntryLen)
	encodeTxEntry(v[5*txEntryLen:], &txRow{txid: txid, offset: 0x51, size: 0xe1})
	want(t, "tx entry", v[5*txEntryLen:], internal+"00000051"+"000000e1")
	r, ok := decodeTxEntry(v, n)
	if !ok || r.txid != txid || r.height != 2472 || r.offset != 0x51 || r.size != 0xe1 {
		t.Errorf("decodeTxEntry %+v", r)
	}
	if _, ok := decodeTxEntry(v[:5*txEntryLen], n); ok {
		t.Error("decodeTxEntry read past its chunk")
	}
	if chunkLen(32, 37) != 5*txEntryLen || chunkLen(0, 37) != txChunk*txEntryLen {
		t.Error("chunkLen")
	}

	k = make([]byte, txidKeyLen)
	txidKey(k, &txid, txPos(7, 1))
	want(t, "txid key", k, "457869"+"47a332c544c49d66"+"00000007"+"0001")

	k = make([]byte, histKeyLen)
	histKey(k, &hx, 0x1000000)
	want(t, "hist key", k, "457868"+"6191c3b590bfcfa0475e87"+"01000000")
	histKey(k, &hx, 0xff0000)
	want(t, "hist key", k, "457868"+"6191c3b590bfcfa0475e87"+"00ff0000")
	var got []uint64
	histPositions(k, []byte{0x00, 0x01, 0xff, 0xfe}, func(n uint64) bool { got = append(got, n); return true })
	if len(got) != 2 || got[0] != txPos(0xff0000, 1) || got[1] != txPos(0xff0000, 0xfffe) {
		t.Errorf("hist positions %x", got)
	}
	got = got[:0]
	histPositions(k, []byte{0x00, 0x01, 0xff}, func(n uint64) bool { got = append(got, n); return true })
	if len(got) != 0 {
		t.Errorf("hist positions of an odd value %x", got)
	}

	k = make([]byte, utxoKeyLen)
	utxoKey(k, &hx, 2472, &txid, 1)
	want(t, "utxo key", k, "457875"+"6191c3b590bfcfa0475e87"+"000009a8"+internal+"00000001")
	v = make([]byte, utxoValLen)
	putUtxoVal(v, 50000000, 0x0102)
	want(t, "utxo value", v, "0000000002faf080"+"0102")
	u, ok := decodeUtxo(k, v)
	if !ok || u.height != 2472 || u.pos != 0x0102 || u.txid != txid || u.vout != 1 || u.value != 50000000 {
		t.Errorf("decodeUtxo %+v", u)
	}

	want(t, "blk key", blkKey(2473), "457862"+"000009a9")
	bv := blkVal(0x1234, &txid)
	want(t, "blk value", bv, "0000000000001234"+internal)
	if c, h, ok := decodeBlkVal(bv); !ok || c != 0x1234 || h != txid {
		t.Error("decodeBlkVal")
	}

	want(t, "tip value", tipVal(&txid, 2473), internal+"a9090000")
	want(t, "version key", versionKey, "457876")
}

func want(t *testing.T, what string, got []byte, wantHex string) {
	t.Helper()
	if h := hex.EncodeToString(got); h != wantHex {
		t.Errorf("%s:\n got %s\nwant %s", what, h, wantHex)
	}
}

package indexers

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/storage"
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

// Script hash vectors (docs/PROTOCOL.md §4.1) from electrum-protocol's
// protocol-basics.rst and the Electrum client's tests.
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
// Example"); docs/PROTOCOL.md §4.2.
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

// The byte layout of every row and every single-entry key, as documented in
// schema.go and docs/ARCHITECTURE.md.
func TestKeyLayouts(t *testing.T) {
	txid := mustHash(t, "a6c9c361bd0bc536d6a22648efbf8f9b200e425ef6c3a7a9669dc444c532a347")
	internal := "47a332c544c49d66a9a7c3f65e420e209b8fbfef4826a2d636c50bbd61c3c9a6"
	var hx hashX
	copy(hx[:], mustHex(t, "6191c3b590bfcfa0475e87"))

	want(t, "row prefix", rowPrefix, "4578")
	for tag, wantHex := range map[byte]string{tagTx: "457874", tagTxid: "457869", tagHist: "457868",
		tagUtxo: "457875", tagBlk: "457862", tagUndo: "457864", tagLoc: "45786c"} {
		want(t, "table prefix", tablePrefix(tag), wantHex)
	}

	// Transaction 37 of block 2472 lives in the chunk starting at 32.
	n := txPos(2472, 37)
	if posHeight(n) != 2472 || posIndex(n) != 37 {
		t.Errorf("txPos %x", n)
	}
	k := make([]byte, txKeyLen)
	txKey(k, n)
	want(t, "tx key", k, "457874"+"000009a8"+"0020")
	if getTxPos(k[pfx:]) != txPos(2472, 32) {
		t.Errorf("getTxPos of the tx key %x", getTxPos(k[pfx:]))
	}

	v := make([]byte, 6*txEntryLen)
	copy(v[5*txEntryLen:], txid[:])
	want(t, "tx entry", v[5*txEntryLen:], internal)
	r, ok := decodeTxEntry(v, n)
	if !ok || r.txid != txid || r.height != 2472 {
		t.Errorf("decodeTxEntry %+v", r)
	}
	if _, ok := decodeTxEntry(v[:5*txEntryLen], n); ok {
		t.Error("decodeTxEntry read past its chunk")
	}
	if chunkLen(32, 37) != 5*txEntryLen || chunkLen(0, 37) != txChunk*txEntryLen {
		t.Error("chunkLen")
	}
	k = make([]byte, txKeyLen)
	locKey(k, n)
	want(t, "place key", k, "45786c"+"000009a8"+"0020")
	v = make([]byte, 6*locEntryLen)
	putLocEntry(v[5*locEntryLen:], 0x51, 0xe1)
	want(t, "place entry", v[5*locEntryLen:], "00000051"+"000000e1")
	if !decodeLocEntry(v, n, &r) || r.offset != 0x51 || r.size != 0xe1 || decodeLocEntry(v[:5*locEntryLen], n, &r) {
		t.Errorf("decodeLocEntry %+v", r)
	}
	if locLen(32, 37) != 5*locEntryLen || locLen(0, 37) != txChunk*locEntryLen {
		t.Error("locLen")
	}

	k = make([]byte, txidKeyLen)
	txidKey(k, &txid, txPos(7, 1))
	want(t, "txid key", k, "457869"+"47a332c544c49d66"+"00000007"+"0001")

	k = make([]byte, histKeyLen)
	histKey(k, &hx, 0x1000000)
	want(t, "hist key", k, "457868"+"6191c3b590bfcfa0475e87"+"01000000")
	want(t, "hist prefix", histPrefix(&hx), "457868"+"6191c3b590bfcfa0475e87")
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
	hv := make([]byte, 4)
	putHistPositions(hv, []histEntry{newHistEntry(&hx, 3), newHistEntry(&hx, 0x1234)})
	want(t, "hist value", hv, "0003"+"1234")

	k = make([]byte, utxoKeyLen)
	utxoKey(k, &hx, 2472, &txid, 1)
	want(t, "utxo key", k, "457875"+"6191c3b590bfcfa0475e87"+"000009a8"+internal+"00000001")
	want(t, "utxo prefix", utxoPrefix(&hx), "457875"+"6191c3b590bfcfa0475e87")
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

	// The undo record of block 2473 and the single-entry keys.
	want(t, "undo key", undoKey(2473), "457864"+"000009a9")
	want(t, "tip key", tipKey, "45787a")
	want(t, "tip value", tipVal(&txid, 2473), internal+"a9090000")
	if h, height, ok := decodeTipVal(tipVal(&txid, -1)); !ok || h != txid || height != -1 {
		t.Error("decodeTipVal of an empty index's tip")
	}
	want(t, "stats key", statsKey, "457873")
	want(t, "stats value", encodeStats(sizeStats{Rows: 0x0102, Bytes: -2}), "0000000000000102"+"fffffffffffffffe")
	want(t, "version key", versionKey, "457876")
	if schemaVersion != 6 {
		t.Errorf("schema version %d: a new version needs a new layout test", schemaVersion)
	}
	for tag, n := range map[byte]int{tagTx: 9, tagLoc: 9, tagTxid: 17, tagHist: 18, tagUtxo: 54, tagBlk: 7, tagUndo: -1} {
		if keyLen(tag) != n {
			t.Errorf("key length of table %c: %d, want %d", tag, keyLen(tag), n)
		}
	}
	if valLen(blkKey(1)) != 40 || valLen(k) != 10 || valLen(undoKey(1)) != 0 {
		t.Error("valLen")
	}
}

func want(t *testing.T, what string, got []byte, wantHex string) {
	t.Helper()
	if h := hex.EncodeToString(got); h != wantHex {
		t.Errorf("%s:\n got %s\nwant %s", what, h, wantHex)
	}
}

// undoTestBlock is block 7 of a chain: a coinbase paying script A and a
// transaction spending output 1 of a transaction of block 5 (paid to B) and
// paying A and an OP_RETURN.
func undoTestBlock(t *testing.T) (*btcutil.Block, []blockchain.SpentTxOut, wire.OutPoint, []byte, []byte) {
	t.Helper()
	a, b := []byte{0x51}, []byte{0x52}
	prev := wire.OutPoint{Hash: chainhash.Hash{0xee, 1}, Index: 1}
	cb := wire.NewMsgTx(1)
	cb.AddTxIn(wire.NewTxIn(&wire.OutPoint{Index: wire.MaxPrevOutIndex}, []byte{0x57, 0x00}, nil))
	cb.AddTxOut(wire.NewTxOut(5000, a))
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&prev, nil, nil))
	tx.AddTxOut(wire.NewTxOut(600, a))
	tx.AddTxOut(wire.NewTxOut(0, []byte{0x6a, 0x01, 0x02}))
	msg := wire.NewMsgBlock(wire.NewBlockHeader(1, &chainhash.Hash{0xaa}, &chainhash.Hash{}, 0, 0))
	msg.AddTransaction(cb)
	msg.AddTransaction(tx)
	block := btcutil.NewBlock(msg)
	block.SetHeight(7)
	stxos := []blockchain.SpentTxOut{{Amount: 1000, PkScript: b, Height: 5}}
	return block, stxos, prev, a, b
}

// replayRecorder records a batch's replay.
type replayRecorder struct{ r *undoRecorder }

func (r replayRecorder) Put(k, v []byte) { _ = r.r.Put(k, v) }
func (r replayRecorder) Delete(k []byte) { _ = r.r.Delete(k) }

// sortedOps returns the writes of an undoRecorder's buffer (without a
// header) as strings, sorted.
func sortedOps(t *testing.T, buf []byte) []string {
	t.Helper()
	var out []string
	for i := 0; i < len(buf); {
		op := buf[i]
		kl, m := binary.Uvarint(buf[i+1:])
		i += 1 + m
		s := fmt.Sprintf("%d %x", op, buf[i:i+int(kl)])
		i += int(kl)
		if op == undoPut {
			vl, m := binary.Uvarint(buf[i:])
			i += m
			s += fmt.Sprintf(" %x", buf[i:i+int(vl)])
			i += int(vl)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// undoOp is one write of an undo record.
type undoOp struct {
	del        bool
	key, value []byte
	valueLen   int // a delete's: the value the row had
}

// TestUndoRecordLayout pins an undo record byte for byte: rows(8) bytes(8),
// the size change of the undo, then applyDisconnect's writes but the deletes
// of the block's own rows, op(1) keylen(uvarint) key and for a put
// vallen(uvarint) value, then undoOwn; a restored unspent row holds position
// 0, looked up again when the record is applied, and the block's own rows
// are read from the store. Applied, it writes what applyDisconnect writes.
func TestUndoRecordLayout(t *testing.T) {
	r := &undoRecorder{}
	_ = r.Put([]byte{0xaa}, []byte{0xbb, 0xcc})
	_ = r.Delete([]byte{0xdd})
	_ = r.Put(make([]byte, 200), nil)
	want(t, "recorder", r.buf[:9], "01"+"01"+"aa"+"02"+"bbcc"+"02"+"01"+"dd")
	want(t, "long key", r.buf[9:12], "01"+"c801")
	want(t, "empty value", r.buf[len(r.buf)-1:], "00")

	block, stxos, prev, a, b := undoTestBlock(t)
	p := planBlock(block, stxos, false)
	txs := block.Transactions()
	cbid, txid := *txs[0].Hash(), *txs[1].Hash()
	hxA, hxB := ScriptHashFromScript(a).hashX(), ScriptHashFromScript(b).hashX()

	key := func(n int, f func([]byte)) []byte { k := make([]byte, n); f(k); return k }
	uval := func(v int64, pos uint32) []byte { b := make([]byte, utxoValLen); putUtxoVal(b, v, pos); return b }
	histA := key(histKeyLen, func(k []byte) { histKey(k, &hxA, 7) })
	histB := key(histKeyLen, func(k []byte) { histKey(k, &hxB, 7) })
	hist := []undoOp{{del: true, key: histA, valueLen: 4}, {del: true, key: histB, valueLen: 2}}
	if bytes.Compare(histB, histA) < 0 {
		hist[0], hist[1] = hist[1], hist[0]
	}
	ops := []undoOp{
		// The spent output comes back.
		{key: key(utxoKeyLen, func(k []byte) { utxoKey(k, &hxB, 5, &prev.Hash, 1) }), value: uval(1000, 0)},
		hist[0], hist[1],
		// The transactions' outputs and txid rows go, last first.
		{del: true, key: key(utxoKeyLen, func(k []byte) { utxoKey(k, &hxA, 7, &txid, 0) }), valueLen: utxoValLen},
		{del: true, key: key(txidKeyLen, func(k []byte) { txidKey(k, &txid, txPos(7, 1)) })},
		{del: true, key: key(utxoKeyLen, func(k []byte) { utxoKey(k, &hxA, 7, &cbid, 0) }), valueLen: utxoValLen},
		{del: true, key: key(txidKeyLen, func(k []byte) { txidKey(k, &cbid, txPos(7, 0)) })},
		{del: true, key: key(txKeyLen, func(k []byte) { txKey(k, txPos(7, 0)) }), valueLen: 2 * txEntryLen},
		{del: true, key: key(txKeyLen, func(k []byte) { locKey(k, txPos(7, 0)) }), valueLen: 2 * locEntryLen},
		{del: true, key: blkKey(7), valueLen: blkValLen},
	}
	var rows, size int64
	var body []byte
	for _, op := range ops {
		if op.del {
			rows--
			size -= int64(len(op.key) + op.valueLen)
			if op.key[2] == tagHist {
				body = append(append(append(body, 2), byte(len(op.key))), op.key...)
			}
			continue
		}
		rows++
		size += int64(len(op.key) + len(op.value))
		body = append(append(append(append(append(body, 1), byte(len(op.key))), op.key...), byte(len(op.value))), op.value...)
	}
	body = append(body, undoOwn)
	rec := undoRecord(p)
	head := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(rows)), uint64(size))
	want(t, "undo record", rec, hex.EncodeToString(append(head, body...)))
	if rows != -8 {
		t.Fatalf("the block's undo removes %d rows, want -8", rows)
	}

	// Applied, the record makes the writes of applyDisconnect, the spent
	// output's position read from the txid rows of the store.
	store, err := leveldb.Open(storage.NewMemStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	view := func() *snapView {
		v, err := newSnapView(store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.release)
		return v
	}
	batch := new(leveldb.Batch)
	if _, err := applyUndoRecord(batch, rec, 7, view()); err == nil {
		t.Fatal("an undo record restoring an output of a transaction the store does not hold was applied")
	}
	// The spent transaction is the fourth of block 5; another of the same
	// txid prefix sits at block 6.
	other := prev.Hash
	other[31] = 0xff
	if err := store.Put(key(txidKeyLen, func(k []byte) { txidKey(k, &prev.Hash, txPos(5, 3)) }), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(key(txidKeyLen, func(k []byte) { txidKey(k, &other, txPos(6, 0)) }), nil, nil); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4*txEntryLen)
	copy(chunk[3*txEntryLen:], prev.Hash[:])
	if err := store.Put(key(txKeyLen, func(k []byte) { txKey(k, txPos(5, 0)) }), chunk, nil); err != nil {
		t.Fatal(err)
	}
	chunk = bytes.Clone(other[:])
	if err := store.Put(key(txKeyLen, func(k []byte) { txKey(k, txPos(6, 0)) }), chunk, nil); err != nil {
		t.Fatal(err)
	}
	// The block's own rows, which the record does not list.
	own := new(leveldb.Batch)
	applyConnect(batchWriter{own}, planBlock(block, stxos, false), 0)
	if err := store.Write(own, nil); err != nil {
		t.Fatal(err)
	}
	batch.Reset()
	d, err := applyUndoRecord(batch, rec, 7, view())
	if err != nil {
		t.Fatal(err)
	}
	if d != (sizeStats{Rows: rows, Bytes: size}) {
		t.Fatalf("applied record changes the size by %+v, want %d rows %d bytes", d, rows, size)
	}
	direct := &undoRecorder{}
	q := planBlock(block, stxos, false)
	if err := fillSpendPositions(view(), q); err != nil {
		t.Fatal(err)
	}
	if q.txs[1].spends[0].pos != 3 {
		t.Fatalf("spent transaction at position %d, want 3", q.txs[1].spends[0].pos)
	}
	applyDisconnect(direct, q)
	applied := &undoRecorder{}
	if err := batch.Replay(replayRecorder{applied}); err != nil {
		t.Fatal(err)
	}
	if a, b := sortedOps(t, applied.buf), sortedOps(t, direct.buf); !slices.Equal(a, b) {
		t.Fatalf("applied record writes\n%q\napplyDisconnect writes\n%q", a, b)
	}
	// A record of an earlier version lists every write, the block's own
	// rows too; it is applied as it is.
	old := &undoRecorder{buf: bytes.Clone(rec[:16])}
	applyDisconnect(old, planBlock(block, stxos, false))
	batch.Reset()
	if _, err := applyUndoRecord(batch, old.buf, 7, view()); err != nil {
		t.Fatal(err)
	}
	oldApplied := &undoRecorder{}
	if err := batch.Replay(replayRecorder{oldApplied}); err != nil {
		t.Fatal(err)
	}
	if a, b := sortedOps(t, oldApplied.buf), sortedOps(t, direct.buf); !slices.Equal(a, b) {
		t.Fatalf("a full record applies\n%q\napplyDisconnect writes\n%q", a, b)
	}

	// Malformed records fail.
	for name, bad := range map[string][]byte{
		"short header":  rec[:15],
		"truncated key": rec[:len(rec)-3],
		"unknown op":    append(bytes.Clone(rec[:16]), 9, 1, 0xaa),
		"ops after own": append(bytes.Clone(rec[:16]), undoOwn, 2, 1, 0xaa),
		"long value":    append(bytes.Clone(rec[:16]), 1, 1, 0xaa, 9, 0xbb),
		"missing value": append(bytes.Clone(rec[:16]), 1, 1, 0xaa),
		"varint":        append(bytes.Clone(rec[:16]), 2, 0x80),
	} {
		if _, err := applyUndoRecord(new(leveldb.Batch), bad, 7, view()); err == nil {
			t.Errorf("%s: malformed undo record applied", name)
		}
	}
}

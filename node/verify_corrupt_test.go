package node

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// copyDirTree copies a directory tree (the node is stopped).
func copyDirTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// OPERATIONS.md, "Verifying the index": verifyelectrumindex "recomputes
// the index from the chain on the running node, in the background, and
// compares every row: ... verifyelectrumindex "status" for the progress and
// the result (the first differences by table, script hash and height)".
// A clean index says so; on a copy of the datadir whose index store got
// wrong rows while the node was stopped (an unspent amount changed, a
// history row for a script that never appeared, a history row whose
// positions are out of order), each is reported with its table, script
// hash and height, and the node keeps serving.
func TestVerifyCorruptedStore(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	n := startNode(t, cfg)
	generate(t, n, 101)
	if _, err := n.ProcessTx(spendCoinbase(t, n, 1, 10_000)); err != nil {
		t.Fatal(err)
	}
	generate(t, n, 1)
	res := verifyOverRPC(t, n)
	if !res.OK || len(res.Differences) != 0 || res.MismatchedPartitions != 0 || res.Height != 102 {
		t.Fatalf("clean index: %+v", res)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	// A temporary copy of the datadir, corrupted.
	copyDir := filepath.Join(t.TempDir(), "copy")
	copyDirTree(t, dir, copyDir)
	cfg2 := testConfig(t, copyDir, true)
	store, err := leveldb.OpenFile(ElectrumIndexPath(filepath.Join(copyDir, "data", "regtest")), nil)
	if err != nil {
		t.Fatal(err)
	}
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript)
	hx := sh[:11]

	// (1) the amount of one of the mining address's unspent rows, at
	// height 50.
	var utxoKey []byte
	it := store.NewIterator(util.BytesPrefix(append([]byte("Exu"), hx...)), nil)
	for it.Next() {
		k := it.Key()
		if binary.BigEndian.Uint32(k[3+11:]) == 50 {
			utxoKey = bytes.Clone(k)
			v := bytes.Clone(it.Value())
			binary.BigEndian.PutUint64(v, 1) // 1 satoshi instead of 50 BTC
			if err := store.Put(utxoKey, v, nil); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	it.Release()
	if utxoKey == nil {
		t.Fatal("no unspent row at height 50")
	}
	// (2) an extra history row of a script that never appeared, at
	// height 60, position 0 (the coinbase).
	var ghost indexers.ScriptHash
	for i := range ghost {
		ghost[i] = 0x5a
	}
	ghostKey := append(append([]byte("Exh"), ghost[:11]...), 0, 0, 0, 60)
	if err := store.Put(ghostKey, []byte{0, 0}, nil); err != nil {
		t.Fatal(err)
	}
	// (3) the mining address's history row of block 102 rewritten with
	// its positions out of order (the coinbase and the spend: 0, 1 ->
	// 1, 0).
	histKey := append(append([]byte("Exh"), hx...), 0, 0, 0, 102)
	old, err := store.Get(histKey, nil)
	if err != nil || !bytes.Equal(old, []byte{0, 0, 0, 1}) {
		t.Fatalf("history row of block 102: %x %v", old, err)
	}
	if err := store.Put(histKey, []byte{0, 1, 0, 0}, nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	n2 := startNode(t, cfg2)
	res = verifyOverRPC(t, n2)
	out, _ := json.MarshalIndent(res, "", " ")
	if res.OK {
		t.Fatalf("corrupted index verified OK: %s", out)
	}
	find := func(table, kind string, key []byte) *rpcext.VerifyIndexDifference {
		for i := range res.Differences {
			d := &res.Differences[i]
			if d.Table == table && d.Kind == kind && d.Key == hex.EncodeToString(key) {
				return d
			}
		}
		return nil
	}
	wantHX := hex.EncodeToString(hx)
	if d := find("unspent", "value", utxoKey); d == nil || d.Height != 50 || d.HashX != wantHX {
		t.Errorf("changed unspent amount at height 50: %+v", d)
	}
	if d := find("history", "extra", ghostKey); d == nil || d.Height != 60 || d.HashX != hex.EncodeToString(ghost[:11]) {
		t.Errorf("extra history row at height 60: %+v", d)
	}
	// The one stored row of block 102 whose value is out of shape: one
	// difference, naming its table, script hash and height. It is stored,
	// so it is not "missing".
	var rowDiffs []rpcext.VerifyIndexDifference
	for _, d := range res.Differences {
		if d.Key == hex.EncodeToString(histKey) {
			rowDiffs = append(rowDiffs, d)
		}
	}
	if len(rowDiffs) != 1 || rowDiffs[0].Height != 102 || rowDiffs[0].HashX != wantHX || rowDiffs[0].Kind == "missing" {
		t.Errorf("history row of block 102 stored with its positions out of order (key %x): reported as %+v; "+
			"want one difference with table history, script hash %s, height 102", histKey, rowDiffs, wantHX)
	}
	if t.Failed() {
		t.Logf("verification result: %s", out)
	}

	// The node keeps serving, the corrupted script included.
	c := dialElectrum(t, n2)
	c.call("server.version", "after", "1.4")
	c.call("blockchain.scripthash.get_balance", sh.String())
	if h := c.call("blockchain.headers.subscribe"); h == nil {
		t.Fatal("no header after the verification")
	}
	if _, err := rawRPC(t, n2, "user", "pass", "getscripthashinfo", `"`+sh.String()+`"`); err != nil {
		t.Logf("getscripthashinfo on the corrupted script: %v", err)
	}
}

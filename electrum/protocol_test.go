package electrum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// p2wpkh returns a P2WPKH-shaped script with a recognisable key hash.
func p2wpkh(b byte) []byte {
	s := []byte{0x00, 0x14}
	return append(s, bytes.Repeat([]byte{b}, 20)...)
}

// spend builds a transaction spending outpoints into outputs.
func spend(ins []wire.OutPoint, outs ...*wire.TxOut) *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	for _, op := range ins {
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: op, Sequence: wire.MaxTxInSequenceNum - 2, SignatureScript: []byte{0x51}})
	}
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	return tx
}

// txHex serializes tx to hex.
func txHex(tx *wire.MsgTx) string {
	var buf bytes.Buffer
	tx.Serialize(&buf)
	return hex.EncodeToString(buf.Bytes())
}

// fixture is a fake chain with confirmed and mempool transactions:
// blocks 1-3 pay A; block 4 holds tx1 (A -> B + change A); the mempool holds
// tx2 (B -> C + change B, height 0) and tx3 (spends tx2's change: height -1).
type fixture struct {
	f             *fakeBackend
	s             *Server
	addr          string
	a, b, c       []byte
	shA, shB, shC indexers.ScriptHash
	tx1, tx2, tx3 *wire.MsgTx
	cb            []*wire.MsgTx
}

// newFixture builds the fixture and starts a server on it.
func newFixture(t testing.TB, mod func(*Config)) *fixture {
	t.Helper()
	fx := newFixtureChain(t)
	fx.s, fx.addr = startServer(t, fx.f, mod)
	return fx
}

// newFixtureChain is newFixture without the server.
func newFixtureChain(t testing.TB) *fixture {
	t.Helper()
	fx := &fixture{f: newFakeBackend(), a: p2wpkh(0xaa), b: p2wpkh(0xbb), c: p2wpkh(0xcc)}
	fx.shA, fx.shB, fx.shC = indexers.ScriptHashFromScript(fx.a), indexers.ScriptHashFromScript(fx.b), indexers.ScriptHashFromScript(fx.c)
	for i := 0; i < 3; i++ {
		fx.f.mine(fx.a)
		fx.cb = append(fx.cb, fx.f.blocks[len(fx.f.blocks)-1].Transactions[0])
	}
	fx.tx1 = spend([]wire.OutPoint{{Hash: fx.cb[0].TxHash(), Index: 0}},
		wire.NewTxOut(10_0000_0000, fx.b), wire.NewTxOut(39_9999_0000, fx.a))
	if err := fx.f.Broadcast(fx.tx1); err != nil {
		t.Fatal(err)
	}
	fx.f.mine(fx.a, fx.tx1)
	fx.tx2 = spend([]wire.OutPoint{{Hash: fx.tx1.TxHash(), Index: 0}},
		wire.NewTxOut(5_0000_0000, fx.c), wire.NewTxOut(4_9999_0000, fx.b))
	fx.tx3 = spend([]wire.OutPoint{{Hash: fx.tx2.TxHash(), Index: 1}},
		wire.NewTxOut(4_9998_0000, fx.c))
	for _, tx := range []*wire.MsgTx{fx.tx2, fx.tx3} {
		if err := fx.f.Broadcast(tx); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

// client dials and negotiates version.
func (fx *fixture) client(t testing.TB, version any) *testClient {
	c := dial(t, fx.addr)
	c.negotiate(version)
	return c
}

// TestVersionNegotiation pins server.version negotiation (docs/PROTOCOL.md §3): exact versions, ranges, absent and extra arguments, no common version (error and disconnect), a second call, and a non-version first message.
func TestVersionNegotiation(t *testing.T) {
	fx := newFixture(t, nil)
	cases := []struct {
		name    string
		params  string
		want    string
		errCode int
	}{
		{"exact 1.4 (Electrum 4.3.4)", `["electrum/4.3.4","1.4"]`, "1.4", 0},
		{"range to max", `["x",["1.4","1.6"]]`, "1.6", 0},
		{"range above max", `["x",["1.4","1.9"]]`, "1.6", 0},
		{"range below max", `["x",["1.2","1.4.2"]]`, "1.4.2", 0},
		{"single 1.4.2", `["x","1.4.2"]`, "1.4.2", 0},
		{"absent version is 1.4", `["x"]`, "1.4", 0},
		{"no params", `[]`, "1.4", 0},
		{"named params", `{"client_name":"x","protocol_version":"1.6"}`, "1.6", 0},
		{"1.6 extra args ignored", `["electrum/4.6.2",["1.4","1.6"],"trailing_garbage1",9999.9]`, "1.6", 0},
		{"extra named args ignored", `{"client_name":"electrum/4.6.2","protocol_version":["1.4","1.6"],"future_extension":9999.9}`, "1.6", 0},
		{"too old", `["x","1.3"]`, "", codeBadRequest},
		{"too new", `["x",["1.7","1.8"]]`, "", codeBadRequest},
		{"garbage", `["x","one.four"]`, "", codeBadRequest},
		{"inverted range", `["x",["1.6","1.4"]]`, "", codeBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, fx.addr)
			r := c.await(c.sendExpect("1", `{"jsonrpc":"2.0","id":1,"method":"server.version","params":`+tc.params+`}`))
			if tc.errCode != 0 {
				if r.Error == nil || r.Error.Code != tc.errCode {
					t.Fatalf("want error %d, got %s %v", tc.errCode, r.Result, r.Error)
				}
				if !c.closedByServer() {
					t.Fatal("no common version must close the connection")
				}
				return
			}
			var res []string
			if r.Error != nil || json.Unmarshal(r.Result, &res) != nil || len(res) != 2 {
				t.Fatalf("bad answer %s %v", r.Result, r.Error)
			}
			if res[1] != tc.want || res[0] != DefaultServerVersion {
				t.Fatalf("negotiated %v, want %s", res, tc.want)
			}
			// A second server.version is an error; the session goes on.
			if _, rerr := c.call("server.version", "x", "1.4"); rerr == nil || rerr.Code != codeBadRequest {
				t.Fatalf("second server.version: %v", rerr)
			}
			if _, rerr := c.call("server.ping"); rerr != nil {
				t.Fatalf("ping after second version: %v", rerr)
			}
		})
	}
	t.Run("other method first", func(t *testing.T) {
		c := dial(t, fx.addr)
		_, rerr := c.call("server.ping")
		if rerr == nil || rerr.Code != codeBadRequest || !strings.Contains(rerr.Message, "server.version") {
			t.Fatalf("got %v", rerr)
		}
		if !c.closedByServer() {
			t.Fatal("connection left open")
		}
	})
	t.Run("batch opening with version", func(t *testing.T) {
		c := dial(t, fx.addr)
		c.send(`[{"jsonrpc":"2.0","id":1,"method":"server.version","params":["x","1.6"]},{"jsonrpc":"2.0","id":2,"method":"server.ping"}]`)
		rs := <-c.batches
		if len(rs) != 2 || rs[0].Error != nil || rs[1].Error != nil || string(rs[1].Result) != "null" {
			t.Fatalf("batch answer %+v", rs)
		}
	})
}

// TestVersionGatesMethods checks that the negotiated version decides which methods and parameters exist.
func TestVersionGatesMethods(t *testing.T) {
	fx := newFixture(t, nil)
	sh := fx.shA.String()
	type probe struct {
		method string
		params []any
	}
	cases := []struct {
		version string
		present []probe
		absent  []probe
	}{
		{"1.4",
			[]probe{{"blockchain.relayfee", nil}, {"blockchain.estimatefee", []any{2}}},
			[]probe{{"blockchain.scripthash.unsubscribe", []any{sh}}, {"blockchain.transaction.broadcast_package", []any{[]string{"00"}}}, {"mempool.get_info", nil}}},
		{"1.4.2",
			[]probe{{"blockchain.relayfee", nil}, {"blockchain.scripthash.unsubscribe", []any{sh}}},
			[]probe{{"mempool.get_info", nil}}},
		{"1.6",
			[]probe{{"blockchain.scripthash.unsubscribe", []any{sh}}, {"mempool.get_info", nil}, {"blockchain.estimatefee", []any{2, "ECONOMICAL"}}},
			[]probe{{"blockchain.relayfee", nil}, {"blockchain.foo", nil}}},
	}
	for _, tc := range cases {
		c := fx.client(t, tc.version)
		for _, p := range tc.present {
			if _, rerr := c.call(p.method, p.params...); rerr != nil {
				t.Errorf("%s at %s: %v", p.method, tc.version, rerr)
			}
		}
		for _, p := range tc.absent {
			if _, rerr := c.call(p.method, p.params...); rerr == nil || rerr.Code != codeMethodNotFound {
				t.Errorf("%s at %s: want -32601, got %v", p.method, tc.version, rerr)
			}
		}
	}
	// estimatefee's mode only exists from 1.6 on.
	c := fx.client(t, "1.4")
	if _, rerr := c.call("blockchain.estimatefee", 2, "ECONOMICAL"); rerr == nil || rerr.Code != codeInvalidParams {
		t.Errorf("estimatefee mode at 1.4: %v", rerr)
	}
	c = fx.client(t, "1.6")
	if _, rerr := c.call("blockchain.estimatefee", 2, "FAST"); rerr == nil || rerr.Code != codeBadRequest {
		t.Errorf("estimatefee unknown mode: %v", rerr)
	}
}

// TestScriptHashMethods checks balances, histories, mempool lists, unspent lists and statuses with confirmed and unconfirmed transactions.
func TestScriptHashMethods(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, []string{"1.4", "1.6"})

	var bal map[string]int64
	c.must(&bal, "blockchain.scripthash.get_balance", fx.shB.String())
	if bal["confirmed"] != 10_0000_0000 || bal["unconfirmed"] != 4_9999_0000-10_0000_0000-4_9999_0000 {
		t.Fatalf("B balance %v", bal)
	}
	c.must(&bal, "blockchain.scripthash.get_balance", fx.shC.String())
	if bal["confirmed"] != 0 || bal["unconfirmed"] != 5_0000_0000+4_9998_0000 {
		t.Fatalf("C balance %v", bal)
	}

	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", fx.shB.String())
	if len(hist) != 3 || hist[0].TxHash != fx.tx1.TxHash().String() || hist[0].Height != 4 || hist[0].Fee != nil {
		t.Fatalf("B history %+v", hist)
	}
	if hist[1].TxHash != fx.tx2.TxHash().String() || hist[1].Height != 0 || *hist[1].Fee != 10000 ||
		hist[2].TxHash != fx.tx3.TxHash().String() || hist[2].Height != -1 || *hist[2].Fee != 10000 {
		t.Fatalf("B mempool history %+v", hist[1:])
	}

	var mem []historyItem
	c.must(&mem, "blockchain.scripthash.get_mempool", fx.shC.String())
	if len(mem) != 2 || mem[0].Height != 0 || mem[1].Height != -1 {
		t.Fatalf("C mempool %+v", mem)
	}

	var utxos []unspentItem
	c.must(&utxos, "blockchain.scripthash.listunspent", fx.shB.String())
	// tx1:0 is spent in the mempool; tx2:1 is spent by tx3: nothing left.
	if len(utxos) != 0 {
		t.Fatalf("B unspent %+v", utxos)
	}
	c.must(&utxos, "blockchain.scripthash.listunspent", fx.shC.String())
	if len(utxos) != 2 || utxos[0].Height != 0 || utxos[1].Height != 0 {
		t.Fatalf("C unspent %+v", utxos)
	}
	c.must(&utxos, "blockchain.scripthash.listunspent", fx.shA.String())
	if len(utxos) != 4 { // coinbases 2, 3, 4 and tx1's change
		t.Fatalf("A unspent %+v", utxos)
	}

	// The status equals the hash of the history the client sees.
	var status *string
	c.must(&status, "blockchain.scripthash.subscribe", fx.shB.String())
	d := indexers.NewStatusHasher()
	for _, h := range hist {
		d.Add(mustHash(t, h.TxHash), h.Height)
	}
	if status == nil || *status != *statusHex(d.Sum()) {
		t.Fatalf("status %v does not match history", status)
	}
	// Unused script: null status, empty lists.
	unused := indexers.ScriptHashFromScript([]byte{0x6a}).String()
	c.must(&status, "blockchain.scripthash.subscribe", unused)
	if status != nil {
		t.Fatalf("unused status %v", *status)
	}
	var ok bool
	c.must(&ok, "blockchain.scripthash.unsubscribe", unused)
	if !ok {
		t.Fatal("unsubscribe of a subscription returned false")
	}
	c.must(&ok, "blockchain.scripthash.unsubscribe", unused)
	if ok {
		t.Fatal("second unsubscribe returned true")
	}
}

// TestHeaderMethods checks block.header and block.headers (hex before 1.6, a list from 1.6), cp_height proofs and headers.subscribe.
func TestHeaderMethods(t *testing.T) {
	fx := newFixture(t, nil)
	for _, v := range []string{"1.4", "1.6"} {
		c := fx.client(t, v)
		_, tipH := fx.f.tip()
		var hdr string
		c.must(&hdr, "blockchain.block.header", 2)
		want, _ := fx.f.BlockHeader(2)
		if x, _ := headerHex(&want); hdr != x {
			t.Fatalf("header 2 = %s", hdr)
		}
		if _, rerr := c.call("blockchain.block.header", tipH+1); rerr == nil || rerr.Code != codeBadRequest {
			t.Fatalf("header past tip: %v", rerr)
		}
		var proof proofResult
		c.must(&proof, "blockchain.block.header", 1, 3)
		raw, _ := hex.DecodeString(proof.Header)
		leaf := chainhash.DoubleHashH(raw)
		var branch []chainhash.Hash
		for _, b := range proof.Branch {
			branch = append(branch, mustHash(t, b))
		}
		var hashes []chainhash.Hash
		for h := int32(0); h <= 3; h++ {
			bh, _ := fx.f.BlockHash(h)
			hashes = append(hashes, bh)
		}
		if got := rootFromBranch(leaf, branch, 1); got.String() != proof.Root || merkleRoot(hashes).String() != proof.Root {
			t.Fatalf("header proof does not verify")
		}
		if _, rerr := c.call("blockchain.block.header", 3, 2); rerr == nil || rerr.Code != codeBadRequest {
			t.Fatalf("cp_height below height: %v", rerr)
		}

		var hs map[string]json.RawMessage
		c.must(&hs, "blockchain.block.headers", 1, 10)
		if string(hs["count"]) != fmt.Sprint(tipH) || string(hs["max"]) != "2016" {
			t.Fatalf("headers %s", hs)
		}
		if v == "1.4" {
			var x string
			json.Unmarshal(hs["hex"], &x)
			if len(x) != 160*int(tipH) || hs["headers"] != nil {
				t.Fatalf("1.4 headers must be one hex string")
			}
		} else {
			var l []string
			json.Unmarshal(hs["headers"], &l)
			if len(l) != int(tipH) || hs["hex"] != nil {
				t.Fatalf("1.6 headers must be a list")
			}
		}
		c.must(&hs, "blockchain.block.headers", tipH+5, 3)
		if string(hs["count"]) != "0" {
			t.Fatalf("headers past tip: %s", hs)
		}
		c.must(&hs, "blockchain.block.headers", 0, 2, 3)
		if hs["root"] == nil || hs["branch"] == nil {
			t.Fatalf("headers with cp_height lack a proof: %s", hs)
		}

		var sub headerResult
		c.must(&sub, "blockchain.headers.subscribe")
		if sub.Height != tipH {
			t.Fatalf("headers.subscribe %+v", sub)
		}
	}
}

// TestBlockHeadersAnswerBytes checks that block.headers, written without
// encoding/json, answers byte for byte what encoding/json writes for the
// same result: a map of count, max, and hex (before 1.6) or headers (from
// 1.6), with branch and root for a cp_height.
func TestBlockHeadersAnswerBytes(t *testing.T) {
	fx := newFixture(t, nil)
	_, tipH := fx.f.tip()
	tip := int64(tipH)
	for _, v := range []string{"1.4", "1.6"} {
		c := fx.client(t, v)
		for _, q := range [][3]int64{{0, 1, 0}, {1, 10, 0}, {0, tip + 1, 0}, {2, 3, 0}, {tip, 5, 0},
			{tip + 5, 3, 0}, {0, 0, 0}, {0, 2, 3}, {1, 3, tip}, {0, 1, 1}, {tip, 1, tip}} {
			start, count, cp := q[0], q[1], q[2]
			args := []any{start, count}
			if cp > 0 {
				args = append(args, cp)
			}
			got, rerr := c.call("blockchain.block.headers", args...)
			if rerr != nil {
				t.Fatalf("%s headers %v: %v", v, q, rerr)
			}
			n := min(count, max(tip-start+1, 0))
			var hdrs []string
			for h := start; h < start+n; h++ {
				x, err := fx.s.headerAt(int32(h))
				if err != nil {
					t.Fatal(err)
				}
				hdrs = append(hdrs, x)
			}
			res := map[string]any{"count": n, "max": DefaultHeadersMax}
			if v == "1.6" {
				res["headers"] = append([]string{}, hdrs...)
			} else {
				res["hex"] = strings.Join(hdrs, "")
			}
			if n > 0 && cp > 0 {
				leaf, err := fx.s.backend.BlockHash(int32(start + n - 1))
				if err != nil {
					t.Fatal(err)
				}
				branch, root, err := fx.s.headerProof(int64(start+n-1), int64(cp), tipH, leaf)
				if err != nil {
					t.Fatal(err)
				}
				res["branch"], res["root"] = branch, root
			}
			want, _ := json.Marshal(res)
			if string(got) != string(want) {
				t.Fatalf("%s headers %v:\n got %s\nwant %s", v, q, got, want)
			}
		}
	}
}

// TestTransactionMethods checks transaction.get (raw and verbose), get_merkle, id_from_pos, broadcast and broadcast_package.
func TestTransactionMethods(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.6")
	var raw string
	c.must(&raw, "blockchain.transaction.get", fx.tx1.TxHash().String())
	if raw != txHex(fx.tx1) {
		t.Fatal("confirmed tx hex differs")
	}
	c.must(&raw, "blockchain.transaction.get", fx.tx3.TxHash().String())
	if raw != txHex(fx.tx3) {
		t.Fatal("mempool tx hex differs")
	}
	var v map[string]any
	c.must(&v, "blockchain.transaction.get", fx.tx1.TxHash().String(), true)
	for _, k := range []string{"hex", "txid", "hash", "size", "vsize", "weight", "version", "locktime", "vin", "vout", "blockhash", "confirmations", "time", "blocktime"} {
		if _, ok := v[k]; !ok {
			t.Errorf("verbose tx lacks %q", k)
		}
	}
	if v["txid"] != fx.tx1.TxHash().String() || v["confirmations"].(float64) != 1 {
		t.Fatalf("verbose tx %v", v)
	}
	if _, rerr := c.call("blockchain.transaction.get", strings.Repeat("00", 32)); rerr == nil || rerr.Code != codeDaemonError {
		t.Fatalf("unknown tx: %v", rerr)
	}

	var m merkleResult
	c.must(&m, "blockchain.transaction.get_merkle", fx.tx1.TxHash().String(), 4)
	hdr, _ := fx.f.BlockHeader(4)
	var branch []chainhash.Hash
	for _, b := range m.Merkle {
		branch = append(branch, mustHash(t, b))
	}
	if m.Pos != 1 || m.BlockHeight != 4 || rootFromBranch(fx.tx1.TxHash(), branch, m.Pos) != hdr.MerkleRoot {
		t.Fatalf("merkle proof does not verify: %+v", m)
	}
	if _, rerr := c.call("blockchain.transaction.get_merkle", fx.tx1.TxHash().String(), 3); rerr == nil || rerr.Code != codeBadRequest {
		t.Fatalf("wrong height: %v", rerr)
	}

	var id string
	c.must(&id, "blockchain.transaction.id_from_pos", 4, 1)
	if id != fx.tx1.TxHash().String() {
		t.Fatalf("id_from_pos = %s", id)
	}
	var idm map[string]any
	c.must(&idm, "blockchain.transaction.id_from_pos", 4, 1, true)
	if idm["tx_hash"] != id || len(idm["merkle"].([]any)) != len(m.Merkle) {
		t.Fatalf("id_from_pos merkle %v", idm)
	}
	if _, rerr := c.call("blockchain.transaction.id_from_pos", 4, 2); rerr == nil || rerr.Code != codeBadRequest {
		t.Fatalf("position past the block: %v", rerr)
	}

	// Broadcast: accepted, then rejected as a double spend.
	tx4 := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(49_0000_0000, fx.c))
	c.must(&id, "blockchain.transaction.broadcast", txHex(tx4))
	if id != tx4.TxHash().String() {
		t.Fatalf("broadcast txid %s", id)
	}
	if _, rerr := c.call("blockchain.transaction.broadcast", txHex(tx4)); rerr == nil || rerr.Code != codeBadRequest || !strings.Contains(rerr.Message, "rejected by network rules") {
		t.Fatalf("double broadcast: %v", rerr)
	}
	if _, rerr := c.call("blockchain.transaction.broadcast", "zz"); rerr == nil || rerr.Code != codeBadRequest {
		t.Fatalf("bad hex: %v", rerr)
	}

	// Package: parent then child, accepted in order.
	parent := spend([]wire.OutPoint{{Hash: fx.cb[2].TxHash(), Index: 0}}, wire.NewTxOut(49_0000_0000, fx.b))
	child := spend([]wire.OutPoint{{Hash: parent.TxHash(), Index: 0}}, wire.NewTxOut(48_0000_0000, fx.c))
	var pr map[string]any
	if _, rerr := c.call("blockchain.transaction.broadcast_package", []string{txHex(child), txHex(parent)}); rerr == nil {
		t.Fatal("unsorted package accepted")
	}
	c.must(&pr, "blockchain.transaction.broadcast_package", []string{txHex(parent), txHex(child)})
	if pr["success"] != true {
		t.Fatalf("package %v", pr)
	}
	// verbose: submitpackage's result as it is.
	var vr map[string]any
	c.must(&vr, "blockchain.transaction.broadcast_package", []string{txHex(parent), txHex(child)}, true)
	results, _ := vr["tx-results"].(map[string]any)
	if vr["package_msg"] != "transaction failed" || len(results) != 2 || vr["success"] != nil {
		t.Fatalf("repeated package %v", vr)
	}
	for _, r := range results {
		if r.(map[string]any)["error"] == nil {
			t.Fatalf("repeated package %v", vr)
		}
	}
}

// TestBroadcastPackageTopology: a package is one transaction or a child
// with its parents, none of which spends another, as Bitcoin Core's
// submitpackage takes it; any other shape is refused whole, with
// submitpackage's words, and nothing of it reaches the mempool.
func TestBroadcastPackageTopology(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.6")
	pooled := func() int {
		fx.f.mu.RLock()
		defer fx.f.mu.RUnlock()
		return len(fx.f.mempool)
	}
	before := pooled()
	out := func(i int) wire.OutPoint { return wire.OutPoint{Hash: fx.cb[i].TxHash(), Index: 0} }
	a := spend([]wire.OutPoint{out(1)}, wire.NewTxOut(49_0000_0000, fx.b))
	b := spend([]wire.OutPoint{out(2)}, wire.NewTxOut(49_0000_0000, fx.c))
	aChild := spend([]wire.OutPoint{{Hash: a.TxHash(), Index: 0}}, wire.NewTxOut(48_0000_0000, fx.b))
	grandchild := spend([]wire.OutPoint{{Hash: aChild.TxHash(), Index: 0}}, wire.NewTxOut(47_0000_0000, fx.c))
	both := spend([]wire.OutPoint{{Hash: a.TxHash(), Index: 0}, {Hash: b.TxHash(), Index: 0}},
		wire.NewTxOut(97_0000_0000, fx.c))
	bothAndChild := spend([]wire.OutPoint{{Hash: aChild.TxHash(), Index: 0}, {Hash: b.TxHash(), Index: 0}},
		wire.NewTxOut(96_0000_0000, fx.c))
	for _, bad := range []struct {
		name string
		txs  []*wire.MsgTx
	}{
		{"unrelated transactions", []*wire.MsgTx{a, b}},
		{"a chain of three", []*wire.MsgTx{a, aChild, grandchild}},
		{"the child first", []*wire.MsgTx{both, a, b}},
		{"a parent spending another", []*wire.MsgTx{a, aChild, b, bothAndChild}},
	} {
		var raws []string
		for _, tx := range bad.txs {
			raws = append(raws, txHex(tx))
		}
		_, rerr := c.call("blockchain.transaction.broadcast_package", raws)
		want := "the tx package was rejected by network rules.\n\npackage topology disallowed. not child-with-parents or parents depend on each other."
		if rerr == nil || rerr.Code != codeBadRequest || rerr.Message != want {
			t.Fatalf("%s: %v, want code %d %q", bad.name, rerr, codeBadRequest, want)
		}
		if n := pooled() - before; n != 0 {
			t.Fatalf("%s: %d transactions reached the mempool", bad.name, n)
		}
	}
	var pr map[string]any
	c.must(&pr, "blockchain.transaction.broadcast_package", []string{txHex(b), txHex(a), txHex(both)})
	if pr["success"] != true {
		t.Fatalf("two parents in either order and their child: %v", pr)
	}
}

// TestServerMethods checks banner, donation address, features, peers, add_peer, ping, fee methods and mempool.get_info.
func TestServerMethods(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.Banner = "hello"; c.DonationAddress = "bcrt1qdonate" })
	fx.f.hist = [][2]float64{{12.5, 30000}, {2, 50000}, {1, 10000}}
	c := fx.client(t, "1.4")
	var s string
	c.must(&s, "server.banner")
	if s != "hello" {
		t.Fatalf("banner %q", s)
	}
	c.must(&s, "server.donation_address")
	if s != "bcrt1qdonate" {
		t.Fatalf("donation %q", s)
	}
	var f map[string]any
	c.must(&f, "server.features")
	if f["genesis_hash"] != fx.f.params.GenesisHash.String() || f["hash_function"] != "sha256" ||
		f["protocol_min"] != "1.4" || f["protocol_max"] != "1.6" || f["pruning"] != nil {
		t.Fatalf("features %v", f)
	}
	var peers []any
	c.must(&peers, "server.peers.subscribe")
	if len(peers) != 0 {
		t.Fatalf("peers %v", peers)
	}
	var added bool
	c.must(&added, "server.add_peer", map[string]any{"hosts": map[string]any{}})
	res, rerr := c.call("server.ping")
	if rerr != nil || string(res) != "null" {
		t.Fatalf("ping %s %v", res, rerr)
	}
	var fee float64
	c.must(&fee, "blockchain.relayfee")
	if fee != 0.00001 {
		t.Fatalf("relayfee %v", fee)
	}
	c.must(&fee, "blockchain.estimatefee", 6)
	if fee != 0.0002 {
		t.Fatalf("estimatefee %v", fee)
	}
	c.must(&fee, "blockchain.estimatefee", 1000)
	if fee != -1 {
		t.Fatalf("estimatefee without estimate %v", fee)
	}
	var hist [][2]float64
	c.must(&hist, "mempool.get_fee_histogram")
	if len(hist) != 3 || hist[0][0] <= hist[1][0] || hist[1][0] <= hist[2][0] {
		t.Fatalf("histogram %v", hist)
	}
	c6 := fx.client(t, "1.6")
	var mi map[string]float64
	c6.must(&mi, "mempool.get_info")
	if mi["minrelaytxfee"] != 0.00001 || len(mi) != 3 {
		t.Fatalf("mempool.get_info %v", mi)
	}
}

// TestJSONRPCDialect checks JSON-RPC 1.0 requests, named parameters, notifications and mixed batches.
func TestJSONRPCDialect(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	// JSON-RPC 1.0 request: answered, in 2.0 form as ElectrumX does.
	r := c.await(c.sendExpect(`"v1"`, `{"id":"v1","method":"server.ping","params":[]}`))
	if r.JSONRPC != "2.0" || string(r.Result) != "null" || r.Error != nil {
		t.Fatalf("v1 answer %+v", r)
	}
	// Named parameters.
	if r := c.await(c.sendExpect("7", `{"jsonrpc":"2.0","id":7,"method":"blockchain.block.header","params":{"height":1}}`)); r.Error != nil || len(r.Result) != 162 {
		t.Fatalf("named params: %+v", r)
	}
	// Notifications get no answer; a later request still does.
	c.send(`{"jsonrpc":"2.0","method":"server.ping","params":[]}`)
	c.send(`{"jsonrpc":"2.0","id":null,"method":"server.ping","params":[]}`)
	c.noNote(fx.s)
	// A batch with a notification, an error and two requests.
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"server.ping"},{"jsonrpc":"2.0","method":"server.ping"},` +
		`{"jsonrpc":"2.0","id":"b","method":"no.such"},{"jsonrpc":"2.0","id":3,"method":"blockchain.block.header","params":[1]}]`)
	rs := <-c.batches
	if len(rs) != 3 || string(rs[0].ID) != "1" || rs[1].Error.Code != codeMethodNotFound || string(rs[2].ID) != "3" {
		t.Fatalf("batch %+v", rs)
	}
}

// TestConcurrentRequests checks that requests of one session run
// concurrently: a fast request sent after a slow one is answered first, and
// each answer carries its request's id.
func TestConcurrentRequests(t *testing.T) {
	// Two places: the slow handler holds one, and the fast request, not
	// alone in its session, may not take the spare. With the default of
	// one place per GOMAXPROCS, -cpu 1 left it waiting behind the slow one.
	fx := newFixture(t, func(c *Config) { c.Workers = 2 })
	c := fx.client(t, "1.4")
	fx.f.mu.Lock()
	fx.f.slow = 300 * time.Millisecond
	fx.f.mu.Unlock()
	order := make(chan string, 2)
	slow := c.start("blockchain.scripthash.get_history", fx.shA.String())
	fast := c.start("blockchain.block.header", 1)
	go func() { r := <-slow; order <- "slow:" + string(r.ID); slow <- r }()
	go func() { r := <-fast; order <- "fast:" + string(r.ID); fast <- r }()
	first, second := <-order, <-order
	if first != "fast:3" || second != "slow:2" {
		t.Fatalf("answers arrived as %s then %s", first, second)
	}
	if r := <-slow; r.Error != nil || len(r.Result) < 10 {
		t.Fatalf("slow answer %+v", r)
	}
}

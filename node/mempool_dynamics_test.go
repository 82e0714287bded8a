package node

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// dynKey is a second key whose P2PKH outputs the dynamics tests spend.
var dynKey, dynPub = btcec.PrivKeyFromBytes(bytes.Repeat([]byte{0x27}, 32))

// dynScript is dynKey's P2PKH script.
func dynScript() []byte {
	s, _ := txscript.NewScriptBuilder().AddOp(txscript.OP_DUP).AddOp(txscript.OP_HASH160).
		AddData(address.Hash160(dynPub.SerializeCompressed())).AddOp(txscript.OP_EQUALVERIFY).
		AddOp(txscript.OP_CHECKSIG).Script()
	return s
}

// dynIn is an output a dynamics test spends: prev's output vout, locked to
// key's P2PKH script.
type dynIn struct {
	prev *wire.MsgTx
	vout uint32
	key  *btcec.PrivateKey
}

// dynSpend spends ins into outs, every input with sequence seq.
func dynSpend(t testing.TB, seq uint32, ins []dynIn, outs ...*wire.TxOut) *btcutil.Tx {
	t.Helper()
	tx := wire.NewMsgTx(2)
	for _, in := range ins {
		tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(hashPtr(in.prev.TxHash()), in.vout), nil, nil))
		tx.TxIn[len(tx.TxIn)-1].Sequence = seq
	}
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	for i, in := range ins {
		sig, err := txscript.SignatureScript(tx, i, in.prev.TxOut[in.vout].PkScript, txscript.SigHashAll, in.key, true)
		if err != nil {
			t.Fatal(err)
		}
		tx.TxIn[i].SignatureScript = sig
	}
	return btcutil.NewTx(tx)
}

// dynWatch is a client subscribed to scripts, tracking the last status it
// was told for each (the subscribe answer, then notifications).
type dynWatch struct {
	t    *testing.T
	n    *Node
	c    *electrumClient
	last map[string]any
	log  map[string][]any
}

func newDynWatch(t *testing.T, n *Node, scripts ...[]byte) *dynWatch {
	c := dialElectrum(t, n)
	c.call("server.version", "dyn", "1.4")
	w := &dynWatch{t: t, n: n, c: c, last: map[string]any{}, log: map[string][]any{}}
	for _, s := range scripts {
		sh := indexers.ScriptHashFromScript(s).String()
		w.last[sh] = c.call("blockchain.scripthash.subscribe", sh)
	}
	return w
}

// settle reads the notifications until quiet for wait and records them.
func (w *dynWatch) settle(wait time.Duration) {
	for _, m := range w.c.pendingNotes(wait) {
		if m["method"] != "blockchain.scripthash.subscribe" {
			continue
		}
		p, _ := m["params"].([]any)
		if len(p) == 2 {
			sh, _ := p[0].(string)
			w.last[sh] = p[1]
			w.log[sh] = append(w.log[sh], p[1])
		}
	}
}

// implied returns the status get_history implies (spec §4.2), the history
// itself, and a fault when get_mempool is not its unconfirmed part.
func (w *dynWatch) implied(c *electrumClient, sh string) (any, []any, string) {
	hist, _ := c.call("blockchain.scripthash.get_history", sh).([]any)
	mem, _ := c.call("blockchain.scripthash.get_mempool", sh).([]any)
	var s string
	var unconf []any
	for _, e := range hist {
		m := e.(map[string]any)
		s += fmt.Sprintf("%s:%v:", m["tx_hash"], m["height"])
		if h := m["height"].(float64); h <= 0 {
			unconf = append(unconf, e)
		}
	}
	var fault string
	if fmt.Sprint(unconf) != fmt.Sprint(mem) {
		fault = fmt.Sprintf("%s: get_history's unconfirmed part %v, get_mempool %v", sh[:8], unconf, mem)
	}
	if s == "" {
		return nil, hist, fault
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:]), hist, fault
}

// check: once quiet, every subscribed script's last told status is the
// one get_history implies and a fresh subscribe answers. The server sends
// notifications on its own goroutines after the index's commit and the
// mempool view's reconciliation: a mismatch is read again until testWait
// has passed.
func (w *dynWatch) check(when string) {
	w.t.Helper()
	f := dialElectrum(w.t, w.n)
	f.call("server.version", "dyn-fresh", "1.4")
	keys := make([]string, 0, len(w.last))
	for sh := range w.last {
		keys = append(keys, sh)
	}
	sort.Strings(keys)
	deadline := time.Now().Add(testWait)
	for wait := 700 * time.Millisecond; ; wait = 200 * time.Millisecond {
		w.settle(wait)
		var faults []string
		for _, sh := range keys {
			want, hist, fault := w.implied(f, sh)
			if fault != "" {
				faults = append(faults, when+": "+fault)
			}
			fresh := f.call("blockchain.scripthash.subscribe", sh)
			if fresh != want {
				faults = append(faults, fmt.Sprintf("%s: %s: fresh subscribe %v, get_history implies %v (history %v)",
					when, sh[:8], fresh, want, hist))
			}
			if w.last[sh] != want {
				faults = append(faults, fmt.Sprintf("%s: %s: subscribed client left at %v (notified %v), get_history implies %v (history %v)",
					when, sh[:8], w.last[sh], w.log[sh], want, hist))
			}
		}
		if len(faults) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, f := range faults {
				w.t.Error(f)
			}
			return
		}
	}
}

// heightOf returns the height get_mempool gives txid for sh, or "absent".
func heightOf(c *electrumClient, sh string, txid fmt.Stringer) any {
	mem, _ := c.call("blockchain.scripthash.get_mempool", sh).([]any)
	for _, e := range mem {
		m := e.(map[string]any)
		if m["tx_hash"] == txid.String() {
			return m["height"]
		}
	}
	return "absent"
}

// TestMempoolReplacedParentAndDescendant: A pays dynKey; C spends A's output
// paying s3. B replaces A paying s2. A and C vanish everywhere; the scripts
// of A, C and B are notified and end at what get_history implies.
func TestMempoolReplacedParentAndDescendant(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	ds, s2, s3 := dynScript(), scenarioScript(0x72), scenarioScript(0x73)
	w := newDynWatch(t, n, ds, s2, s3)
	cb := coinbaseOf(t, n, 1)
	a := dynSpend(t, 0xfffffffd, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-10_000, ds))
	ch := dynSpend(t, 0xfffffffd, []dynIn{{a.MsgTx(), 0, dynKey}}, wire.NewTxOut(a.MsgTx().TxOut[0].Value-10_000, s3))
	for _, tx := range []*btcutil.Tx{a, ch} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	w.check("after A and C")
	b := dynSpend(t, 0xfffffffd, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-100_000, s2))
	if _, err := n.ProcessTx(b); err != nil {
		t.Fatal(err)
	}
	if n.TxPool().HaveTransaction(ch.Hash()) || n.TxPool().HaveTransaction(a.Hash()) {
		t.Fatal("btcd kept the replaced transactions")
	}
	w.check("after B replaced A")
}

// TestMempoolOrphanAccepted: O (spending P's output, paying s2) arrives first as
// an orphan from a peer; P comes over Electrum: both are accepted, O at -1.
func TestMempoolOrphanAccepted(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	ds, s2 := dynScript(), scenarioScript(0x82)
	w := newDynWatch(t, n, ds, s2)
	cb := coinbaseOf(t, n, 1)
	p := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-10_000, ds))
	o := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(p.MsgTx().TxOut[0].Value-10_000, s2))
	// As netsync handles a peer's transaction.
	acc, err := n.TxPool().ProcessTransaction(o, true, false, 1)
	if err != nil || len(acc) != 0 || !n.TxPool().IsOrphanInPool(o.Hash()) {
		t.Fatalf("orphan: %v %v", acc, err)
	}
	w.check("after the orphan")
	if acc, err := n.ProcessTx(p); err != nil || len(acc) != 2 {
		t.Fatalf("parent: %v %v", acc, err)
	}
	w.check("after the parent")
	if h := heightOf(w.c, indexers.ScriptHashFromScript(s2).String(), o.Hash()); h != float64(-1) {
		t.Fatalf("orphan's height %v, want -1", h)
	}
}

// TestMempoolChainPartlyMined: P -> C -> G, each paying dynKey (G pays s2). A
// block mines P only: C goes to 0, G stays -1.
func TestMempoolChainPartlyMined(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	ds, s2 := dynScript(), scenarioScript(0x92)
	w := newDynWatch(t, n, ds, s2)
	cb := coinbaseOf(t, n, 1)
	p := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-10_000, ds))
	c := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(p.MsgTx().TxOut[0].Value-10_000, ds))
	g := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{c.MsgTx(), 0, dynKey}}, wire.NewTxOut(c.MsgTx().TxOut[0].Value-10_000, s2))
	for _, tx := range []*btcutil.Tx{p, c, g} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	w.check("after P, C, G")
	dsh := indexers.ScriptHashFromScript(ds).String()
	if hp, hc := heightOf(w.c, dsh, p.Hash()), heightOf(w.c, dsh, c.Hash()); hp != float64(0) || hc != float64(-1) {
		t.Fatalf("P at %v, C at %v", hp, hc)
	}
	mineWith(t, n, p)
	w.check("after P mined")
	if hc, hg := heightOf(w.c, dsh, c.Hash()), heightOf(w.c, dsh, g.Hash()); hc != float64(0) || hg != float64(-1) {
		t.Fatalf("after P mined: C at %v, G at %v", hc, hg)
	}
	bal := w.c.call("blockchain.scripthash.get_balance", dsh).(map[string]any)
	// dynKey: P's output confirmed, spent by C (pool), C's output spent by G.
	pv := float64(p.MsgTx().TxOut[0].Value)
	if bal["confirmed"] != pv || bal["unconfirmed"] != -pv {
		t.Fatalf("balance %v, want confirmed %v unconfirmed %v", bal, pv, -pv)
	}
	if lu, _ := w.c.call("blockchain.scripthash.listunspent", dsh).([]any); len(lu) != 0 {
		t.Fatalf("listunspent %v, want none", lu)
	}
}

// TestMempoolBlockDoubleSpendsParent: P (pool) pays dynKey, C spends it paying
// s2. A block mines D, a double spend of P paying s3: P and C vanish.
func TestMempoolBlockDoubleSpendsParent(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	ds, s2, s3 := dynScript(), scenarioScript(0xa2), scenarioScript(0xa3)
	w := newDynWatch(t, n, ds, s2, s3)
	cb := coinbaseOf(t, n, 1)
	p := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-10_000, ds))
	c := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(p.MsgTx().TxOut[0].Value-10_000, s2))
	for _, tx := range []*btcutil.Tx{p, c} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	w.check("before")
	d := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-20_000, s3))
	mineWith(t, n, d)
	w.check("after D mined")
}

// TestMempoolSameScriptFundedAndSpent: P pays dynKey twice; C spends one of
// them paying dynKey again and s2. dynKey's mempool: P at 0, C at -1;
// listunspent shows P's unspent output and C's.
func TestMempoolSameScriptFundedAndSpent(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	ds, s2 := dynScript(), scenarioScript(0xb2)
	w := newDynWatch(t, n, ds, s2)
	cb := coinbaseOf(t, n, 1)
	half := (cb.TxOut[0].Value - 10_000) / 2
	p := dynSpend(t, 0xfffffffd, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(half, ds), wire.NewTxOut(half, ds))
	c := dynSpend(t, 0xfffffffd, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(half/2, ds), wire.NewTxOut(half/2-10_000, s2))
	for _, tx := range []*btcutil.Tx{p, c} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	w.check("after P, C")
	dsh := indexers.ScriptHashFromScript(ds).String()
	bal := w.c.call("blockchain.scripthash.get_balance", dsh).(map[string]any)
	if bal["confirmed"] != float64(0) || bal["unconfirmed"] != float64(half+half/2) {
		t.Fatalf("balance %v, want unconfirmed %d", bal, half+half/2)
	}
	lu, _ := w.c.call("blockchain.scripthash.listunspent", dsh).([]any)
	if len(lu) != 2 {
		t.Fatalf("listunspent %v", lu)
	}
	// C is replaced by C2 spending the same output, paying s2 only.
	c2 := dynSpend(t, 0xfffffffd, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(half-100_000, s2))
	if _, err := n.ProcessTx(c2); err != nil {
		t.Fatal(err)
	}
	w.check("after C2 replaced C")
	bal = w.c.call("blockchain.scripthash.get_balance", dsh).(map[string]any)
	if bal["unconfirmed"] != float64(half) {
		t.Fatalf("balance %v, want unconfirmed %d", bal, half)
	}
	// P is replaced by P2 (paying s2): P, C2 vanish.
	p2 := dynSpend(t, 0xfffffffd, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-1_000_000, s2))
	if _, err := n.ProcessTx(p2); err != nil {
		t.Fatal(err)
	}
	w.check("after P2 replaced P")
	bal = w.c.call("blockchain.scripthash.get_balance", dsh).(map[string]any)
	if bal["unconfirmed"] != float64(0) {
		t.Fatalf("balance %v, want 0", bal)
	}
}

// TestMempoolOrphanAcceptedByBlock: O (spending P's output, paying s2) waits as
// an orphan; a block mines P (never in the pool): netsync accepts O.
func TestMempoolOrphanAcceptedByBlock(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	ds, s2 := dynScript(), scenarioScript(0xc2)
	w := newDynWatch(t, n, ds, s2)
	cb := coinbaseOf(t, n, 1)
	p := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-10_000, ds))
	o := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(p.MsgTx().TxOut[0].Value-10_000, s2))
	if acc, err := n.TxPool().ProcessTransaction(o, true, false, 1); err != nil || len(acc) != 0 {
		t.Fatalf("orphan: %v %v", acc, err)
	}
	mineWith(t, n, p)
	waitFor(t, "the orphan accepted", func() bool { return n.TxPool().IsTransactionInPool(o.Hash()) })
	w.check("after P mined")
	if h := heightOf(w.c, indexers.ScriptHashFromScript(s2).String(), o.Hash()); h != float64(0) {
		t.Fatalf("O at %v, want 0", h)
	}
}

// TestMempoolPeerReplacement: as TestMempoolReplacedParentAndDescendant, the
// transactions coming from peers (netsync's path: the pool, then
// AnnounceNewTransactions).
func TestMempoolPeerReplacement(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	ds, s2, s3 := dynScript(), scenarioScript(0xd2), scenarioScript(0xd3)
	w := newDynWatch(t, n, ds, s2, s3)
	cb := coinbaseOf(t, n, 1)
	peer := func(tx *btcutil.Tx) {
		acc, err := n.TxPool().ProcessTransaction(tx, true, false, 1)
		if err != nil {
			t.Fatal(err)
		}
		n.AnnounceNewTransactions(acc)
	}
	a := dynSpend(t, 0xfffffffd, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-10_000, ds))
	ch := dynSpend(t, 0xfffffffd, []dynIn{{a.MsgTx(), 0, dynKey}}, wire.NewTxOut(a.MsgTx().TxOut[0].Value-10_000, s3))
	b := dynSpend(t, 0xfffffffd, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-100_000, s2))
	peer(ch) // orphan
	peer(a)
	peer(b)
	w.check("after B replaced A")
}

// dynEsplora cross-checks the Esplora answers of scripts and transactions
// with the pool and the Electrum answers.
type dynEsplora struct {
	t    *testing.T
	n    *Node
	base string
}

func newDynEsplora(t *testing.T, n *Node) *dynEsplora {
	return &dynEsplora{t: t, n: n, base: "http://" + n.EsploraAddrs()[0].String()}
}

func (e *dynEsplora) get(path string, v any) int {
	e.t.Helper()
	resp, err := http.Get(e.base + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Logf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if resp.StatusCode == 200 && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode
}

// checkScript: /scripthash/:h/txs/mempool and /utxo agree with Electrum's
// get_mempool and listunspent.
func (e *dynEsplora) checkScript(when string, c *electrumClient, script []byte) {
	e.t.Helper()
	sh := indexers.ScriptHashFromScript(script).String()
	sum := sha256.Sum256(script)
	esh := hex.EncodeToString(sum[:])
	var mtxs []struct {
		TxID string `json:"txid"`
	}
	e.get("/scripthash/"+esh+"/txs/mempool", &mtxs)
	var got []string
	for _, x := range mtxs {
		got = append(got, x.TxID)
	}
	var want []string
	mem, _ := c.call("blockchain.scripthash.get_mempool", sh).([]any)
	for _, x := range mem {
		want = append(want, x.(map[string]any)["tx_hash"].(string))
	}
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Errorf("%s: %s: esplora txs/mempool %v, electrum get_mempool %v", when, sh[:8], got, want)
	}
	var utxos []struct {
		TxID   string `json:"txid"`
		Vout   uint32 `json:"vout"`
		Value  int64  `json:"value"`
		Status struct {
			Confirmed bool `json:"confirmed"`
		} `json:"status"`
	}
	e.get("/scripthash/"+esh+"/utxo", &utxos)
	got = got[:0]
	for _, u := range utxos {
		got = append(got, fmt.Sprintf("%s:%d:%v", u.TxID, u.Vout, u.Status.Confirmed))
	}
	want = want[:0]
	lu, _ := c.call("blockchain.scripthash.listunspent", sh).([]any)
	for _, x := range lu {
		m := x.(map[string]any)
		want = append(want, fmt.Sprintf("%s:%v:%v", m["tx_hash"], m["tx_pos"], m["height"].(float64) > 0))
	}
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Errorf("%s: %s: esplora utxo %v, electrum listunspent %v", when, sh[:8], got, want)
	}
}

// checkTx: /tx/:txid/status and /outspends follow the pool and the chain.
func (e *dynEsplora) checkTx(when string, tx *btcutil.Tx, wantStatus string) {
	e.t.Helper()
	var st struct {
		Confirmed bool `json:"confirmed"`
	}
	code := e.get("/tx/"+tx.Hash().String(), nil)
	e.get("/tx/"+tx.Hash().String()+"/status", &st)
	got := "absent"
	if code == 200 {
		got = "unconfirmed"
		if st.Confirmed {
			got = "confirmed"
		}
	}
	if got != wantStatus {
		e.t.Errorf("%s: tx %s status %s, want %s", when, tx.Hash().String()[:8], got, wantStatus)
	}
	if got != "unconfirmed" {
		return
	}
	var outs []struct {
		Spent bool   `json:"spent"`
		TxID  string `json:"txid"`
	}
	e.get("/tx/"+tx.Hash().String()+"/outspends", &outs)
	for i := range tx.MsgTx().TxOut {
		spender := e.n.TxPool().CheckSpend(wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)})
		want := ""
		if spender != nil {
			want = spender.Hash().String()
		}
		if i >= len(outs) || outs[i].TxID != want {
			e.t.Errorf("%s: %s:%d outspend %v, pool spender %q", when, tx.Hash().String()[:8], i, outs, want)
		}
	}
}

func dynConfig(t *testing.T) *Config {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.EsploraListeners = []string{"127.0.0.1:0"}
	return cfg
}

// TestMempoolBlockMinesParentAndChildDoubleSpend: P -> C (pool, C pays s2); a
// block mines P and C', another spend of P's output paying s3. C vanishes.
func TestMempoolBlockMinesParentAndChildDoubleSpend(t *testing.T) {
	n := startNode(t, dynConfig(t))
	generate(t, n, 101)
	e := newDynEsplora(t, n)
	ds, s2, s3 := dynScript(), scenarioScript(0xe2), scenarioScript(0xe3)
	w := newDynWatch(t, n, ds, s2, s3)
	cb := coinbaseOf(t, n, 1)
	p := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-5_010_000, ds), wire.NewTxOut(5_000_000, ds))
	c := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(p.MsgTx().TxOut[0].Value-10_000, s2))
	for _, tx := range []*btcutil.Tx{p, c} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	w.check("before")
	for _, s := range [][]byte{ds, s2, s3} {
		e.checkScript("before", w.c, s)
	}
	e.checkTx("before", p, "unconfirmed")
	e.checkTx("before", c, "unconfirmed")
	c2 := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(p.MsgTx().TxOut[0].Value-20_000, s3))
	mineWith(t, n, p, c2)
	w.check("after")
	for _, s := range [][]byte{ds, s2, s3} {
		e.checkScript("after", w.c, s)
	}
	e.checkTx("after", c, "absent")
	e.checkTx("after", c2, "confirmed")
}

// TestMempoolEsploraReplacement: replacements seen through the Esplora API.
func TestMempoolEsploraReplacement(t *testing.T) {
	n := startNode(t, dynConfig(t))
	generate(t, n, 101)
	e := newDynEsplora(t, n)
	ds, s2, s3 := dynScript(), scenarioScript(0xf2), scenarioScript(0xf3)
	w := newDynWatch(t, n, ds, s2, s3)
	cb := coinbaseOf(t, n, 1)
	half := (cb.TxOut[0].Value - 10_000) / 2
	p := dynSpend(t, 0xfffffffd, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(half, ds), wire.NewTxOut(half, ds))
	c := dynSpend(t, 0xfffffffd, []dynIn{{p.MsgTx(), 0, dynKey}, {p.MsgTx(), 1, dynKey}}, wire.NewTxOut(2*half-10_000, s2))
	for _, tx := range []*btcutil.Tx{p, c} {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
	}
	w.check("before")
	// C2 replaces C spending only P's first output.
	c2 := dynSpend(t, 0xfffffffd, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(half-200_000, s3))
	if _, err := n.ProcessTx(c2); err != nil {
		t.Fatal(err)
	}
	w.check("after C2")
	for _, s := range [][]byte{ds, s2, s3} {
		e.checkScript("after C2", w.c, s)
	}
	e.checkTx("after C2", p, "unconfirmed")
	e.checkTx("after C2", c, "absent")
	e.checkTx("after C2", c2, "unconfirmed")
	lu, _ := w.c.call("blockchain.scripthash.listunspent", indexers.ScriptHashFromScript(ds).String()).([]any)
	if len(lu) != 1 {
		t.Fatalf("listunspent after C2 %v, want P's second output", lu)
	}
}

// TestMempoolBroadcastOfOrphanIsNotAccepted: O (spending an output of P, which
// this node has not seen) came from a peer and waits in btcd's orphan pool,
// outside the mempool. A wallet broadcasting O must not be told it was
// accepted (bitcoind's sendrawtransaction, which ElectrumX relays, answers
// -25 "bad-txns-inputs-missingorspent": only a transaction its mempool
// holds is accepted again): the server shows O nowhere, neither in
// get_mempool nor through transaction.get.
func TestMempoolBroadcastOfOrphanIsNotAccepted(t *testing.T) {
	n := startNode(t, dynConfig(t))
	generate(t, n, 101)
	s2 := scenarioScript(0x99)
	w := newDynWatch(t, n, s2)
	cb := coinbaseOf(t, n, 1)
	p := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-10_000, dynScript()))
	o := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{p.MsgTx(), 0, dynKey}}, wire.NewTxOut(p.MsgTx().TxOut[0].Value-10_000, s2))
	// As netsync takes a peer's transaction whose parent it lacks.
	if acc, err := n.TxPool().ProcessTransaction(o, true, false, 1); err != nil || len(acc) != 0 || !n.TxPool().IsOrphanInPool(o.Hash()) {
		t.Fatalf("orphan: %v %v", acc, err)
	}
	var buf bytes.Buffer
	_ = o.MsgTx().Serialize(&buf)
	rawHex := hex.EncodeToString(buf.Bytes())

	resp := w.c.rawCall("blockchain.transaction.broadcast", rawHex)
	sh := indexers.ScriptHashFromScript(s2).String()
	mem, _ := w.c.call("blockchain.scripthash.get_mempool", sh).([]any)
	get := w.c.rawCall("blockchain.transaction.get", o.Hash().String())
	if resp["error"] == nil {
		t.Errorf("Electrum broadcast of a transaction only in the orphan pool answered %v; "+
			"meanwhile get_mempool of its script %v, transaction.get %v", resp["result"], mem, get["error"])
	}

	e := newDynEsplora(t, n)
	httpResp, err := http.Post(e.base+"/tx", "text/plain", bytes.NewReader([]byte(rawHex)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(httpResp.Body)
	httpResp.Body.Close()
	code := e.get("/tx/"+o.Hash().String(), nil)
	if httpResp.StatusCode == 200 {
		t.Errorf("Esplora POST /tx of a transaction only in the orphan pool answered 200 %s; GET /tx/:txid then %d", body, code)
	}
}

package esplora

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// notValidated reports whether every member of txs is answered
// "package-not-validated", as bitcoind answers the members of a package it
// refuses whole, and nothing else is.
func notValidated(p packageJSON, txs ...*wire.MsgTx) bool {
	ids := map[string]bool{}
	for _, tx := range txs {
		ids[tx.WitnessHash().String()] = true
		r, ok := p.Results[tx.WitnessHash().String()]
		if !ok || r.TxID != tx.TxHash().String() || r.Error != "package-not-validated" || r.Fees != nil {
			return false
		}
	}
	return len(p.Results) == len(ids)
}

// packageJSON is a submitpackage answer as a client without this
// project's types reads it.
type packageJSON struct {
	Msg     string `json:"package_msg"`
	Results map[string]struct {
		TxID  string `json:"txid"`
		VSize int64  `json:"vsize"`
		Fees  *struct {
			Base              json.Number  `json:"base"`
			EffectiveFeeRate  *json.Number `json:"effective-feerate"`
			EffectiveIncludes []string     `json:"effective-includes"`
		} `json:"fees"`
		Error string `json:"error"`
	} `json:"tx-results"`
	Replaced []string `json:"replaced-transactions"`
}

// spendWithChange spends coin to outs and the rest, less fee, back to
// change.
func spendWithChange(coin testchain.Coin, fee int64, change []byte, outs ...*wire.TxOut) *wire.MsgTx {
	rest := coin.Value - fee
	for _, o := range outs {
		rest -= o.Value
	}
	return testchain.SpendTx([]testchain.Coin{coin}, append(outs, &wire.TxOut{Value: rest, PkScript: change})...)
}

func (n *testNode) submitPackage(query string, txs ...*wire.MsgTx) (int, string, packageJSON) {
	n.t.Helper()
	hexes := make([]string, len(txs))
	for i, tx := range txs {
		hexes[i] = txHex(tx)
	}
	body, _ := json.Marshal(hexes)
	code, answer := n.post("/txs/package"+query, string(body))
	var p packageJSON
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(answer), &p); err != nil {
			n.t.Fatalf("answer %s: %v", answer, err)
		}
	}
	return code, answer, p
}

// TestSubmitPackage: a parent and its child are taken into the mempool and
// answered in submitpackage's shape, with each member's fee and fee rate
// in BTC; taken again, they are already known and answered with their
// fee alone.
func TestSubmitPackage(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 77_001)
	coin := n.coin()
	parent := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: 40_000_000, PkScript: script.PkScript},
		&wire.TxOut{Value: coin.Value - 40_000_000 - 1_000, PkScript: script.PkScript})
	child := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: parent.TxHash(), Index: 0}, Value: 40_000_000, Script: &script}},
		&wire.TxOut{Value: 40_000_000 - 5_000, PkScript: script.PkScript})

	code, body, p := n.submitPackage("", parent, child)
	if code != http.StatusOK || p.Msg != "success" || len(p.Results) != 2 || p.Replaced == nil || len(p.Replaced) != 0 {
		t.Fatalf("POST /txs/package: %d %s", code, body)
	}
	for _, c := range []struct {
		tx  *wire.MsgTx
		fee int64
	}{{parent, 1_000}, {child, 5_000}} {
		r, ok := p.Results[c.tx.WitnessHash().String()]
		if !ok || r.TxID != c.tx.TxHash().String() || r.Error != "" || r.Fees == nil {
			t.Fatalf("result of %v: %s", c.tx.TxHash(), body)
		}
		var v txValue
		n.getJSON("/tx/"+r.TxID, &v)
		vsize := (v.Weight + 3) / 4
		wantRate := fmt.Sprintf("%.8f", float64(c.fee*1000/vsize)/1e8)
		if r.VSize != vsize || r.Fees.Base.String() != fmt.Sprintf("%.8f", float64(c.fee)/1e8) ||
			r.Fees.EffectiveFeeRate == nil || r.Fees.EffectiveFeeRate.String() != wantRate ||
			len(r.Fees.EffectiveIncludes) != 1 || r.Fees.EffectiveIncludes[0] != c.tx.WitnessHash().String() {
			t.Fatalf("result of %v (fee %d, vsize %d, rate %s): %s", c.tx.TxHash(), c.fee, vsize, wantRate, body)
		}
		if v.Status.Confirmed || v.Fee != c.fee {
			t.Fatalf("%v after the package: %+v", c.tx.TxHash(), v)
		}
	}

	code, body, p = n.submitPackage("", parent, child)
	if code != http.StatusOK || p.Msg != "success" || len(p.Results) != 2 {
		t.Fatalf("the package again: %d %s", code, body)
	}
	for _, r := range p.Results {
		if r.Error != "" || r.Fees == nil || r.Fees.EffectiveFeeRate != nil || r.Fees.EffectiveIncludes != nil || r.VSize == 0 {
			t.Fatalf("an already known member is answered with its fee alone: %s", body)
		}
	}
}

// TestSubmitPackageRefusals: a member over maxfeerate, or spending an
// output nobody knows, fails alone and the package says so; the members
// before it stay accepted, as btcd has no package acceptance.
func TestSubmitPackageRefusals(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 77_002)
	coin := n.coin()
	// 0.2 BTC of fee on about 100 vbytes: far over 0.10 BTC/kvB.
	greedy := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: coin.Value - 20_000_000, PkScript: script.PkScript})
	code, body, p := n.submitPackage("", greedy)
	r := p.Results[greedy.WitnessHash().String()]
	if code != http.StatusOK || p.Msg != "transaction failed" || r.Error != "max feerate exceeded" || r.Fees != nil {
		t.Fatalf("over maxfeerate: %d %s", code, body)
	}
	if code, _ := n.get("/tx/" + greedy.TxHash().String()); code != http.StatusNotFound {
		t.Fatalf("a member over maxfeerate reached the mempool: GET /tx %d", code)
	}
	if code, body, p := n.submitPackage("?maxfeerate=0", greedy); code != http.StatusOK || p.Msg != "success" {
		t.Fatalf("maxfeerate=0 takes any rate: %d %s", code, body)
	}

	parent := spendWithChange(n.coin(), 1_000, script.PkScript, &wire.TxOut{Value: 30_000_000, PkScript: script.PkScript})
	stray := testchain.Coin{OutPoint: wire.OutPoint{Index: 7}, Value: 10_000, Script: &script}
	stray.OutPoint.Hash[0] = 0xee
	child := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: parent.TxHash()}, Value: 30_000_000, Script: &script}, stray},
		&wire.TxOut{Value: 30_000_000 - 2_000, PkScript: script.PkScript})
	code, body, p = n.submitPackage("", parent, child)
	if code != http.StatusOK || p.Msg != "transaction failed" || p.Results[parent.WitnessHash().String()].Error != "" ||
		p.Results[child.WitnessHash().String()].Error != "bad-txns-inputs-missingorspent" {
		t.Fatalf("a child spending an unknown output: %d %s", code, body)
	}
	if code, _ := n.get("/tx/" + parent.TxHash().String()); code != http.StatusOK {
		t.Fatalf("the parent accepted before the failing child left the mempool: GET /tx %d", code)
	}
}

// TestSubmitPackageBadRequests: requests electrs or bitcoind refuse are
// refused with their status and text.
func TestSubmitPackageBadRequests(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 77_003)
	a := spendWithChange(n.coin(), 1_000, script.PkScript, &wire.TxOut{Value: 1_000_000, PkScript: script.PkScript})
	b := spendWithChange(n.coin(), 1_000, script.PkScript, &wire.TxOut{Value: 1_000_000, PkScript: script.PkScript})
	aChild := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: a.TxHash()}, Value: 1_000_000, Script: &script}},
		&wire.TxOut{Value: 1_000_000 - 1_000, PkScript: script.PkScript})
	burn, err := txscript.NullDataScript([]byte("burn"))
	if err != nil {
		t.Fatal(err)
	}
	burning := spendWithChange(n.coin(), 1_000, script.PkScript, &wire.TxOut{Value: 5_000, PkScript: burn})
	// An opcode past OP_NOP10 makes a script invalid, which bitcoind
	// counts as a burn too.
	invalidOp := spendWithChange(n.coin(), 1_000, script.PkScript, &wire.TxOut{Value: 5_000, PkScript: []byte{0xff}})
	submit := func(q string) string {
		return `submitpackage RPC error: {"code":` + q
	}
	long := `"` + strings.Repeat("00", 70) + `"`
	for _, c := range []struct {
		query, body string
		want        string
	}{
		{"", `{"txs":[]}`, "Invalid request body (should be an array of hexadecimal strings)"},
		{"", "[" + strings.TrimSuffix(strings.Repeat(long+",", 26), ",") + "]", "Exceeded maximum of 25 transactions"},
		{"?maxfeerate=abc", "[]", "Invalid maxfeerate"},
		{"?maxburnamount=x", "[]", "Invalid maxburnamount"},
		{"?maxfeerate=1", "[]", submit(`-8,"message":"Array must contain between 1 and 25 transactions."}`)},
		{"?maxfeerate=1", `["` + txHex(a) + `"]`, submit(`-8,"message":"Fee rates larger than or equal to 1BTC/kvB are not accepted"}`)},
		{"?maxfeerate=0.999999999", `["` + txHex(a) + `"]`, submit(`-8,"message":"Fee rates larger than or equal to 1BTC/kvB are not accepted"}`)},
		{"?maxfeerate=NaN", `["` + txHex(a) + `"]`, submit(`-3,"message":"Invalid amount"}`)},
		{"?maxfeerate=1e400", `["` + txHex(a) + `"]`, submit(`-3,"message":"Invalid amount"}`)},
		{"?maxburnamount=-1", `["` + txHex(a) + `"]`, submit(`-3,"message":"Amount out of range"}`)},
		{"?maxburnamount=-1", `["00"]`, "Invalid transaction size for item 0"},
		{"?maxfeerate=1&maxburnamount=x", "[]", "Invalid maxburnamount"},
		{"", "null", "Invalid request body (should be an array of hexadecimal strings)"},
		{"", `["00"]`, "Invalid transaction size for item 0"},
		{"", "[" + long + `,"` + strings.Repeat("zz", 70) + `"]`, "Invalid transaction hex for item 1"},
		{"", "[]", submit(`-8,"message":"Array must contain between 1 and 25 transactions."}`)},
		{"", "[" + long + "]", submit(`-22,"message":"TX decode failed: ` + strings.Repeat("00", 70) + ` Make sure the tx has at least one input."}`)},
		{"", `["` + txHex(burning) + `"]`, submit(`-25,"message":"Unspendable output exceeds maximum configured by user (maxburnamount)"}`)},
		{"", `["` + txHex(invalidOp) + `"]`, submit(`-25,"message":"Unspendable output exceeds maximum configured by user (maxburnamount)"}`)},
		{"", `["` + txHex(a) + `","` + txHex(b) + `"]`,
			submit(`-25,"message":"package topology disallowed. not child-with-parents or parents depend on each other."}`)},
	} {
		code, body := n.post("/txs/package"+c.query, c.body)
		if code != http.StatusBadRequest || body != c.want {
			t.Errorf("POST /txs/package%s %.60s: %d %q, want 400 %q", c.query, c.body, code, body, c.want)
		}
	}
	if code, body, p := n.submitPackage("?maxburnamount=0.00005", burning); code != http.StatusOK || p.Msg != "success" {
		t.Fatalf("a burn within maxburnamount: %d %s", code, body)
	}
	if code, body, p := n.submitPackage("", a, a, aChild); code != http.StatusOK || p.Msg != "package-contains-duplicates" || !notValidated(p, a, aChild) {
		t.Fatalf("a package holding a transaction twice: %d %s", code, body)
	}
	if code, _ := n.get("/tx/" + a.TxHash().String()); code != http.StatusNotFound {
		t.Fatalf("a refused package reached the mempool: GET /tx %d", code)
	}
}

// TestSubmitPackageOtherWtxid: a member whose txid the mempool holds with
// another witness is answered, as bitcoind answers it, with "other-wtxid"
// (the mempool's wtxid) and neither vsize nor fees: the submitted witness
// is not taken.
func TestSubmitPackageOtherWtxid(t *testing.T) {
	n := newTestNode(t, "")
	// `OP_DROP OP_TRUE`: any one witness element spends it, so the same
	// spend has many wtxids.
	ws := []byte{txscript.OP_DROP, txscript.OP_TRUE}
	h := sha256.Sum256(ws)
	pk := append([]byte{txscript.OP_0, 32}, h[:]...)
	coin := n.coin()
	parent := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 10_000, PkScript: pk})
	if code, body := n.post("/tx", txHex(parent)); code != http.StatusOK {
		t.Fatalf("POST /tx parent: %d %s", code, body)
	}
	spend := func(elem []byte) *wire.MsgTx {
		tx := wire.NewMsgTx(2)
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: parent.TxHash()},
			Witness: wire.TxWitness{elem, ws}, Sequence: wire.MaxTxInSequenceNum})
		tx.AddTxOut(&wire.TxOut{Value: coin.Value - 20_000, PkScript: pk})
		return tx
	}
	inPool, other := spend([]byte{1}), spend([]byte{2, 2, 2, 2, 2, 2, 2, 2})
	if inPool.TxHash() != other.TxHash() || inPool.WitnessHash() == other.WitnessHash() {
		t.Fatal("the two spends should share the txid only")
	}
	if code, body := n.post("/tx", txHex(inPool)); code != http.StatusOK {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	body, _ := json.Marshal([]string{txHex(other)})
	code, answer := n.post("/txs/package", string(body))
	var p struct {
		Msg     string                    `json:"package_msg"`
		Results map[string]map[string]any `json:"tx-results"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(answer), &p) != nil {
		t.Fatalf("POST /txs/package: %d %s", code, answer)
	}
	r := p.Results[other.WitnessHash().String()]
	if r["other-wtxid"] != inPool.WitnessHash().String() || r["vsize"] != nil || r["fees"] != nil {
		t.Fatalf("a member the mempool holds with another witness: %s\nwant other-wtxid %v and no vsize or fees, as bitcoind",
			answer, inPool.WitnessHash())
	}
}

// TestSubmitPackageReplacedTransactions: a member replacing a transaction
// that signals BIP 125 lists it in "replaced-transactions", with the
// replaced transaction's descendants.
func TestSubmitPackageReplacedTransactions(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 77_101)
	coin := n.coin()
	first := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 1_000, PkScript: script.PkScript})
	first.TxIn[0].Sequence = 0xfffffffd // replaceable
	if code, body := n.post("/tx", txHex(first)); code != http.StatusOK {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	child := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: first.TxHash()}, Value: coin.Value - 1_000, Script: &script}},
		&wire.TxOut{Value: coin.Value - 2_000, PkScript: script.PkScript})
	if code, body := n.post("/tx", txHex(child)); code != http.StatusOK {
		t.Fatalf("POST /tx child: %d %s", code, body)
	}
	bump := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 50_000, PkScript: script.PkScript})
	code, body, p := n.submitPackage("", bump)
	if code != http.StatusOK || p.Msg != "success" {
		t.Fatalf("the replacement: %d %s", code, body)
	}
	hashes := []chainhash.Hash{first.TxHash(), child.TxHash()}
	slices.SortFunc(hashes, func(a, b chainhash.Hash) int { return bytes.Compare(a[:], b[:]) })
	want := []string{hashes[0].String(), hashes[1].String()}
	for _, txid := range want {
		if c, _ := n.get("/tx/" + txid); c != http.StatusNotFound {
			t.Fatalf("the replaced transaction %s is still served: GET /tx %d", txid, c)
		}
	}
	if !slices.Equal(p.Replaced, want) {
		t.Fatalf("replaced-transactions %v, want %v: %s", p.Replaced, want, body)
	}
}

// TestSubmitPackageConflictInPackage: a package two of whose members spend
// one output is refused whole, as bitcoind refuses it: package_msg
// "conflict-in-package", each member "package-not-validated", nothing
// submitted.
func TestSubmitPackageConflictInPackage(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 88_001)
	coin := n.coin()
	p1 := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 1_000, PkScript: script.PkScript})
	p2 := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 2_000, PkScript: script.PkScript})
	child := testchain.SpendTx([]testchain.Coin{
		{OutPoint: wire.OutPoint{Hash: p1.TxHash()}, Value: coin.Value - 1_000, Script: &script},
		{OutPoint: wire.OutPoint{Hash: p2.TxHash()}, Value: coin.Value - 2_000, Script: &script},
	}, &wire.TxOut{Value: coin.Value - 10_000, PkScript: script.PkScript})

	code, body, p := n.submitPackage("", p1, p2, child)
	if code != http.StatusOK || p.Msg != "conflict-in-package" || !notValidated(p, p1, p2, child) {
		t.Errorf("parents spending the same output: %d %s\nwant package_msg conflict-in-package, each member package-not-validated", code, body)
	}
	if code, _ := n.get("/tx/" + p1.TxHash().String()); code != http.StatusNotFound {
		t.Errorf("a member of a package bitcoind refuses whole reached the mempool: GET /tx %d", code)
	}
}

// TestSubmitPackageTooLarge: a package of several transactions weighing
// over 404,000 units is refused whole, as bitcoind refuses it, though each
// member is standard on its own.
func TestSubmitPackageTooLarge(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 88_002)
	coin := n.coin()
	const fanout = 1_500
	outs := []*wire.TxOut{{Value: 5000_0000, PkScript: script.PkScript}}
	for i := 0; i < fanout; i++ {
		outs = append(outs, &wire.TxOut{Value: 10_000, PkScript: script.PkScript})
	}
	outs = append(outs, &wire.TxOut{Value: coin.Value - 5000_0000 - fanout*10_000 - 500_000, PkScript: script.PkScript})
	parent := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	var couts []*wire.TxOut
	for i := 0; i < 1_000; i++ {
		couts = append(couts, &wire.TxOut{Value: 10_000, PkScript: script.PkScript})
	}
	couts = append(couts, &wire.TxOut{Value: 5000_0000 - 1_000*10_000 - 500_000, PkScript: script.PkScript})
	child := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: parent.TxHash()}, Value: 5000_0000, Script: &script}}, couts...)
	pw := blockchain.GetTransactionWeight(btcutil.NewTx(parent))
	cw := blockchain.GetTransactionWeight(btcutil.NewTx(child))
	if pw > 400_000 || cw > 400_000 || pw+cw <= 404_000 {
		t.Fatalf("weights %d + %d: want each standard and the sum over 404000", pw, cw)
	}
	code, body, p := n.submitPackage("", parent, child)
	if code != http.StatusOK || p.Msg != "package-too-large" || !notValidated(p, parent, child) {
		t.Errorf("a package of %d WU: %d %.300s\nwant package_msg package-too-large, each member package-not-validated", pw+cw, code, body)
	}
	if code, _ := n.get("/tx/" + parent.TxHash().String()); code != http.StatusNotFound {
		t.Errorf("a member of a package bitcoind refuses whole reached the mempool: GET /tx %d", code)
	}
}

// TestSubmitPackageReplacedOrder: replaced-transactions come in bitcoind's
// order, by the hashes' bytes (not their hex).
func TestSubmitPackageReplacedOrder(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 88_003)
	coin := n.coin()
	first := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 1_000, PkScript: script.PkScript})
	first.TxIn[0].Sequence = 0xfffffffd
	var child *wire.MsgTx
	var want []chainhash.Hash
	for fee := int64(1_000); ; fee++ {
		child = testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: first.TxHash()}, Value: coin.Value - 1_000, Script: &script}},
			&wire.TxOut{Value: coin.Value - 1_000 - fee, PkScript: script.PkScript})
		a, b := first.TxHash(), child.TxHash()
		byBytes := bytes.Compare(a[:], b[:]) < 0
		byHex := a.String() < b.String()
		if byBytes != byHex {
			want = []chainhash.Hash{a, b}
			slices.SortFunc(want, func(x, y chainhash.Hash) int { return bytes.Compare(x[:], y[:]) })
			break
		}
	}
	for _, tx := range []*wire.MsgTx{first, child} {
		if code, body := n.post("/tx", txHex(tx)); code != http.StatusOK {
			t.Fatalf("POST /tx: %d %s", code, body)
		}
	}
	bump := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - 50_000, PkScript: script.PkScript})
	code, body, p := n.submitPackage("", bump)
	if code != http.StatusOK || p.Msg != "success" {
		t.Fatalf("the replacement: %d %s", code, body)
	}
	wantStr := []string{want[0].String(), want[1].String()}
	if !slices.Equal(p.Replaced, wantStr) {
		t.Errorf("replaced-transactions %v, want bitcoind's order %v", p.Replaced, wantStr)
	}
}

// TestSubmitPackageAmountParsing: maxfeerate and maxburnamount are read as
// electrs reads them (no hexadecimal) and bitcoind then reads them (no more
// than ten digits before the point).
func TestSubmitPackageAmountParsing(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 88_004)
	a := spendWithChange(n.coin(), 1_000, script.PkScript, &wire.TxOut{Value: 1_000_000, PkScript: script.PkScript})
	one := `["` + txHex(a) + `"]`
	submit := func(q string) string { return `submitpackage RPC error: {"code":` + q }
	for _, c := range []struct{ query, want string }{
		{"?maxburnamount=1e10", submit(`-3,"message":"Invalid amount"}`)},
		{"?maxfeerate=1e12", submit(`-3,"message":"Invalid amount"}`)},
		{"?maxfeerate=0x1p-4", "Invalid maxfeerate"},
	} {
		code, body := n.post("/txs/package"+c.query, one)
		if code != http.StatusBadRequest || body != c.want {
			t.Errorf("POST /txs/package%s: %d %q, want 400 %q", c.query, code, body, c.want)
		}
	}
}

// countingIndex counts the index's transaction reads.
type countingIndex struct {
	Index
	reads atomic.Int64
}

func (c *countingIndex) RawTx(txid chainhash.Hash) ([]byte, indexers.TxLocation, error) {
	c.reads.Add(1)
	return c.Index.RawTx(txid)
}

// TestSubmitPackageReadsNoSpentTransactions: a member's fee is found from
// the chain's unspent outputs and btcd's pool, not by reading from the
// index each transaction it spends: a request cannot make the server read
// and hold thousands of transactions of its choosing.
func TestSubmitPackageReadsNoSpentTransactions(t *testing.T) {
	n := newTestNode(t, "")
	idx := &countingIndex{Index: n.backend}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{Listeners: []net.Listener{hl}, CostHardLimit: -1}, idx, n.h.Chain)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	// Every confirmed transaction's outputs, spent or not.
	var ops []wire.OutPoint
	seen := map[chainhash.Hash]bool{}
	_, tipH := n.h.Tip()
	for h := int32(1); h <= tipH; h++ {
		b, err := n.h.Chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range b.Transactions() {
			if !seen[*tx.Hash()] {
				seen[*tx.Hash()] = true
				ops = append(ops, wire.OutPoint{Hash: *tx.Hash()})
			}
		}
	}
	// One member of ~2,500 inputs: over 400,000 WU, non-standard. Its
	// inputs are unsigned: btcd would refuse it in any case.
	tx := wire.NewMsgTx(2)
	for i := 0; i < 2_500; i++ {
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: ops[i%len(ops)], Sequence: wire.MaxTxInSequenceNum})
	}
	tx.AddTxOut(&wire.TxOut{Value: 1_000, PkScript: []byte{0x51}})
	if w := blockchain.GetTransactionWeight(btcutil.NewTx(tx)); w <= 400_000 {
		t.Fatalf("weight %d", w)
	}
	body, _ := json.Marshal([]string{txHex(tx)})
	resp, err := http.Post("http://"+hl.Addr().String()+"/txs/package", "text/plain", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if r := idx.reads.Load(); r != 0 {
		t.Errorf("a member of %d inputs over the standard weight made %d index reads of the transactions it spends "+
			"(distinct confirmed txids available: %d) before it was refused: %d %.200s",
			len(tx.TxIn), r, len(ops), resp.StatusCode, answer)
	}
}

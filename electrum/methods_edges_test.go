// Method answers at their documented edges: limits, shapes, version parts.

package electrum

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// TestFeaturesAndAddPeerAnswers pins two answers of docs/PROTOCOL.md §5:
// server.features' hosts is an object ({} when none is configured: the
// spec's hosts is a MUST key holding a dict, which peers and clients
// iterate), and server.add_peer declines (false): the server discovers and
// advertises no peers.
func TestFeaturesAndAddPeerAnswers(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	var f map[string]json.RawMessage
	c.must(&f, "server.features")
	if string(f["hosts"]) != "{}" {
		t.Fatalf("features hosts %s, want {}", f["hosts"])
	}
	res, rerr := c.call("server.add_peer", map[string]any{"hosts": map[string]any{"example.org": map[string]any{"tcp_port": 50001}}})
	if rerr != nil || string(res) != "false" {
		t.Fatalf("add_peer answered %s %v, want false", res, rerr)
	}

	hosts := map[string]HostPorts{"electrum.example.org": {}}
	fx2 := newFixture(t, func(c *Config) { c.Hosts = hosts })
	c2 := fx2.client(t, "1.6")
	var f2 struct {
		Hosts map[string]json.RawMessage `json:"hosts"`
	}
	c2.must(&f2, "server.features")
	if _, ok := f2.Hosts["electrum.example.org"]; !ok || len(f2.Hosts) != 1 {
		t.Fatalf("features hosts %v, want the configured host", f2.Hosts)
	}
}

// TestFeeHistogramEmptyIsList pins that mempool.get_fee_histogram answers
// an empty list, never null, when the backend has no histogram (a Backend
// returning nil, as the fake does with an empty mempool): the spec's answer
// is an array (docs/PROTOCOL.md §5, mempool.get_fee_histogram), and
// Electrum checks it is one and drops a server whose answer is not.
func TestFeeHistogramEmptyIsList(t *testing.T) {
	fx := newFixture(t, nil)
	fx.f.mu.Lock()
	fx.f.hist = nil
	fx.f.mu.Unlock()
	for _, v := range []string{"1.4", "1.6"} {
		c := fx.client(t, v)
		res, rerr := c.call("mempool.get_fee_histogram")
		if rerr != nil || string(res) != "[]" {
			t.Fatalf("at %s: histogram %s %v, want []", v, res, rerr)
		}
	}
}

// TestBlockHeadersCountCappedAtMax pins block.headers' cap (docs/PROTOCOL.md
// §5, as ElectrumX's MAX_CHUNK_SIZE): a request for more than 2016 headers
// is answered the first 2016 of them, with "max": 2016, in both forms.
func TestBlockHeadersCountCappedAtMax(t *testing.T) {
	f := newFakeBackend()
	for i := 0; i < DefaultHeadersMax+20; i++ {
		f.mine(p2wpkh(0xab))
	}
	_, addr := startServer(t, f, nil)
	c := dial(t, addr)
	c.negotiate("1.4")
	var old struct {
		Count int    `json:"count"`
		Hex   string `json:"hex"`
		Max   int    `json:"max"`
	}
	c.must(&old, "blockchain.block.headers", 1, DefaultHeadersMax+10)
	if old.Count != DefaultHeadersMax || len(old.Hex) != 160*DefaultHeadersMax || old.Max != DefaultHeadersMax {
		t.Fatalf("1.4: count %d, %d hex chars, max %d; want %d headers", old.Count, len(old.Hex), old.Max, DefaultHeadersMax)
	}
	last, err := f.BlockHeader(DefaultHeadersMax)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := headerHex(&last)
	if old.Hex[len(old.Hex)-160:] != want {
		t.Fatal("1.4: the last header is not the one at height 2016")
	}
	c16 := dial(t, addr)
	c16.negotiate("1.6")
	var list struct {
		Count   int      `json:"count"`
		Headers []string `json:"headers"`
		Max     int      `json:"max"`
	}
	c16.must(&list, "blockchain.block.headers", 0, 1_000_000)
	if list.Count != DefaultHeadersMax || len(list.Headers) != DefaultHeadersMax || list.Max != DefaultHeadersMax {
		t.Fatalf("1.6: count %d, %d headers, max %d; want %d", list.Count, len(list.Headers), list.Max, DefaultHeadersMax)
	}
}

// distinctFees is the fake chain with a mempool fee policy whose three
// rates differ, so that an answer naming one by another's key shows.
type distinctFees struct{ *fakeBackend }

func (distinctFees) MempoolInfo() MempoolInfo {
	return MempoolInfo{MempoolMinFee: 0.00003, MinRelayTxFee: 0.00001, IncrementalRelayFee: 0.00002}
}

// TestMempoolInfoKeys pins mempool.get_info (1.6): each of
// mempoolminfee, minrelaytxfee and incrementalrelayfee is the backend's
// rate of that name (docs/PROTOCOL.md §5, from getmempoolinfo).
func TestMempoolInfoKeys(t *testing.T) {
	fx := newFixtureChain(t)
	fx.s, fx.addr = startServer(t, distinctFees{fx.f}, nil)
	c := fx.client(t, "1.6")
	var mi map[string]float64
	c.must(&mi, "mempool.get_info")
	if len(mi) != 3 || mi["mempoolminfee"] != 0.00003 || mi["minrelaytxfee"] != 0.00001 || mi["incrementalrelayfee"] != 0.00002 {
		t.Fatalf("mempool.get_info %v, want mempoolminfee 0.00003, minrelaytxfee 0.00001, incrementalrelayfee 0.00002", mi)
	}
}

// TestBroadcastPackageShapeLimits pins the package shapes Bitcoin Core's
// submitpackage takes, which broadcast_package follows (methods_tx.go;
// docs/PROTOCOL.md §5): up to MaxPackageTxs (25, Core's
// MAX_PACKAGE_COUNT) members, the largest accepted; a package holding one
// transaction twice refused whole ("package contains duplicate
// transactions"); a child with its parents where one parent spends another
// refused whole ("parents depend on each other"). A refused package puts
// nothing in the mempool.
func TestBroadcastPackageShapeLimits(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.6")
	pooled := func() int {
		fx.f.mu.RLock()
		defer fx.f.mu.RUnlock()
		return len(fx.f.mempool)
	}
	coin := func() wire.OutPoint {
		fx.f.mine(fx.a)
		fx.f.mu.RLock()
		defer fx.f.mu.RUnlock()
		return wire.OutPoint{Hash: fx.f.blocks[len(fx.f.blocks)-1].Transactions[0].TxHash(), Index: 0}
	}
	raws := func(txs ...*wire.MsgTx) []string {
		var out []string
		for _, tx := range txs {
			out = append(out, txHex(tx))
		}
		return out
	}
	const rejected = "the tx package was rejected by network rules.\n\n"

	// One transaction twice.
	lone := spend([]wire.OutPoint{coin()}, wire.NewTxOut(49_0000_0000, fx.b))
	before := pooled()
	_, rerr := c.call("blockchain.transaction.broadcast_package", raws(lone, lone))
	if want := rejected + "package contains duplicate transactions"; rerr == nil || rerr.Code != codeBadRequest || rerr.Message != want {
		t.Fatalf("duplicate members: %v, want code %d %q", rerr, codeBadRequest, want)
	}
	if n := pooled() - before; n != 0 {
		t.Fatalf("duplicate members: %d transactions reached the mempool", n)
	}

	// A child spending both parents, one parent spending the other.
	p1 := spend([]wire.OutPoint{coin()}, wire.NewTxOut(20_0000_0000, fx.b), wire.NewTxOut(20_0000_0000, fx.b))
	p2 := spend([]wire.OutPoint{{Hash: p1.TxHash(), Index: 0}}, wire.NewTxOut(19_0000_0000, fx.c))
	kid := spend([]wire.OutPoint{{Hash: p1.TxHash(), Index: 1}, {Hash: p2.TxHash(), Index: 0}}, wire.NewTxOut(38_0000_0000, fx.c))
	_, rerr = c.call("blockchain.transaction.broadcast_package", raws(p1, p2, kid))
	if want := rejected + "package topology disallowed. not child-with-parents or parents depend on each other."; rerr == nil || rerr.Code != codeBadRequest || rerr.Message != want {
		t.Fatalf("a parent spending another: %v, want code %d %q", rerr, codeBadRequest, want)
	}
	if n := pooled() - before; n != 0 {
		t.Fatalf("a parent spending another: %d transactions reached the mempool", n)
	}

	// 24 parents and their child: the largest package, accepted.
	var parents []*wire.MsgTx
	var spent []wire.OutPoint
	for i := 0; i < MaxPackageTxs-1; i++ {
		p := spend([]wire.OutPoint{coin()}, wire.NewTxOut(49_0000_0000, fx.b))
		parents = append(parents, p)
		spent = append(spent, wire.OutPoint{Hash: p.TxHash(), Index: 0})
	}
	child := spend(spent, wire.NewTxOut(int64(MaxPackageTxs-1)*48_0000_0000, fx.c))
	var pr map[string]any
	c.must(&pr, "blockchain.transaction.broadcast_package", raws(append(parents, child)...))
	if pr["success"] != true {
		t.Fatalf("a package of %d: %v", MaxPackageTxs, pr)
	}
	if n := pooled() - before; n != MaxPackageTxs {
		t.Fatalf("a package of %d: %d transactions reached the mempool", MaxPackageTxs, n)
	}
	// One more member is over the limit.
	extra := spend([]wire.OutPoint{coin()}, wire.NewTxOut(49_0000_0000, fx.b))
	_, rerr = c.call("blockchain.transaction.broadcast_package", raws(append([]*wire.MsgTx{extra}, append(parents, child)...)...))
	if rerr == nil || rerr.Code != codeBadRequest {
		t.Fatalf("a package of %d: %v", MaxPackageTxs+1, rerr)
	}
}

// TestListUnspentLimitCountsMempool pins that listunspent's limit is of the
// answer, confirmed and unconfirmed outputs together (methods_scripthash.go
// hListUnspent; docs/PROTOCOL.md §5): a script whose confirmed outputs are
// within the limit but which, with its mempool outputs, has one more than
// it is answered "response too large", and one fewer is served.
func TestListUnspentLimitCountsMempool(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		// The fake's outputs change below without a new tip.
		c.AnswerCache = -1
	})
	limit := fx.s.cfg.unspentLimit()
	own, _, err := fx.f.Unspent(fx.shC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mem := len(fx.f.MempoolUnspent(fx.shC))
	if mem == 0 {
		t.Fatal("the fixture's C has no mempool outputs")
	}
	c := fx.client(t, "1.4")
	// One over the limit only with the mempool's outputs counted.
	fx.f.setExtraUnspent(fx.shC, limit+1-len(own)-mem)
	if _, rerr := c.call("blockchain.scripthash.listunspent", fx.shC.String()); rerr == nil || rerr.Code != codeInvalidRequest ||
		rerr.Message != fmt.Sprintf("response too large (over %d bytes)", minMaxSend) {
		t.Fatalf("listunspent one over the limit (mempool outputs counted): %v", rerr)
	}
	// At the limit: served, every output.
	fx.f.setExtraUnspent(fx.shC, limit-len(own)-mem)
	var utxos []unspentItem
	c.must(&utxos, "blockchain.scripthash.listunspent", fx.shC.String())
	if len(utxos) != limit {
		t.Fatalf("unspent list at the limit has %d entries, want %d", len(utxos), limit)
	}
	zero := 0
	for _, u := range utxos {
		if u.Height == 0 {
			zero++
		}
	}
	if zero != mem {
		t.Fatalf("%d unconfirmed outputs in the answer, want %d", zero, mem)
	}
}

// TestVersionFourPartsRefused pins that a protocol version of more than
// three numbers is no version (version.go parseVersion: "1.4" or "1.4.2"
// only): the client is told "unsupported protocol version" (code 1, as
// ElectrumX's phandle_server_version, docs/PROTOCOL.md §3) and disconnected,
// not answered an internal error.
func TestVersionFourPartsRefused(t *testing.T) {
	fx := newFixture(t, nil)
	for _, params := range []string{`["x","1.4.2.1"]`, `["x",["1.4","1.6.0.0"]]`} {
		c := dial(t, fx.addr)
		r := c.await(c.sendExpect("1", `{"jsonrpc":"2.0","id":1,"method":"server.version","params":`+params+`}`))
		if r.Error == nil || r.Error.Code != codeBadRequest || !strings.Contains(r.Error.Message, "unsupported protocol version") {
			t.Fatalf("%s: want code %d unsupported protocol version, got %s %+v", params, codeBadRequest, r.Result, r.Error)
		}
		if !c.closedByServer() {
			t.Fatalf("%s: no common version must close the connection", params)
		}
	}
}

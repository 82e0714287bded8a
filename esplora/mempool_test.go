package esplora

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

func txHex(tx *wire.MsgTx) string {
	var b bytes.Buffer
	_ = tx.Serialize(&b)
	return hex.EncodeToString(b.Bytes())
}

// TestMempoolAndBroadcast broadcasts a transaction paying a new script
// twice and one spending it, checks every view of them while unconfirmed
// (against the Electrum server's for the same script), then mines them.
func TestMempoolAndBroadcast(t *testing.T) {
	n := newTestNode(t, "")
	el := n.dialElectrum()
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 99_999)
	sh := indexers.ScriptHashFromScript(script.PkScript)
	esh := hex.EncodeToString(sh[:])

	coin := n.coin()
	tx1 := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: 50_000_000, PkScript: script.PkScript},
		&wire.TxOut{Value: coin.Value - 50_000_000 - 1000, PkScript: script.PkScript})
	code, body := n.post("/tx", txHex(tx1))
	if code != http.StatusOK || body != tx1.TxHash().String() {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	txid1 := body
	// Broadcast again, as wallets do: answered as the first time
	// (bitcoind's sendrawtransaction).
	if code, body := n.post("/tx", txHex(tx1)); code != http.StatusOK || body != txid1 {
		t.Fatalf("POST /tx again: %d %s", code, body)
	}
	var v txValue
	n.getJSON("/tx/"+txid1, &v)
	if v.Fee != 1000 || v.Status.Confirmed || v.Vin[0].Prevout == nil || v.Vin[0].Prevout.Value != coin.Value {
		t.Fatalf("unconfirmed tx: %+v", v)
	}
	if got := n.getText("/tx/" + txid1 + "/status"); got != `{"confirmed":false}` {
		t.Fatalf("status: %s", got)
	}
	var backlog struct {
		Count        int          `json:"count"`
		Vsize        int64        `json:"vsize"`
		TotalFee     int64        `json:"total_fee"`
		FeeHistogram [][2]float64 `json:"fee_histogram"`
	}
	n.getJSON("/mempool", &backlog)
	if backlog.Count != 1 || backlog.TotalFee != 1000 || backlog.Vsize != v.Weight/4 || len(backlog.FeeHistogram) != 1 ||
		backlog.FeeHistogram[0][1] != float64(v.Weight/4) {
		t.Fatalf("/mempool: %+v", backlog)
	}
	var txids []string
	n.getJSON("/mempool/txids", &txids)
	if len(txids) != 1 || txids[0] != txid1 {
		t.Fatalf("/mempool/txids: %v", txids)
	}

	// A child spending the first output.
	tx2 := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: tx1.TxHash(), Index: 0}, Value: 50_000_000, Script: &script}},
		&wire.TxOut{Value: 50_000_000 - 2000, PkScript: testchain.NewSpendableScript(testchain.KindP2SH, 88_888).PkScript})
	if code, body := n.post("/tx", txHex(tx2)); code != http.StatusOK {
		t.Fatalf("POST child: %d %s", code, body)
	}
	txid2 := tx2.TxHash().String()
	var recent []txOverview
	n.getJSON("/mempool/recent", &recent)
	// value is what the inputs spend, as electrs counts it.
	if len(recent) != 2 || recent[0].TxID != txid2 || recent[0].Fee != 2000 || recent[0].Value != 50_000_000 {
		t.Fatalf("/mempool/recent: %+v", recent)
	}
	var spends []spendValue
	n.getJSON("/tx/"+txid1+"/outspends", &spends)
	if len(spends) != 2 || !spends[0].Spent || spends[0].TxID != txid2 || *spends[0].Vin != 0 || spends[0].Status.Confirmed || spends[1].Spent {
		t.Fatalf("outspends while unconfirmed: %+v", spends)
	}

	var stats struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	n.getJSON("/scripthash/"+esh, &stats)
	wantMem := scriptStats{FundedTxoCount: 2, FundedTxoSum: coin.Value - 1000, SpentTxoCount: 1, SpentTxoSum: 50_000_000, TxCount: 2}
	if stats.ChainStats != (scriptStats{}) || stats.MempoolStats != wantMem {
		t.Fatalf("stats while unconfirmed: %+v", stats)
	}
	var balance struct {
		Unconfirmed int64 `json:"unconfirmed"`
	}
	el.call(t, "blockchain.scripthash.get_balance", []any{sh.String()}, &balance)
	if balance.Unconfirmed != wantMem.FundedTxoSum-wantMem.SpentTxoSum {
		t.Fatalf("Electrum unconfirmed balance %d, stats %+v", balance.Unconfirmed, wantMem)
	}
	var elMempool []struct {
		TxHash string `json:"tx_hash"`
	}
	el.call(t, "blockchain.scripthash.get_mempool", []any{sh.String()}, &elMempool)
	var memTxs []txValue
	n.getJSON("/scripthash/"+esh+"/txs/mempool", &memTxs)
	if len(memTxs) != len(elMempool) || len(memTxs) != 2 {
		t.Fatalf("txs/mempool %d, Electrum %d", len(memTxs), len(elMempool))
	}
	for i := range memTxs {
		if memTxs[i].TxID != elMempool[i].TxHash {
			t.Fatalf("txs/mempool[%d] %s, Electrum %s", i, memTxs[i].TxID, elMempool[i].TxHash)
		}
	}
	var utxos []utxoValue
	n.getJSON("/scripthash/"+esh+"/utxo", &utxos)
	if len(utxos) != 1 || utxos[0].TxID != txid1 || utxos[0].Vout != 1 || utxos[0].Status.Confirmed {
		t.Fatalf("utxo while unconfirmed: %+v", utxos)
	}

	block := n.mineMempool()
	height := n.h.Chain.BestSnapshot().Height
	n.getJSON("/tx/"+txid1, &v)
	if !v.Status.Confirmed || *v.Status.BlockHeight != height || v.Status.BlockHash != block.Hash().String() {
		t.Fatalf("mined tx status: %+v", v.Status)
	}
	n.getJSON("/scripthash/"+esh, &stats)
	wantMem.SpentTxoSum, wantMem.SpentTxoCount = 50_000_000, 1
	if stats.ChainStats != wantMem || stats.MempoolStats != (scriptStats{}) {
		t.Fatalf("stats once mined: %+v", stats)
	}
	n.getJSON("/tx/"+txid1+"/outspends", &spends)
	if !spends[0].Spent || spends[0].TxID != txid2 || !spends[0].Status.Confirmed || *spends[0].Status.BlockHeight != height {
		t.Fatalf("outspends once mined: %+v", spends)
	}
	n.getJSON("/scripthash/"+esh+"/utxo", &utxos)
	if len(utxos) != 1 || !utxos[0].Status.Confirmed || *utxos[0].Status.BlockHeight != height {
		t.Fatalf("utxo once mined: %+v", utxos)
	}
	n.getJSON("/mempool/txids", &txids)
	if len(txids) != 0 {
		t.Fatalf("mempool after mining: %v", txids)
	}

	// A confirmed transaction again: bitcoind's -27.
	code, body = n.post("/tx", txHex(tx2))
	if want := `sendrawtransaction RPC error: {"code":-27,"message":"Transaction already in block chain"}`; code != http.StatusBadRequest || body != want {
		t.Fatalf("broadcast of a confirmed transaction: %d %s, want 400 %s", code, body, want)
	}
}

// TestBadInput checks Esplora's status codes and messages for malformed
// and unknown input, and that connections are kept alive.
func TestBadInput(t *testing.T) {
	n := newTestNode(t, "/api")
	tip := n.h.Chain.BestSnapshot()
	block, err := n.h.Chain.BlockByHeight(tip.Height - 5)
	if err != nil {
		t.Fatal(err)
	}
	bh := block.Hash().String()
	var big string
	for h := tip.Height; h > 0; h-- {
		b, _ := n.h.Chain.BlockByHeight(h)
		if len(b.Transactions()) > chainTxsPerPage {
			big = b.Hash().String()
		}
	}
	known := block.Transactions()[0].Hash().String()
	unknown := chainhash.DoubleHashH([]byte("nowhere")).String()
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/tx/zz", 400, "Invalid hex string"},
		{"/tx/" + unknown[:63], 400, "Invalid hex string"},
		{"/tx/" + unknown, 404, "Transaction not found"},
		{"/tx/" + unknown + "/hex", 404, "Transaction not found"},
		{"/tx/" + unknown + "/status", 200, `{"confirmed":false}`},
		{"/tx/" + unknown + "/merkle-proof", 404, "Transaction not found or is unconfirmed"},
		{"/tx/" + unknown + "/merkleblock-proof", 404, "Transaction not found or is unconfirmed"},
		{"/tx/" + unknown + "/outspends", 404, "Transaction not found"},
		{"/tx/" + unknown + "/outspend/0", 200, `{"spent":false}`},
		{"/tx/" + known + "/outspend/x", 400, "Invalid number"},
		{"/tx/" + known + "/outspend/99", 200, `{"spent":false}`},
		{"/block-height/99999", 404, "Block not found"},
		{"/block-height/-1", 400, "Invalid number"},
		{"/block-height/abc", 400, "Invalid number"},
		{"/blocks/99999", 404, "Block not found"},
		{"/block/" + unknown, 404, "Block not found"},
		{"/block/" + unknown + "/header", 404, "Block not found"},
		{"/block/" + unknown + "/status", 200, `{"in_best_chain":false,"height":null,"next_best":null}`},
		{"/block/xyz", 400, "Invalid hex string"},
		{"/block/" + bh + "/txid/99", 404, "tx index out of range"},
		{"/block/" + bh + "/txid/x", 400, "Invalid number"},
		// As electrs: the range first (404), then the page boundary
		// (400, in electrs' spelling).
		{"/block/" + big + "/txs/5", 400, "start index must be a multipication of 25"},
		{"/block/" + big + "/txs/1005", 404, "start index out of range"},
		{"/block/" + big + "/txs/1000", 404, "start index out of range"},
		{"/address/bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", 400, "Address on invalid network"},
		{"/address/notanaddress/utxo", 400, "Invalid Bitcoin address"},
		{"/scripthash/zz", 400, "Invalid hex string"},
		{"/scripthash/abcd/txs", 400, "Invalid scripthash"},
		{"/nope", 404, `endpoint does not exist "/nope"`},
		{"/blocks/tip/height/", 404, `endpoint does not exist "/blocks/tip/height/"`},
	} {
		code, body := n.get(c.path)
		if code != c.code || body != c.body {
			t.Errorf("GET %s: %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
	resp, err := n.http.Get(strings.TrimSuffix(n.base, "/api") + "/blocks/tip/height")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a path outside the prefix: %d", resp.StatusCode)
	}
	if code, body := n.post("/tx", "zz"); code != 400 || body != `sendrawtransaction RPC error: {"code":-22,"message":"TX decode failed. Make sure the tx has at least one input."}` {
		t.Errorf("POST /tx zz: %d %s", code, body)
	}
	if code, body := n.post("/tx", strings.Repeat("00", DefaultMaxBody/2+1)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize POST /tx: %d %s", code, body)
	}

	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a CORS header without CORS configured")
	}

	// Keep-alive: the second request reuses the first one's connection.
	var reused []bool
	for i := 0; i < 2; i++ {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = append(reused, info.Reused) }}
		req, _ := http.NewRequest(http.MethodGet, n.base+"/blocks/tip/hash", nil)
		resp, err := n.http.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = bytes.NewBuffer(nil).ReadFrom(resp.Body)
		resp.Body.Close()
	}
	if len(reused) != 2 || !reused[1] {
		t.Errorf("connection reuse: %v", reused)
	}

	// A server with electrs' limits at their smallest refuses longer
	// histories and unspent sets with electrs' text.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	small := New(Config{Listeners: []net.Listener{l}, MaxHistory: 1, MaxUtxos: 1, CostHardLimit: -1}, n.backend, n.h.Chain)
	if err := small.Start(); err != nil {
		t.Fatal(err)
	}
	defer small.Shutdown(context.Background())
	o := buildOracle(t, n.h.Chain)
	limited := false
	for sh, st := range o.stats {
		if st.TxCount < 2 || st.FundedTxoCount-st.SpentTxoCount < 2 || !indexedScript(o, sh) {
			continue
		}
		for _, path := range []string{"", "/txs/chain", "/utxo"} {
			resp, err := n.http.Get("http://" + l.Addr().String() + "/scripthash/" + hex.EncodeToString(sh[:]) + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || string(b) != "Too many history entries" {
				t.Errorf("%s with the limits at 1: %d %s", path, resp.StatusCode, b)
			}
		}
		limited = true
		break
	}
	if !limited {
		t.Fatal("no script with two unspent outputs to check the limits with")
	}

	// A client that has gone gets nothing computed for it: its stats stop
	// at the first transaction they would read.
	for sh, st := range o.stats {
		if st.TxCount < 2 || !indexedScript(o, sh) {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest(http.MethodGet, "/api/scripthash/"+hex.EncodeToString(sh[:])+"/txs/chain", nil).WithContext(ctx)
		rec := httptest.NewRecorder()
		n.srv.ServeHTTP(rec, req)
		if rec.Body.Len() != 0 {
			t.Errorf("an answer for a client that has gone: %s", rec.Body.String())
		}
		break
	}

	// The metrics count every request above by endpoint and status.
	families, err := n.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "esplora_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			counts[key] = m.GetCounter().GetValue()
		}
	}
	for key, want := range map[string]float64{
		"code=400 endpoint=/tx/: ":                    2,
		"code=404 endpoint=/tx/: ":                    1,
		"code=404 endpoint=unknown ":                  3,
		"code=413 endpoint=/tx ":                      1,
		"code=200 endpoint=/blocks/tip/hash ":         2,
		"code=gone endpoint=/scripthash/:/txs/chain ": 1,
	} {
		if counts[key] != want {
			t.Errorf("esplora_requests_total{%s} = %v, want %v (all: %v)", key, counts[key], want, counts)
		}
	}
}

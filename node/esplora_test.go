package node

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestEsploraServesTheIndex runs a node with --esploralisten under a path:
// the Esplora API answers from the same index as the Electrum server, and
// broadcasts through the node's relay.
func TestEsploraServesTheIndex(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.EsploraListeners = []string{"127.0.0.1:0"}
	cfg.EsploraPath = "/api/"
	cfg.EsploraCORS = "*"
	n := startNode(t, cfg)
	generate(t, n, 101)
	addrs := n.EsploraAddrs()
	if len(addrs) != 1 {
		t.Fatalf("Esplora listeners: %v", addrs)
	}
	base := "http://" + addrs[0].String() + "/api"
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(base+"/tx", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/blocks/tip/height"); code != 200 || body != "101" {
		t.Fatalf("tip height: %d %s", code, body)
	}
	resp, err := http.Get(base + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("--esploracors=*: %v", resp.Header)
	}

	c := dialElectrum(t, n)
	c.call("server.version", "node-test", "1.4")
	addr := testMiningAddr(t).EncodeAddress()
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript)
	type stats struct {
		FundedTxoCount int   `json:"funded_txo_count"`
		FundedTxoSum   int64 `json:"funded_txo_sum"`
		SpentTxoCount  int   `json:"spent_txo_count"`
		SpentTxoSum    int64 `json:"spent_txo_sum"`
		TxCount        int   `json:"tx_count"`
	}
	var st struct {
		Address      string `json:"address"`
		ChainStats   stats  `json:"chain_stats"`
		MempoolStats stats  `json:"mempool_stats"`
	}
	code, body := get("/address/" + addr)
	if code != 200 {
		t.Fatalf("address: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	balance, _ := c.call("blockchain.scripthash.get_balance", sh.String()).(map[string]any)
	if st.Address != addr || st.ChainStats.TxCount != 101 || st.ChainStats.FundedTxoCount != 101 ||
		float64(st.ChainStats.FundedTxoSum-st.ChainStats.SpentTxoSum) != balance["confirmed"] {
		t.Fatalf("address stats %+v, Electrum balance %v", st, balance)
	}

	tx := spendCoinbase(t, n, 1, 20_000)
	var buf bytes.Buffer
	_ = tx.MsgTx().Serialize(&buf)
	if code, body := post(hex.EncodeToString(buf.Bytes())); code != 200 || body != tx.Hash().String() {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	if !n.TxPool().HaveTransaction(tx.Hash()) {
		t.Fatal("the broadcast transaction is not in the mempool")
	}
	mem, _ := c.call("blockchain.scripthash.get_mempool", sh.String()).([]any)
	if code, body := get("/address/" + addr + "/txs/mempool"); code != 200 || len(mem) != 1 ||
		!strings.Contains(body, tx.Hash().String()) {
		t.Fatalf("txs/mempool: %d %s; Electrum %v", code, body, mem)
	}
	// A conflicting spend is refused with the node's policy message.
	conflict := spendCoinbase(t, n, 1, 30_000)
	buf.Reset()
	_ = conflict.MsgTx().Serialize(&buf)
	if code, body := post(hex.EncodeToString(buf.Bytes())); code != 400 ||
		!strings.HasPrefix(body, `sendrawtransaction RPC error: {"code":-26,"message":`) {
		t.Fatalf("conflicting POST /tx: %d %s", code, body)
	}

	generate(t, n, 1)
	if code, body := get("/tx/" + tx.Hash().String() + "/status"); code != 200 ||
		!strings.HasPrefix(body, `{"confirmed":true,"block_height":102,`) {
		t.Fatalf("status once mined: %d %s", code, body)
	}
}

// TestEsploraOptions checks the options' validation.
func TestEsploraOptions(t *testing.T) {
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.ElectrumIndex = false; c.ElectrumListeners = nil }, "need --electrumindex"},
		{func(c *Config) { c.EsploraPath = "api" }, "want a path such as /api"},
		{func(c *Config) { c.EsploraListeners = []string{"127.0.0.1:http x"} }, "--esploralisten"},
		{func(c *Config) { c.EsploraMaxUtxos = -1 }, "must not be negative"},
		{func(c *Config) { c.EsploraMaxHistory = -1 }, "must not be negative"},
		{func(c *Config) { c.EsploraMaxConnections = -1 }, "--esploramaxconnections=-1: must be from 0"},
		{func(c *Config) { c.EsploraMaxConnections = maxEsploraConnections + 1 }, "--esploramaxconnections=1048577: must be from 0"},
	} {
		cfg := testConfig(t, t.TempDir(), true)
		cfg.EsploraListeners = []string{"127.0.0.1"}
		c.mod(cfg)
		err := cfg.Normalize()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
	cfg := testConfig(t, t.TempDir(), true)
	cfg.EsploraListeners = []string{"127.0.0.1"}
	if err := cfg.Normalize(); err != nil || cfg.EsploraListeners[0] != "127.0.0.1:3000" {
		t.Fatalf("default port: %v %v", err, cfg.EsploraListeners)
	}
}

// TestEsploraTLS serves the Esplora API over TLS with the Electrum
// certificate, created at start when missing.
func TestEsploraTLS(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.EsploraTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert = filepath.Join(dir, "e.cert")
	cfg.ElectrumKey = filepath.Join(dir, "e.key")
	n := startNode(t, cfg)
	generate(t, n, 3)
	pemCert, err := os.ReadFile(cfg.ElectrumCert)
	if err != nil {
		t.Fatalf("certificate not written: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCert) {
		t.Fatal("written certificate is not PEM")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	resp, err := client.Get("https://" + n.EsploraAddrs()[0].String() + "/blocks/tip/height")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "3" || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("tip height over TLS: %d %s", resp.StatusCode, b)
	}
}

// TestEsploraPortInUse: an Esplora address another program holds is
// refused by the start-up checks, and one taken after them (while the
// index caught up) stops the start, each naming the option.
func TestEsploraPortInUse(t *testing.T) {
	addr := freePort(t)
	want := "--esploralisten=" + addr + ": "
	taken, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, t.TempDir(), true)
	cfg.EsploraListeners = []string{addr}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckListenersFree(); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("the start-up check with the Esplora port taken: %v", err)
	}
	taken.Close()

	cfg = testConfig(t, t.TempDir(), true)
	cfg.EsploraListeners = []string{addr}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if taken, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if err := n.Start(); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("start with the Esplora port taken: %v", err)
	}
}

package node

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/gorilla/websocket"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// scrape reads the node's Prometheus endpoint (text exposition format) and
// returns the value of the series name whose labels include want; for a
// histogram, its sample count (name_count).
func scrape(t *testing.T, n *Node, name string, want map[string]string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + n.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("metrics line %q", line)
		}
		metric, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
		if metric != name && metric != name+"_count" {
			continue
		}
		match := true
		for k, v := range want {
			match = match && strings.Contains(","+labels+",", ","+k+"=\""+v+"\",")
		}
		if !match {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		return f, true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return 0, false
}

// TestMetricsEndpoint scrapes a real node's --metricslisten endpoint and checks that the values move with the chain, the index, the mempool and the Electrum server.
func TestMetricsEndpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.MetricsListen = "127.0.0.1:0"
	cfg.ElectrumTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert, cfg.ElectrumKey = filepath.Join(dir, "e.cert"), filepath.Join(dir, "e.key")
	n := startNode(t, cfg)
	must := func(name string, labels map[string]string, want float64) {
		t.Helper()
		if got, ok := scrape(t, n, name, labels); !ok || got != want {
			t.Fatalf("%s%v = %v (present %v), want %v", name, labels, got, ok, want)
		}
	}
	must("btcd_chain_height", nil, 0)
	must("electrum_index_height", nil, 0)
	must("electrum_sessions", map[string]string{"transport": "tcp"}, 0)

	generate(t, n, 101)
	must("btcd_chain_height", nil, 101)
	must("electrum_index_height", nil, 101)
	must("electrum_index_progress", nil, 1)
	// The index's writer indexed every block of the new datadir, the
	// genesis block among them: 102.
	must("electrum_index_blocks_total", nil, 102)
	must("electrum_index_block_pass_seconds", map[string]string{"phase": "plan"}, 102)
	must("electrum_index_block_pass_seconds", map[string]string{"phase": "write"}, 102)
	if rows, _ := scrape(t, n, "electrum_index_rows", nil); rows < 101*2 {
		t.Fatalf("index rows %v after 101 blocks", rows)
	}
	if w, _ := scrape(t, n, "electrum_index_rows_written_total", nil); w < 101*4 {
		t.Fatalf("rows written %v after 101 blocks", w)
	}
	if b, _ := scrape(t, n, "electrum_index_bytes_written_total", nil); b < 101*100 {
		t.Fatalf("bytes written %v after 101 blocks", b)
	}

	c := dialElectrum(t, n)
	c.call("server.version", "metrics-test", "1.4")
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	c.call("blockchain.scripthash.subscribe", indexers.ScriptHashFromScript(pkScript).String())
	must("electrum_sessions", map[string]string{"transport": "tcp"}, 1)
	must("electrum_subscriptions", nil, 1)
	must("electrum_requests_total", map[string]string{"method": "blockchain.scripthash.subscribe"}, 1)
	must("electrum_request_duration_seconds", map[string]string{"method": "server.version"}, 1)

	must("btcd_mempool_transactions", nil, 0)
	tx := spendCoinbase(t, n, 1, 20_000)
	var buf bytes.Buffer
	if err := tx.MsgTx().Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	c.call("blockchain.transaction.broadcast", hex.EncodeToString(buf.Bytes()))
	c.notification("blockchain.scripthash.subscribe")
	must("btcd_mempool_transactions", nil, 1)
	if v, _ := scrape(t, n, "electrum_notifications_total", nil); v < 1 {
		t.Fatalf("notifications counted: %v", v)
	}
	if v, _ := scrape(t, n, "electrum_received_bytes_total", map[string]string{"transport": "tcp"}); v < 100 {
		t.Fatalf("bytes received: %v", v)
	}

	// Every series the Grafana dashboard plots is served.
	dashboard, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`\b(?:btcd|electrum|process|go)_[a-z0-9_]+`).FindAllString(string(dashboard), -1)
	if len(names) < 20 {
		t.Fatalf("only %d series found in the dashboard", len(names))
	}
	for _, name := range names {
		if _, ok := scrape(t, n, name, nil); !ok {
			t.Errorf("the dashboard plots %s, which the node does not serve", name)
		}
	}
}

// TestElectrumExemptNetsOnNode runs the per-IP session limit and cost throttling on a real node: by default loopback (a reverse proxy, a Tor daemon, the operator's tools) is exempt, many sessions are served and none is slowed by cost; with --electrumthrottleexempt a loopback session is stopped at the hard cost limit; with --electrumexemptnets=none the per-IP limit applies, and the refusal shows in getelectruminfo.
func TestElectrumExemptNetsOnNode(t *testing.T) {
	t.Run("default exempts loopback", func(t *testing.T) {
		cfg := testConfig(t, t.TempDir(), true)
		cfg.Electrum.MaxSessionsPerIP = 2
		n := startNode(t, cfg)
		for i := 0; i < 6; i++ {
			c := dialElectrum(t, n)
			c.call("server.version", "proxy-client", "1.4")
		}
		if info := (rpcBackend{n}).ElectrumInfo(); info.Sessions != 6 || info.Refused["max_sessions_per_ip"] != 0 {
			t.Fatalf("getelectruminfo %+v", info)
		}
	})
	// Cost: a session from loopback is never throttled by default, and is
	// with --electrumthrottleexempt.
	costly := func(t *testing.T, throttleExempt bool) *electrumClient {
		cfg := testConfig(t, t.TempDir(), true)
		cfg.Electrum.CostSoftLimit = 5
		cfg.Electrum.CostHardLimit = 20
		cfg.Electrum.RequestSleep = 10 * time.Millisecond
		cfg.Electrum.ThrottleExempt = throttleExempt
		n := startNode(t, cfg)
		c := dialElectrum(t, n)
		c.call("server.version", "tool", "1.4")
		return c
	}
	t.Run("loopback not throttled", func(t *testing.T) {
		c := costly(t, false)
		for i := 0; i < 60; i++ {
			c.call("blockchain.scripthash.get_balance", strings.Repeat("00", 32))
		}
	})
	t.Run("throttle exempt", func(t *testing.T) {
		c := costly(t, true)
		for i := 0; ; i++ {
			if i == 60 {
				t.Fatal("never stopped at the hard cost limit")
			}
			req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.get_balance","params":["%s"]}`+"\n", i, strings.Repeat("00", 32))
			if _, err := c.conn.Write([]byte(req)); err != nil {
				t.Fatal(err)
			}
			msg := c.read()
			if e, _ := msg["error"].(map[string]any); e != nil {
				if e["code"] != float64(-101) {
					t.Fatalf("error %v", e)
				}
				break
			}
		}
	})
	t.Run("none", func(t *testing.T) {
		cfg := testConfig(t, t.TempDir(), true)
		cfg.Electrum.MaxSessionsPerIP = 2
		cfg.Electrum.ExemptNets = []string{"none"}
		n := startNode(t, cfg)
		for i := 0; i < 2; i++ {
			dialElectrum(t, n).call("server.version", "client", "1.4")
		}
		c := dialElectrum(t, n)
		msg := c.read()
		if e, _ := msg["error"].(map[string]any); e == nil || e["code"] != float64(-101) {
			t.Fatalf("third session from one address: %v", msg)
		}
		if info := (rpcBackend{n}).ElectrumInfo(); info.Refused["max_sessions_per_ip"] != 1 {
			t.Fatalf("refusal not in getelectruminfo: %+v", info.Refused)
		}
	})
}

// adminClient is an rpcclient for the node's RPC server.
func adminClient(t *testing.T, n *Node, user, pass string) *rpcclient.Client {
	t.Helper()
	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: n.RPCAddrs()[0].String(), User: user, Pass: pass,
		HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	return c
}

// TestElectrumAdminRPC calls the operator's Electrum commands on a real node with rpcclient: sessions listed with their client names, a script hash described by address and by hash as a wallet sees it, a session closed, the TLS certificate reloaded; they need the RPC credentials and are unknown on the Electrum port.
func TestElectrumAdminRPC(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.ElectrumTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert = filepath.Join(dir, "e.cert")
	cfg.ElectrumKey = filepath.Join(dir, "e.key")
	n := startNode(t, cfg)
	generate(t, n, 3)
	rpc := adminClient(t, n, "user", "pass")

	wallet := dialElectrum(t, n)
	wallet.call("server.version", "Electrum 4.5.8", "1.4")
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript).String()
	walletStatus := wallet.call("blockchain.scripthash.subscribe", sh)

	raw, err := rpc.RawRequest(rpcext.GetElectrumSessionsMethod, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sessions []rpcext.ElectrumSession
	if err := json.Unmarshal(raw, &sessions); err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || sessions[0].ClientName != "Electrum 4.5.8" || sessions[0].Protocol != "1.4" ||
		sessions[0].Subscriptions != 1 || sessions[0].Transport != "tcp" || !sessions[0].Exempt ||
		sessions[0].Address != wallet.conn.LocalAddr().String() || sessions[0].BytesIn == 0 {
		t.Fatalf("getelectrumsessions: %s", raw)
	}

	for _, arg := range []string{testMiningAddr(t).EncodeAddress(), sh} {
		raw, err = rpc.RawRequest(rpcext.GetScriptHashInfoMethod, []json.RawMessage{jsonString(arg)})
		if err != nil {
			t.Fatalf("getscripthashinfo %s: %v", arg, err)
		}
		var info rpcext.ScriptHashInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		if info.ScriptHash != sh || info.HistoryLength != 3 || info.UnspentCount != 3 || info.IndexHeight != 3 ||
			info.Status == nil || *info.Status != walletStatus || info.Subscribers != 1 ||
			info.ConfirmedBalance != 3*50_0000_0000 {
			t.Fatalf("getscripthashinfo %s: %s (wallet status %v)", arg, raw, walletStatus)
		}
	}
	if _, err := rpc.RawRequest(rpcext.GetScriptHashInfoMethod, []json.RawMessage{jsonString("nonsense")}); err == nil {
		t.Fatal("getscripthashinfo accepted nonsense")
	}

	// The TLS certificate is reloaded; a broken one is refused.
	raw, err = rpc.RawRequest(rpcext.ReloadElectrumTLSMethod, nil)
	if err != nil {
		t.Fatalf("reloadelectrumtls: %v", err)
	}
	pemCert, _ := os.ReadFile(cfg.ElectrumCert)
	var cert rpcext.TLSCertificate
	if err := json.Unmarshal(raw, &cert); err != nil || cert.CertFile != cfg.ElectrumCert || cert.SHA256 != pemFingerprint(t, pemCert) {
		t.Fatalf("reloadelectrumtls: %s, %v", raw, err)
	}
	if err := os.WriteFile(cfg.ElectrumCert, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := rpc.RawRequest(rpcext.ReloadElectrumTLSMethod, nil); err == nil || !strings.Contains(err.Error(), "still using") {
		t.Fatalf("reloading a broken certificate: %v", err)
	}
	tc, err := tls.Dial("tcp", n.ElectrumAddrs()[electrum.TLS][0].String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS after a failed reload: %v", err)
	}
	tc.Close()

	// Not on the Electrum port.
	other := dialElectrum(t, n)
	other.call("server.version", "curious", "1.4")
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": rpcext.GetElectrumSessionsMethod, "params": []any{}})
	other.conn.Write(append(req, '\n'))
	if msg := other.read(); msg["error"] == nil {
		t.Fatalf("getelectrumsessions over the Electrum port: %v", msg)
	}

	// Credentials are required.
	if _, err := adminClient(t, n, "user", "wrong").RawRequest(rpcext.GetElectrumSessionsMethod, nil); err == nil {
		t.Fatal("getelectrumsessions without the credentials succeeded")
	}

	// Closing the wallet's session.
	id, _ := json.Marshal(sessions[0].ID)
	if _, err := rpc.RawRequest(rpcext.DisconnectElectrumSessionMethod, []json.RawMessage{id}); err != nil {
		t.Fatal(err)
	}
	wallet.conn.SetReadDeadline(time.Now().Add(testWait))
	if _, err := bufio.NewReader(wallet.conn).ReadByte(); err == nil {
		t.Fatal("the session is still open")
	}
	if _, err := rpc.RawRequest(rpcext.DisconnectElectrumSessionMethod, []json.RawMessage{id}); err == nil {
		t.Fatal("closing a closed session succeeded")
	}
	if info := (rpcBackend{n}).ElectrumInfo(); info.Disconnected["admin"] != 1 {
		t.Fatalf("admin disconnection not counted: %v", info.Disconnected)
	}
}

// jsonString encodes s as a JSON string.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// pemFingerprint is the hex SHA-256 of the first certificate in a PEM file.
func pemFingerprint(t *testing.T, pemCert []byte) string {
	t.Helper()
	block, _ := pem.Decode(pemCert)
	if block == nil {
		t.Fatal("no PEM block")
	}
	sum := sha256.Sum256(block.Bytes)
	return hex.EncodeToString(sum[:])
}

// TestElectrumBehindReverseProxy puts a real reverse proxy (net/http/httputil, which forwards WebSocket upgrades as nginx does) in front of the node's WebSocket listener: every wallet arrives from 127.0.0.1, and with the default exempt networks far more of them than --electrummaxsessionsperip are served.
func TestElectrumBehindReverseProxy(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.ElectrumListeners = nil
	cfg.ElectrumWSListeners = []string{"127.0.0.1:0"}
	cfg.Electrum.MaxSessionsPerIP = 2
	n := startNode(t, cfg)
	backend, err := url.Parse("http://" + n.ElectrumAddrs()[electrum.WS][0].String())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(backend))
	defer proxy.Close()

	const wallets = 10
	for i := 0; i < wallets; i++ {
		c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(proxy.URL, "http")+"/electrum", nil)
		if err != nil {
			t.Fatalf("wallet %d: %v", i, err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(testWait))
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["web wallet","1.4"]}`)); err != nil {
			t.Fatal(err)
		}
		_, msg, err := c.ReadMessage()
		if err != nil || !strings.Contains(string(msg), `"result"`) {
			t.Fatalf("wallet %d through the proxy: %s, %v", i, msg, err)
		}
	}
	sessions := electrumAdmin{n.srv}.Sessions()
	if len(sessions) != wallets {
		t.Fatalf("%d sessions, want %d", len(sessions), wallets)
	}
	for _, s := range sessions {
		if !strings.HasPrefix(s.Address, "127.0.0.1:") || s.Transport != "ws" || !s.Exempt || s.ClientName != "web wallet" {
			t.Fatalf("session behind the proxy: %+v", s)
		}
	}
}

// tapLog hands the log's stdout copy to w until the test ends.
func tapLog(t *testing.T, w io.Writer) {
	output.mu.Lock()
	old := output.stdout
	output.stdout = w
	output.mu.Unlock()
	t.Cleanup(func() {
		output.mu.Lock()
		output.stdout = old
		output.mu.Unlock()
	})
}

// triggerLog keeps what is logged and closes fired on the first line
// holding trigger.
type triggerLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	fired   chan struct{}
}

func (w *triggerLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.Contains(p, []byte(w.trigger)) && w.fired != nil {
		close(w.fired)
		w.fired = nil
	}
	return len(p), nil
}

func (w *triggerLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// OPERATIONS.md, "Enabling the index": the catch-up logs `Electrum index:
// caught up to height H (n tx in D)` at its end, and an interrupt keeps
// what was committed. A catch-up of 300 blocks interrupted (cfg.Interrupt,
// which the binary closes on SIGINT) after its first commit logs where it
// stopped, not that it caught up.
func TestInterruptedCatchUpLogsWhereItStopped(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir, false))
	if _, err := n.Generate(300, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	logged := &triggerLog{trigger: "committed", fired: stop}
	tapLog(t, logged)
	cfg := testConfig(t, dir, true)
	cfg.ElectrumCatchUpBatch = 1
	cfg.ElectrumProgress = time.Nanosecond
	cfg.Interrupt = stop
	n2, err := New(cfg)
	if err == nil {
		_ = n2.Stop()
		t.Fatalf("the catch-up was not interrupted:\n%s", logged)
	}
	if m := regexp.MustCompile(`caught up to height \d+`).FindString(logged.String()); m != "" {
		t.Errorf("the interrupted start-up (%v) logged %q; the chain is at height 300", err, m)
	}
	if !regexp.MustCompile(`Electrum index: stopped at height \d+ of 300 `).MatchString(logged.String()) {
		t.Errorf("the interrupted start-up (%v) does not log where it stopped:\n%s", err, logged)
	}
}

// scrapeOnLog reads the metrics endpoint, named by the "Prometheus metrics
// at" line, when the line holding trigger is logged: from the goroutine
// that logs it, which waits meanwhile.
type scrapeOnLog struct {
	url, trigger, scraped string
}

func (w *scrapeOnLog) Write(p []byte) (int, error) {
	s := string(p)
	if _, url, ok := strings.Cut(s, "Prometheus metrics at "); ok {
		w.url = strings.TrimSpace(url)
	}
	if w.scraped == "" && w.url != "" && strings.Contains(s, w.trigger) {
		if resp, err := http.Get(w.url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			w.scraped = string(b)
		}
	}
	return len(p), nil
}

// OPERATIONS.md, "Reading the metrics": the endpoint opens before the chain
// loads, and electrum_index_progress is 1 when the index has caught up.
// While the chain loads, before the catch-up of an index 300 blocks behind
// has named its target, the progress is 0, not 1.
func TestMetricsProgressNotCaughtUpWhileChainLoads(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir, false))
	if _, err := n.Generate(300, nil); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	scraper := &scrapeOnLog{trigger: "Loading block index"}
	tapLog(t, scraper)
	cfg := testConfig(t, dir, true)
	cfg.MetricsListen = "127.0.0.1:0"
	startNode(t, cfg)
	if scraper.scraped == "" {
		t.Fatalf("the endpoint was not read while the chain loaded (url %q)", scraper.url)
	}
	if got := regexp.MustCompile(`(?m)^electrum_index_progress .*$`).FindString(scraper.scraped); got != "electrum_index_progress 0" {
		t.Errorf("while the chain loads, with the index 300 blocks behind it, the endpoint serves %q", got)
	}
}

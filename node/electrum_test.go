package node

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/txscript/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// electrumClient is a minimal newline-delimited JSON-RPC client for tests.
type electrumClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	id   int
	// notes collects notifications read while waiting for responses.
	notes []map[string]any
}

// dialElectrum connects to the node's Electrum TCP listener.
func dialElectrum(t *testing.T, n *Node) *electrumClient {
	t.Helper()
	addrs := n.ElectrumAddrs()[electrum.TCP]
	if len(addrs) != 1 {
		t.Fatalf("Electrum TCP listeners: %v", n.ElectrumAddrs())
	}
	conn, err := net.Dial("tcp", addrs[0].String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &electrumClient{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// read returns the next message.
func (c *electrumClient) read() map[string]any {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(testWait))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var msg map[string]any
	if err := json.Unmarshal(line, &msg); err != nil {
		c.t.Fatalf("bad message %q: %v", line, err)
	}
	return msg
}

// call sends a request and returns its result, keeping notifications.
func (c *electrumClient) call(method string, params ...any) any {
	c.t.Helper()
	msg := c.rawCall(method, params...)
	if id, _ := msg["id"].(float64); int(id) != c.id {
		c.t.Fatalf("response id %v, want %d", msg["id"], c.id)
	}
	if e, ok := msg["error"]; ok && e != nil {
		c.t.Fatalf("%s: error %v", method, e)
	}
	return msg["result"]
}

// rawCall sends a request and returns its whole response (result or
// error), keeping notifications.
func (c *electrumClient) rawCall(method string, params ...any) map[string]any {
	c.t.Helper()
	c.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		c.t.Fatal(err)
	}
	for {
		msg := c.read()
		if _, ok := msg["method"]; ok {
			c.notes = append(c.notes, msg)
			continue
		}
		return msg
	}
}

// notification waits for the next notification of method.
func (c *electrumClient) notification(method string) []any {
	c.t.Helper()
	for {
		for i, n := range c.notes {
			if n["method"] == method {
				c.notes = append(c.notes[:i], c.notes[i+1:]...)
				params, _ := n["params"].([]any)
				return params
			}
		}
		c.notes = append(c.notes, c.read())
	}
}

// TestElectrumServesTheIndex talks to the node's Electrum server over TCP:
// the header tip follows mining, histories come from the index, a
// transaction broadcast over Electrum enters the mempool (and the
// scripthash status notification reports it), and any confirmed
// transaction is served by blockchain.transaction.get without --txindex.
func TestElectrumServesTheIndex(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	c := dialElectrum(t, n)
	c.call("server.version", "node-test", "1.4")

	tip, _ := c.call("blockchain.headers.subscribe").(map[string]any)
	if h, _ := tip["height"].(float64); h != 101 {
		t.Fatalf("headers.subscribe height %v, want 101", tip["height"])
	}

	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript).String()
	hist, _ := c.call("blockchain.scripthash.get_history", sh).([]any)
	if len(hist) != 101 {
		t.Fatalf("history has %d entries, want 101", len(hist))
	}
	status := c.call("blockchain.scripthash.subscribe", sh)
	if status == nil {
		t.Fatal("status of a script with history is null")
	}

	// Broadcast over Electrum: mempool, relay, status notification.
	tx := spendCoinbase(t, n, 1, 20_000)
	var buf bytes.Buffer
	if err := tx.MsgTx().Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	txid := c.call("blockchain.transaction.broadcast", hex.EncodeToString(buf.Bytes()))
	if txid != tx.Hash().String() {
		t.Fatalf("broadcast returned %v, want %v", txid, tx.Hash())
	}
	if !n.TxPool().HaveTransaction(tx.Hash()) {
		t.Fatal("broadcast transaction is not in the mempool")
	}
	// A wallet asks right after its broadcast: the answer already has it.
	if mem, _ := c.call("blockchain.scripthash.get_mempool", sh).([]any); len(mem) != 1 {
		t.Fatalf("get_mempool right after the broadcast = %v", mem)
	}
	note := c.notification("blockchain.scripthash.subscribe")
	if len(note) != 2 || note[0] != sh || note[1] == status {
		t.Fatalf("status notification %v after broadcast", note)
	}
	mem, _ := c.call("blockchain.scripthash.get_mempool", sh).([]any)
	if len(mem) != 1 || fmt.Sprint(mem[0].(map[string]any)["tx_hash"]) != tx.Hash().String() {
		t.Fatalf("get_mempool = %v", mem)
	}

	// Mining it: a new tip and a new status.
	generate(t, n, 1)
	header := c.notification("blockchain.headers.subscribe")
	if h, _ := header[0].(map[string]any)["height"].(float64); h != 102 {
		t.Fatalf("header notification %v, want height 102", header)
	}
	c.notification("blockchain.scripthash.subscribe")
	mem, _ = c.call("blockchain.scripthash.get_mempool", sh).([]any)
	if len(mem) != 0 {
		t.Fatalf("get_mempool after mining = %v", mem)
	}

	// The operator's view of the index.
	info := rpcBackend{n}.ElectrumInfo()
	if info.IndexHeight != 102 || info.IndexRows <= 0 || info.IndexSizeBytes <= info.IndexRows ||
		info.Sessions != 1 || info.Subscriptions != 1 {
		t.Fatalf("getelectruminfo %+v", info)
	}

	// Any confirmed transaction, here the coinbase of block 7.
	block, err := n.Chain().BlockByHeight(7)
	if err != nil {
		t.Fatal(err)
	}
	cb := block.Transactions()[0]
	buf.Reset()
	_ = cb.MsgTx().Serialize(&buf)
	if got := c.call("blockchain.transaction.get", cb.Hash().String()); got != hex.EncodeToString(buf.Bytes()) {
		t.Fatalf("transaction.get returned %v", got)
	}
}

// TestElectrumTLSWithGeneratedCert enables the TLS listener without
// certificate files: the node creates a self-signed pair at the configured
// paths and serves TLS with it.
func TestElectrumTLSWithGeneratedCert(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.ElectrumListeners = nil
	cfg.ElectrumTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert = filepath.Join(dir, "e.cert")
	cfg.ElectrumKey = filepath.Join(dir, "e.key")
	n := startNode(t, cfg)
	if len(n.ElectrumAddrs()[electrum.TCP]) != 0 {
		t.Fatal("a TCP listener was opened although only TLS was asked for")
	}
	addrs := n.ElectrumAddrs()[electrum.TLS]
	if len(addrs) != 1 {
		t.Fatalf("TLS listeners %v", n.ElectrumAddrs())
	}
	pemCert, err := os.ReadFile(cfg.ElectrumCert)
	if err != nil {
		t.Fatalf("certificate not written: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCert) {
		t.Fatal("written certificate is not PEM")
	}
	conn, err := tls.Dial("tcp", addrs[0].String(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("TLS dial with the written certificate: %v", err)
	}
	defer conn.Close()
	// Every handshake signs with the key: P-256, not P-521.
	if pub, ok := conn.ConnectionState().PeerCertificates[0].PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Fatalf("certificate key %T, want ECDSA on P-256", conn.ConnectionState().PeerCertificates[0].PublicKey)
	}
	c := &electrumClient{t: t, conn: conn, r: bufio.NewReader(conn)}
	v, _ := c.call("server.version", "node-test", "1.4").([]any)
	if len(v) != 2 || v[1] != "1.4" {
		t.Fatalf("server.version over TLS = %v", v)
	}
}

// TestElectrumInfoWithoutIndex: a node without the Electrum index is not
// catching up: getelectruminfo says no index (height -1) and no progress.
func TestElectrumInfoWithoutIndex(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	generate(t, n, 2)
	info := rpcBackend{n}.ElectrumInfo()
	if info.IndexHeight != -1 || info.CatchingUp || info.Progress != 0 || info.ChainHeight != 2 {
		t.Fatalf("getelectruminfo without the index: %+v", info)
	}
}

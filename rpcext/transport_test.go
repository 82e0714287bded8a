package rpcext

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/gorilla/websocket"
)

func TestAuthRejectsWrongCredentials(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)

	_, err := ts.httpClient(t, testUser, "wrong").GetBlockCount()
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong password: got %v, want a 401 error", err)
	}
	status, _ := ts.post(t, `{"method":"getblockcount","id":1}`, false)
	if status != http.StatusUnauthorized {
		t.Fatalf("no credentials: status %d, want 401", status)
	}
	if _, err := ts.httpClient(t, testUser, testPass).GetBlockCount(); err != nil {
		t.Fatalf("right credentials: %v", err)
	}
}

func TestTLSGeneratesCertificateAndRefusesPlainHTTP(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	if !bytes.Contains(ts.cert, []byte("BEGIN CERTIFICATE")) {
		t.Fatalf("generated certificate is not PEM: %q", ts.cert)
	}
	key, err := os.ReadFile(strings.TrimSuffix(ts.certFile, ".cert") + ".key")
	if err != nil || !bytes.Contains(key, []byte("PRIVATE KEY")) {
		t.Fatalf("generated key missing: %v", err)
	}

	// A plain HTTP request to the TLS port does not get a JSON-RPC answer.
	plain := &testServer{addr: ts.addr}
	req, _ := http.NewRequest(http.MethodPost, plain.baseURL()+"/", strings.NewReader(`{"method":"getblockcount","id":1}`))
	req.SetBasicAuth(testUser, testPass)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was answered on the TLS port")
		}
	}

	// A second server on the same files reuses the pair.
	dir := strings.TrimSuffix(ts.certFile, "rpc.cert")
	ts2 := startServer(t, node, func(c *Config) {
		c.CertFile = dir + "rpc.cert"
		c.KeyFile = dir + "rpc.key"
	})
	if !bytes.Equal(ts.cert, ts2.cert) {
		t.Fatal("existing certificate was replaced")
	}
	if _, err := ts2.httpClient(t, testUser, testPass).GetBlockCount(); err != nil {
		t.Fatal(err)
	}
}

func TestTLSRefusesHalfAPair(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/rpc.cert", []byte("x"), 0600); err != nil {
		t.Fatal(err)
	}
	node := newTestNode(t)
	_, err := New(&Config{Listen: []string{"127.0.0.1:0"}, CertFile: dir + "/rpc.cert", KeyFile: dir + "/rpc.key",
		Params: node.params, Chain: node.chain, Mempool: node.pool, Backend: node})
	if err == nil || !strings.Contains(err.Error(), "does not") {
		t.Fatalf("got %v, want an error about the missing key", err)
	}
}

func TestNoTLSServesPlainHTTP(t *testing.T) {
	ts := startServer(t, newTestNode(t), func(c *Config) { c.DisableTLS = true })
	n, err := ts.httpClient(t, testUser, testPass).GetBlockCount()
	if err != nil || n != 0 {
		t.Fatalf("getblockcount over plain HTTP: %d, %v", n, err)
	}
}

func TestRequestFraming(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	tests := []struct {
		name     string
		body     string
		wantCode btcjson.RPCErrorCode // 0: success
		result   string               // expected result JSON when wantCode is 0
	}{
		{"no jsonrpc, no params", `{"method":"getblockcount","id":7}`, 0, "0"},
		{"null params", `{"jsonrpc":"1.0","method":"getblockcount","params":null,"id":"a"}`, 0, "0"},
		{"jsonrpc 2.0", `{"jsonrpc":"2.0","method":"getbestblockhash","params":[],"id":1}`, 0,
			`"` + ts.node.params.GenesisHash.String() + `"`},
		{"invalid JSON", `{"method":`, btcjson.ErrRPCParse.Code, ""},
		{"unknown method", `{"method":"nosuchmethod","params":[],"id":1}`, btcjson.ErrRPCMethodNotFound.Code, ""},
		{"a wallet command, as btcd without a wallet", `{"method":"getbalance","params":[],"id":1}`, btcjson.ErrRPCNoWallet, ""},
		{"websocket-only over HTTP", `{"method":"notifyblocks","params":[],"id":1}`, btcjson.ErrRPCMethodNotFound.Code, ""},
		{"missing method", `{"params":[],"id":1}`, btcjson.ErrRPCInvalidRequest.Code, ""},
		{"named params", `{"method":"getblockhash","params":{"index":0},"id":1}`, btcjson.ErrRPCInvalidParams.Code, ""},
		{"wrong param type", `{"method":"getblockhash","params":["zero"],"id":1}`, btcjson.ErrRPCInvalidParams.Code, ""},
		{"too many params", `{"method":"getblockcount","params":[1],"id":1}`, btcjson.ErrRPCInvalidParams.Code, ""},
		{"object id", `{"method":"getblockcount","params":[],"id":{"x":1}}`, btcjson.ErrRPCInvalidRequest.Code, ""},
		{"not an object", `"getblockcount"`, btcjson.ErrRPCInvalidRequest.Code, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.call(t, tc.body)
			if tc.wantCode != 0 {
				if r.Error == nil || r.Error.Code != tc.wantCode {
					t.Fatalf("error %+v, want code %d", r.Error, tc.wantCode)
				}
				return
			}
			if r.Error != nil {
				t.Fatalf("unexpected error %+v", r.Error)
			}
			if string(r.Result) != tc.result {
				t.Fatalf("result %s, want %s", r.Result, tc.result)
			}
		})
	}
}

func TestRequestIDsAreEchoed(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	for _, id := range []string{`7`, `"seven"`, `null`} {
		r := ts.call(t, `{"method":"getblockcount","params":[],"id":`+id+`}`)
		if string(r.ID) != id {
			t.Fatalf("id %s echoed as %v", id, r.ID)
		}
	}
	// A request without id and without "jsonrpc" is answered (with a
	// null id), as Bitcoin Core does.
	r := ts.call(t, `{"method":"getblockcount"}`)
	if string(r.ID) != "null" || string(r.Result) != "0" {
		t.Fatalf("id-less request answered %+v", r)
	}
	// A JSON-RPC 2.0 notification is executed but not answered.
	status, b := ts.post(t, `{"jsonrpc":"2.0","method":"getblockcount"}`, true)
	if status != http.StatusOK || len(bytes.TrimSpace(b)) != 0 {
		t.Fatalf("notification answered: %d %q", status, b)
	}
}

func TestRawBatch(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	status, b := ts.post(t, `[
		{"jsonrpc":"2.0","method":"getblockcount","params":[],"id":1},
		{"jsonrpc":"2.0","method":"getblockhash","params":[99],"id":2},
		{"jsonrpc":"2.0","method":"getblockcount"},
		5,
		{"jsonrpc":"2.0","method":"getbestblock","id":"x"}
	]`, true)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	var replies []reply
	if err := json.Unmarshal(b, &replies); err != nil {
		t.Fatalf("batch reply %q: %v", b, err)
	}
	if len(replies) != 4 {
		t.Fatalf("%d replies, want 4 (the notification is not answered): %s", len(replies), b)
	}
	if string(replies[0].Result) != "0" || replies[0].Error != nil {
		t.Errorf("first: %+v", replies[0])
	}
	if replies[1].Error == nil || replies[1].Error.Code != btcjson.ErrRPCOutOfRange {
		t.Errorf("second: %+v, want out of range", replies[1])
	}
	if replies[2].Error == nil || replies[2].Error.Code != btcjson.ErrRPCInvalidRequest.Code {
		t.Errorf("third: %+v, want invalid request", replies[2])
	}
	var best btcjson.GetBestBlockResult
	if err := json.Unmarshal(replies[3].Result, &best); err != nil || best.Hash != ts.node.params.GenesisHash.String() {
		t.Errorf("fourth: %+v %v", replies[3], err)
	}

	r := ts.call(t, `[]`)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCInvalidRequest.Code {
		t.Fatalf("empty batch: %+v", r)
	}
}

func TestRPCClientBatch(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(3, nil); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	c, err := rpcclient.NewBatch(&rpcclient.ConnConfig{
		Host: ts.addr, User: testUser, Pass: testPass, HTTPPostMode: true, Certificates: ts.cert,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	count := c.GetBlockCountAsync()
	hash := c.GetBlockHashAsync(2)
	bad := c.GetBlockHashAsync(50)
	if err := c.Send(); err != nil {
		t.Fatal(err)
	}
	n, err := count.Receive()
	if err != nil || n != 3 {
		t.Fatalf("count %d %v", n, err)
	}
	h, err := hash.Receive()
	want, _ := node.chain.BlockHashByHeight(2)
	if err != nil || !h.IsEqual(want) {
		t.Fatalf("hash %v %v, want %v", h, err, want)
	}
	if _, err := bad.Receive(); rpcCode(t, err) != btcjson.ErrRPCOutOfRange {
		t.Fatalf("bad height: %v", err)
	}
}

func TestHTTPLimits(t *testing.T) {
	ts := startServer(t, newTestNode(t), func(c *Config) { c.MaxRequestBytes = 1024 })
	status, _ := ts.post(t, `{"method":"sendrawtransaction","params":["`+strings.Repeat("00", 2000)+`"],"id":1}`, true)
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversize body: status %d, want 413", status)
	}
	// As btcd, any method's body is read: a GET without one is a parse
	// error.
	req, _ := http.NewRequest(http.MethodGet, ts.baseURL()+"/", nil)
	req.SetBasicAuth(testUser, testPass)
	if status, b := ts.do(t, req); status != http.StatusOK || !bytes.Contains(b, []byte(`"code":-32700`)) {
		t.Fatalf("GET without a body: status %d %s, want btcd's parse error", status, b)
	}
	// The server still serves after hostile requests.
	if r := ts.call(t, `{"method":"getblockcount","id":1}`); r.Error != nil {
		t.Fatal(r.Error)
	}
}

// wsDial opens a raw websocket to ts, optionally with credentials.
func wsDial(t *testing.T, ts *testServer, auth bool) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: ts.tlsConfig(t)}
	h := http.Header{}
	if auth {
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		req.SetBasicAuth(testUser, testPass)
		h.Set("Authorization", req.Header.Get("Authorization"))
	}
	return d.Dial("wss://"+ts.addr+"/ws", h)
}

func TestWebsocketAuthentication(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)

	// Wrong basic auth on the upgrade is refused.
	d := websocket.Dialer{TLSClientConfig: ts.tlsConfig(t)}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(testUser, "wrong")
	_, resp, err := d.Dial("wss://"+ts.addr+"/ws", http.Header{"Authorization": req.Header["Authorization"]})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong credentials: %v %v", resp, err)
	}

	// Without basic auth, requests before authenticate end the session.
	conn, _, err := wsDial(t, ts, false)
	if err != nil {
		t.Fatal(err)
	}
	conn.WriteMessage(websocket.TextMessage, []byte(`{"method":"getblockcount","params":[],"id":1}`))
	if _, msg, err := conn.ReadMessage(); err != nil || !bytes.Contains(msg, []byte("authentication")) {
		t.Fatalf("request before authenticate: %q %v", msg, err)
	}
	if _, _, err := conn.ReadMessage(); err == nil {
		t.Fatal("connection stayed open after an unauthenticated request")
	}
	conn.Close()

	// authenticate with the right credentials opens the session.
	conn, _, err = wsDial(t, ts, false)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.WriteMessage(websocket.TextMessage, []byte(`{"method":"authenticate","params":["user","pass"],"id":1}`))
	conn.WriteMessage(websocket.TextMessage, []byte(`{"method":"getblockcount","params":[],"id":2}`))
	for _, want := range []string{`"result":null`, `"result":0`} {
		_, msg, err := conn.ReadMessage()
		if err != nil || !bytes.Contains(msg, []byte(want)) || bytes.Contains(msg, []byte(`"error":{`)) {
			t.Fatalf("got %q %v, want %s", msg, err, want)
		}
	}
}

func TestWebsocketOversizeMessageDisconnects(t *testing.T) {
	ts := startServer(t, newTestNode(t), func(c *Config) { c.MaxRequestBytes = 1024 })
	conn, _, err := wsDial(t, ts, true)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.WriteMessage(websocket.TextMessage, []byte(`{"method":"help","params":["`+strings.Repeat("x", 4096)+`"],"id":1}`))
	if _, _, err := conn.ReadMessage(); err == nil {
		t.Fatal("oversize message was answered")
	}
	// Others are still served.
	if r := ts.call(t, `{"method":"getblockcount","id":1}`); r.Error != nil {
		t.Fatal(r.Error)
	}
}

func TestWebsocketClientLimit(t *testing.T) {
	ts := startServer(t, newTestNode(t), func(c *Config) { c.MaxWebsockets = 1 })
	conn, _, err := wsDial(t, ts, true)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Make sure the first client is registered before dialling again.
	conn.WriteMessage(websocket.TextMessage, []byte(`{"method":"getblockcount","params":[],"id":1}`))
	if _, _, err := conn.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	_, resp, err := wsDial(t, ts, true)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second websocket: %v %v, want 503", resp, err)
	}
}

func TestShutdownClosesWebsocketsAndListeners(t *testing.T) {
	node := newTestNode(t)
	srv, err := New(&Config{Listen: []string{"127.0.0.1:0"}, DisableTLS: true, Params: node.params,
		Chain: node.chain, Mempool: node.pool, Backend: node})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addrs()[0].String()
	if err := srv.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.WriteMessage(websocket.TextMessage, []byte(`{"method":"notifyblocks","params":[],"id":1}`))
	if _, _, err := conn.ReadMessage(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, _, err := conn.ReadMessage(); err == nil {
		t.Fatal("websocket still open after shutdown")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatal("listener still accepting after shutdown")
	}
	// Notifications after shutdown are dropped without blocking.
	tip, _ := node.tipBlock()
	srv.NotifyBlockConnected(tip)
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	if err := srv.Start(); err == nil {
		t.Fatal("restart after shutdown succeeded")
	}
}

package rpcext

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/gorilla/websocket"
)

// btcd's handleSendRawTransaction maps a mempool.RuleError whose Err is a
// TxRuleError by its description (-25 orphan, -27 already exists, else
// -26), and leaves every other rule error -- a blockchain.RuleError wrapped
// by the mempool's chainRuleError: script failures, spends of immature
// coinbases, sanity failures -- at ErrRPCTxError (-25).
func TestSendRawTransactionChainRuleErrorCode(t *testing.T) {
	node := matureNode(t)
	ts := startServer(t, node, nil)
	to, _ := newAddress(t, node)

	// A signature that no longer commits to the outputs: the script check
	// (blockchain.ValidateTransactionScripts) fails.
	badSig := spendCoinbase(t, node, 1, to)
	badSig.TxOut[0].Value -= 1000
	// A spend of the tip's coinbase, still immature
	// (blockchain.CheckTransactionInputs).
	immature := spendCoinbase(t, node, node.chain.BestSnapshot().Height, to)

	for _, tc := range []struct {
		name string
		hex  func() string
	}{
		{"script failure", func() string { h, _ := txHex(badSig); return h }},
		{"immature coinbase spend", func() string { h, _ := txHex(immature); return h }},
	} {
		r := ts.call(t, `{"jsonrpc":"1.0","method":"sendrawtransaction","params":["`+tc.hex()+`"],"id":1}`)
		if r.Error == nil || r.Error.Code != btcjson.ErrRPCTxError {
			t.Errorf("%s: %+v; btcd v0.26.2 answers %d (ErrRPCTxError) for a blockchain rule error",
				tc.name, r.Error, btcjson.ErrRPCTxError)
		}
	}
}

// A batch that is not valid JSON is answered with btcd's JSON-RPC 2.0
// parse error (jsonRPCRead: MarshalResponse(btcjson.RpcVersion2, ...)).
func TestBatchParseErrorShape(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	_, b := ts.post(t, `[1`, true)
	want := `{"jsonrpc":"2.0","result":null,"error":{"code":-32700,"message":"Failed to parse request: unexpected end of JSON input"},"id":null}`
	if string(bytes.TrimSpace(b)) != want {
		t.Errorf("truncated batch: %s; btcd v0.26.2 answers %s", b, want)
	}
}

// btcd's RPC server handles "/" as a ServeMux pattern (every path but /ws)
// and reads any HTTP method's body: a POST to /wallet/x or a GET carrying a
// request is answered.
func TestHTTPPathsAndMethodsAsBtcd(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	body := `{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":1}`
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/wallet/x"},
		{http.MethodGet, "/"},
	} {
		req, _ := http.NewRequest(tc.method, ts.baseURL()+tc.path, strings.NewReader(body))
		req.SetBasicAuth(testUser, testPass)
		status, b := ts.do(t, req)
		if status != http.StatusOK || !bytes.Contains(b, []byte(`"result":0`)) {
			t.Errorf("%s %s: %d %q; btcd v0.26.2 answers 200 with the result", tc.method, tc.path, status, b)
		}
	}
}

// btcd's /ws handler refuses (401) an Authorization header that does not
// hold a user's credentials, before upgrading; without one the first message
// must authenticate.
func TestWebsocketBadAuthorizationRefused(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	d := websocket.Dialer{TLSClientConfig: ts.tlsConfig(t)}
	for _, h := range []string{"Bearer abc", "Basic !!!not-base64", "Basic " + base64.StdEncoding.EncodeToString([]byte(testUser+":wrong"))} {
		conn, resp, err := d.Dial("wss://"+ts.addr+"/ws", http.Header{"Authorization": {h}})
		if conn != nil {
			conn.Close()
		}
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			t.Errorf("Authorization %q: status %d err %v; btcd v0.26.2 answers 401", h, code, err)
		}
	}
}

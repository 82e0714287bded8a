package rpcext

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/rpcclient"
)

// httpClient returns btcd's rpcclient in HTTP POST mode for ts.
func (ts *testServer) httpClient(t testing.TB, user, pass string) *rpcclient.Client {
	t.Helper()
	c, err := rpcclient.New(&rpcclient.ConnConfig{
		Host:         ts.addr,
		User:         user,
		Pass:         pass,
		HTTPPostMode: true,
		DisableTLS:   ts.cert == nil,
		Certificates: ts.cert,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	return c
}

// wsClient returns btcd's rpcclient connected to /ws with handlers.
func (ts *testServer) wsClient(t *testing.T, handlers *rpcclient.NotificationHandlers) *rpcclient.Client {
	t.Helper()
	c, err := rpcclient.New(&rpcclient.ConnConfig{
		Host:                 ts.addr,
		Endpoint:             "ws",
		User:                 testUser,
		Pass:                 testPass,
		DisableTLS:           ts.cert == nil,
		Certificates:         ts.cert,
		DisableAutoReconnect: true,
	}, handlers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Shutdown()
		c.WaitForShutdown()
	})
	return c
}

// tlsConfig trusts the server's certificate.
func (ts *testServer) tlsConfig(t *testing.T) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ts.cert) {
		t.Fatal("bad certificate PEM")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// baseURL is the server's URL.
func (ts *testServer) baseURL() string {
	if ts.cert == nil {
		return "http://" + ts.addr
	}
	return "https://" + ts.addr
}

// post sends a raw body with the test credentials (or none) and returns
// the status and body.
func (ts *testServer) post(t *testing.T, body string, auth bool) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.baseURL()+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.SetBasicAuth(testUser, testPass)
	}
	return ts.do(t, req)
}

// do sends req over a client trusting the server.
func (ts *testServer) do(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	hc := &http.Client{}
	if ts.cert != nil {
		hc.Transport = &http.Transport{TLSClientConfig: ts.tlsConfig(t)}
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// reply is a decoded JSON-RPC response.
type reply struct {
	Jsonrpc string            `json:"jsonrpc"`
	Result  json.RawMessage   `json:"result"`
	Error   *btcjson.RPCError `json:"error"`
	ID      json.RawMessage   `json:"id"`
}

// call posts one request and decodes the single reply.
func (ts *testServer) call(t *testing.T, body string) reply {
	t.Helper()
	status, b := ts.post(t, body, true)
	if status != http.StatusOK {
		t.Fatalf("status %d for %s: %s", status, body, b)
	}
	var r reply
	if err := json.Unmarshal(bytes.TrimSpace(b), &r); err != nil {
		t.Fatalf("reply %q to %s: %v", b, body, err)
	}
	return r
}

// rpcCode extracts the RPC error code from an rpcclient error.
func rpcCode(t *testing.T, err error) btcjson.RPCErrorCode {
	t.Helper()
	if err == nil {
		t.Fatal("expected an RPC error, got success")
	}
	var rpcErr *btcjson.RPCError
	if !asRPCError(err, &rpcErr) {
		t.Fatalf("error %v (%T) is not an RPC error", err, err)
	}
	return rpcErr.Code
}

// asRPCError unwraps rpcclient's errors.
func asRPCError(err error, target **btcjson.RPCError) bool {
	for err != nil {
		if e, ok := err.(*btcjson.RPCError); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

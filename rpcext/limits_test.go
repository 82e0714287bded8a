package rpcext

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcjson"
)

// TestMaxClients holds MaxClients requests in flight (their bodies not yet
// sent) and checks that one more is answered 503 at once, authenticated or
// not, and that a freed place serves the next request.
func TestMaxClients(t *testing.T) {
	const limit = 3
	ts := startServer(t, newTestNode(t), func(c *Config) {
		c.DisableTLS = true
		c.MaxClients = limit
	})
	var held []net.Conn
	for i := 0; i < limit; i++ {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dXNlcjpwYXNz\r\nContent-Length: 100\r\n\r\n{")
		held = append(held, c)
	}
	deadline := time.Now().Add(time.Minute)
	for ts.srv.clients.Load() != limit {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want %d", ts.srv.clients.Load(), limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, auth := range []bool{true, false} {
		if status, body := ts.post(t, `{"method":"getblockcount","id":1}`, auth); status != http.StatusServiceUnavailable {
			t.Fatalf("request over the limit (auth %v): %d %s", auth, status, body)
		}
	}
	held[0].Close()
	for ts.srv.clients.Load() == limit {
		if time.Now().After(deadline) {
			t.Fatal("a closed request still counts")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status, body := ts.post(t, `{"method":"getblockcount","id":1}`, true); status != http.StatusOK {
		t.Fatalf("request under the limit: %d %s", status, body)
	}
}

// TestMaxBatchRequests checks that a batch over Config.MaxBatchRequests is
// refused as a whole and one at the limit is served.
func TestMaxBatchRequests(t *testing.T) {
	ts := startServer(t, newTestNode(t), func(c *Config) {
		c.DisableTLS = true
		c.MaxBatchRequests = 2
	})
	req := `{"jsonrpc":"2.0","method":"getblockcount","id":1}`
	if status, body := ts.post(t, "["+req+","+req+"]", true); status != http.StatusOK || strings.Count(string(body), `"result":0`) != 2 {
		t.Fatalf("batch at the limit: %d %s", status, body)
	}
	_, body := ts.post(t, "["+req+","+req+","+req+"]", true)
	if !strings.Contains(string(body), fmt.Sprint(btcjson.ErrRPCInvalidRequest.Code)) || strings.Contains(string(body), `"result":0`) {
		t.Fatalf("batch over the limit: %s", body)
	}
}

package esplora

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A HEAD request is answered as its GET without the body (health checks,
// `curl -I`), and OPTIONS gives the methods; with CORS set, a browser's
// preflight for a JSON POST is granted, so a web wallet can broadcast a
// package.
func TestHeadAndPreflight(t *testing.T) {
	n := newTestNode(t, "/api")
	_, tipH := n.h.Tip()
	height := n.getText("/blocks/tip/height")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cors := New(Config{Listeners: []net.Listener{l}, PathPrefix: "/api", CostHardLimit: -1, CORS: "https://wallet.example"},
		n.backend, n.h.Chain)
	if err := cors.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = cors.Shutdown(ctx)
	})

	do := func(base, method, path string, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := n.http.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	resp, body := do(n.base, http.MethodHead, "/blocks/tip/height", nil)
	if resp.StatusCode != http.StatusOK || body != "" || resp.ContentLength != int64(len(height)) ||
		resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("HEAD /blocks/tip/height (tip %d): %d, body %q, length %d, type %q",
			tipH, resp.StatusCode, body, resp.ContentLength, resp.Header.Get("Content-Type"))
	}
	if resp, _ := do(n.base, http.MethodHead, "/block/00", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HEAD of a bad hash: %d, want GET's 400", resp.StatusCode)
	}
	if resp, _ := do(n.base, http.MethodHead, "/tx", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("HEAD of a POST endpoint: %d, want 404", resp.StatusCode)
	}

	resp, _ = do(n.base, http.MethodOptions, "/txs/package", nil)
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Allow"), "POST") ||
		resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("OPTIONS without CORS: %d, headers %v", resp.StatusCode, resp.Header)
	}

	corsBase := "http://" + l.Addr().String() + "/api"
	resp, _ = do(corsBase, http.MethodOptions, "/txs/package", map[string]string{
		"Origin":                         "https://wallet.example",
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "content-type",
	})
	h := resp.Header
	if resp.StatusCode/100 != 2 || h.Get("Access-Control-Allow-Origin") != "https://wallet.example" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.EqualFold(h.Get("Access-Control-Allow-Headers"), "content-type") {
		t.Errorf("preflight with CORS: %d, headers %v", resp.StatusCode, h)
	}
	resp, body = do(corsBase, http.MethodGet, "/blocks/tip/height", map[string]string{"Origin": "https://wallet.example"})
	if body != height || resp.Header.Get("Access-Control-Allow-Origin") != "https://wallet.example" {
		t.Errorf("GET with CORS: %q, headers %v", body, resp.Header)
	}
}

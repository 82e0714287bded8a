package esplora

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// startBare starts a server without a node behind it, on loopback.
func startBare(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listeners = []net.Listener{l}
	s := New(cfg, nil, nil)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s, l.Addr().String()
}

// accountCost returns the cost account of ip.
func accountCost(s *Server, ip string) float64 {
	s.costs.mu.Lock()
	defer s.costs.mu.Unlock()
	if a := s.costs.m[ip]; a != nil {
		return a.cost
	}
	return 0
}

// TestChunkedBodyCharged: a request body is charged by the bytes read, so
// one sent chunked (no Content-Length) costs what the same body with a
// length does.
func TestChunkedBodyCharged(t *testing.T) {
	s, addr := startBare(t, Config{})
	body := strings.Repeat("00", 4_000_000) // 8,000,000 bytes, within MaxBody
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(r io.Reader) {
		resp, err := client.Post("http://"+addr+"/tx", "text/plain", r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d %q", resp.StatusCode, b)
		}
	}
	post(strings.NewReader(body)) // Content-Length: 8000000
	withLength := accountCost(s, "127.0.0.1")
	s.costs.mu.Lock()
	s.costs.m = nil
	s.costs.mu.Unlock()
	post(io.MultiReader(strings.NewReader(body))) // Transfer-Encoding: chunked
	chunked := accountCost(s, "127.0.0.1")
	t.Logf("8 MB body: charged %.1f with Content-Length, %.1f chunked", withLength, chunked)
	if chunked < withLength/2 {
		t.Errorf("chunked body charged %.1f, the same body with Content-Length %.1f", chunked, withLength)
	}
}

// TestUnsentBodyNotCharged: a Content-Length declared and never sent is
// not charged (one such request made an account that outlived the server).
func TestUnsentBodyNotCharged(t *testing.T) {
	s, addr := startBare(t, Config{})
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000000\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cost := accountCost(s, "127.0.0.1")
	t.Logf("status %d; account after one GET with no body sent: %.3g (decays 1/s: %.0f days)", resp.StatusCode, cost, cost/86400)
	if cost > 100 {
		t.Errorf("charged %.3g for body bytes never sent", cost)
	}
}

// TestPerAddressLimitsGroupIPv6By64: an IPv6 client is handed a /64, so the
// per-address request limit and cost account count a /64 as one address.
func TestPerAddressLimitsGroupIPv6By64(t *testing.T) {
	s := New(Config{}, nil, nil)
	serve := func(remote string) int {
		r := httptest.NewRequest(http.MethodGet, "/nothing", nil)
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	serve("[2001:db8:1:1::1]:1")
	if accountCost(s, "2001:db8:1:1::/64") <= 0 {
		t.Fatal("no account for the /64")
	}
	for i := 0; i < DefaultMaxRequestsPerIP; i++ {
		s.inFlight.acquire("2001:db8:1:1::/64", DefaultMaxRequestsPerIP)
	}
	if code := serve("[2001:db8:1:1::2]:1"); code != http.StatusTooManyRequests {
		t.Fatalf("a neighbour in the /64 of a client with all its places taken: %d, want 429", code)
	}
	if code := serve("[2001:db8:1:2::1]:1"); code == http.StatusTooManyRequests {
		t.Fatalf("a client of another /64 refused")
	}
}

// TestCostAccountsBounded: accounts from more addresses than maxAccounts,
// none decayed, stay within the bound.
func TestCostAccountsBounded(t *testing.T) {
	var a costAccounts
	l := costLimits{soft: 1000, hard: 10000}
	now := time.Now()
	for i := 0; i < maxAccounts+1000; i++ {
		a.mu.Lock()
		a.current(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), l, now).cost = 500
		a.mu.Unlock()
	}
	if n := len(a.m); n > maxAccounts {
		t.Fatalf("%d accounts kept, bound %d", n, maxAccounts)
	}
}

// TestConnectionsPerAddressBounded: a client address holds no more open
// connections than twice the requests it may have answered at once; the
// rest are closed at once.
func TestConnectionsPerAddressBounded(t *testing.T) {
	_, addr := startBare(t, Config{MaxRequestsPerIP: 4})
	var conns []net.Conn
	for i := 0; i < 20; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	open := 0
	for _, c := range conns {
		// Closed by the server: EOF at once; held: the deadline.
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open++
			}
		}
	}
	if open > 8 {
		t.Fatalf("%d connections of one address held open, bound 8", open)
	}
	// Closing them gives the places back.
	for _, c := range conns {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second) // a hang guard
	for {
		resp, err := http.Get("http://" + addr + "/nothing") // 404, from a server without a node
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a request after the connections closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

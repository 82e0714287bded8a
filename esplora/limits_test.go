package esplora

import (
	"net"
	"net/http"
	"testing"
)

// TestClientAddress checks which address a request counts against: its
// peer's, or behind an exempt proxy the one the proxy forwarded last.
func TestClientAddress(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s := New(Config{ExemptNets: []*net.IPNet{loopback}}, nil, nil, nil)
	for _, c := range []struct {
		remote string
		xff    []string
		ip     string
		exempt bool
	}{
		{"127.0.0.1:5555", nil, "127.0.0.1", true},
		{"127.0.0.1:5555", []string{"1.2.3.4, 5.6.7.8"}, "5.6.7.8", false},
		{"127.0.0.1:5555", []string{"9.9.9.9", "1.2.3.4"}, "1.2.3.4", false},
		{"127.0.0.1:5555", []string{"127.0.0.2"}, "127.0.0.2", true},
		{"127.0.0.1:5555", []string{"not an address"}, "127.0.0.1", true},
		{"10.0.0.1:1", []string{"5.6.7.8"}, "10.0.0.1", false},
		{"[::1]:80", nil, "::1", false},
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		ip, exempt := s.clientIP(r)
		if ip != c.ip || exempt != c.exempt {
			t.Errorf("%s %v: %s %v, want %s %v", c.remote, c.xff, ip, exempt, c.ip, c.exempt)
		}
	}
}

// TestRequestsPerAddress fills an address's places and checks the next
// request is refused with 429 until one is free.
func TestRequestsPerAddress(t *testing.T) {
	n := newTestNode(t, "")
	for i := 0; i < DefaultMaxRequestsPerIP; i++ {
		if !n.srv.inFlight.acquire("127.0.0.1", DefaultMaxRequestsPerIP) {
			t.Fatalf("place %d refused", i)
		}
	}
	if code, body := n.get("/blocks/tip/height"); code != http.StatusTooManyRequests || body != "Too Many Requests" {
		t.Fatalf("over the limit: %d %s", code, body)
	}
	n.srv.inFlight.release("127.0.0.1")
	if code, _ := n.get("/blocks/tip/height"); code != http.StatusOK {
		t.Fatalf("with a place free: %d", code)
	}
}

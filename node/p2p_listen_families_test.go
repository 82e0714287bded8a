package node

import (
	"net"
	"strings"
	"testing"
)

// TestP2PListenFamiliesAsBtcd: as btcd v0.26.2 (server.go, parseListeners),
// a --listen address with an IPv4 host listens on IPv4 only, one with an
// IPv6 host on IPv6 only, and one without a host on both: an operator who
// told the node to listen on 0.0.0.0 gets no IPv6 peers. (Go's "tcp"
// network would turn 0.0.0.0 into a dual-stack [::] socket.)
func TestP2PListenFamiliesAsBtcd(t *testing.T) {
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	probe.Close()

	dials := func(network, addr string) bool {
		conn, err := net.Dial(network, addr)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}
	for _, tc := range []struct {
		host       string
		ipv4, ipv6 bool
	}{{"0.0.0.0", true, false}, {"::", false, true}, {"", true, true}} {
		// A port free on 127.0.0.1 a moment ago may be taken on another
		// address, or meanwhile, by a test running beside this one: the
		// node then has no listener, and another port is tried.
		var (
			n   *Node
			p   string
			cfg *Config
		)
		for try := 0; n == nil; try++ {
			_, p, _ = net.SplitHostPort(freePort(t))
			cfg = testConfig(t, t.TempDir(), false)
			cfg.Listeners = []string{net.JoinHostPort(tc.host, p)}
			var err error
			if n, err = New(cfg); err != nil {
				if try < 10 && strings.Contains(err.Error(), "no valid P2P listen address") {
					continue
				}
				t.Fatalf("New: %v", err)
			}
		}
		if err := n.Start(); err != nil {
			_ = n.Stop()
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { _ = n.Stop() })
		t.Logf("--listen=%s: listeners %v", cfg.Listeners[0], n.P2PAddrs())
		if got := dials("tcp4", net.JoinHostPort("127.0.0.1", p)); got != tc.ipv4 {
			t.Errorf("--listen=%s: a connection over IPv4 (127.0.0.1:%s) accepted: %v, want %v", cfg.Listeners[0], p, got, tc.ipv4)
		}
		if got := dials("tcp6", net.JoinHostPort("::1", p)); got != tc.ipv6 {
			t.Errorf("--listen=%s: a connection over IPv6 ([::1]:%s) accepted: %v, want %v", cfg.Listeners[0], p, got, tc.ipv6)
		}
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}

package node

import (
	"net"
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
		_, p, _ := net.SplitHostPort(freePort(t))
		cfg := testConfig(t, t.TempDir(), false)
		cfg.Listeners = []string{net.JoinHostPort(tc.host, p)}
		n := startNode(t, cfg)
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

package electrum

import (
	"net"
	"testing"
	"time"
)

// Per-IP keys: the IP without port or zone, an IPv6 /64 for one, but an
// exempt address and a link-local one are keys of their own.
func TestIPKeyOf(t *testing.T) {
	_, one, _ := net.ParseCIDR("2001:db8:1:2::10/128")
	_, lan, _ := net.ParseCIDR("fe80::/10")
	for _, c := range []struct {
		exempt []*net.IPNet
		addr   string
		key    string
		ex     bool
	}{
		{nil, "192.0.2.1:5000", "192.0.2.1", false},
		{nil, "[2001:db8:1:2::20]:5000", "2001:db8:1:2::/64", false},
		{[]*net.IPNet{one}, "[2001:db8:1:2::20]:5000", "2001:db8:1:2::/64", false},
		{[]*net.IPNet{one}, "[2001:db8:1:2::10]:5000", "2001:db8:1:2::10", true},
		{nil, "[fe80::1%eth0]:5000", "fe80::1", false},
		{[]*net.IPNet{lan}, "[fe80::1%eth0]:5000", "fe80::1", true},
	} {
		s := &Server{cfg: Config{ExemptNets: c.exempt}}
		addr, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		key, ip, ex := s.ipKeyOf(addr)
		if key != c.key || ex != c.ex || ip == nil {
			t.Errorf("%s (exempt %v): key %q, ip %v, exempt %v; want %q, %v", c.addr, c.exempt, key, ip, ex, c.key, c.ex)
		}
	}
}

// An exempt address narrower than a /64 (a stream proxy, or the operator's
// host with one address of a /64 a provider shares) is served beyond the
// per-IP limit, and its sessions count against no other address of the /64.
func TestExemptSessionsDoNotFillNeighboursIPv6Bucket(t *testing.T) {
	fx := newFixtureChain(t)
	_, proxyNet, err := net.ParseCIDR("2001:db8:1:2::10/128")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startServer(t, fx.f, func(c *Config) {
		c.MaxSessionsPerIP = 2
		c.ExemptNets = []*net.IPNet{proxyNet}
	})
	// The exempt address is served beyond the per-IP limit, as documented.
	for i := 0; i < 3; i++ {
		sessionFrom(t, s, "2001:db8:1:2::10").negotiate("1.4")
	}
	// A different, non-exempt host of the same /64 with no session yet.
	n := sessionFrom(t, s, "2001:db8:1:2::20")
	ch := make(chan rpcResponse, 1)
	n.mu.Lock()
	n.wait["1"] = ch
	n.mu.Unlock()
	// A refused session is closed at once: the write may fail, the close
	// below says so.
	n.conn.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["neighbour","1.4"]}` + "\n"))
	select {
	case r := <-ch:
		if r.Error != nil {
			t.Fatalf("first session of 2001:db8:1:2::20 answered %v", r.Error)
		}
	case <-n.done:
		t.Fatalf("first session of non-exempt 2001:db8:1:2::20 refused (refusals %v): the exempt 2001:db8:1:2::10's 3 sessions were counted against its /64's MaxSessionsPerIP (2)",
			s.Stats().Refused)
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("no answer and no close")
	}
}

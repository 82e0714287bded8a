package rpcext

import (
	"net"
	"strconv"
	"testing"
)

// TestListenFamilyAsBtcd: as btcd's --rpclisten, an IPv4 address listens on
// IPv4 only (an operator who opened 0.0.0.0 behind an IPv4 firewall does not
// serve RPC over IPv6), and an empty host listens on both families.
func TestListenFamilyAsBtcd(t *testing.T) {
	if l, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		l.Close()
	}
	node := newTestNode(t)
	ts := startServer(t, node, func(c *Config) { c.Listen = []string{"0.0.0.0:0"} })
	port := strconv.Itoa(ts.srv.Addrs()[0].(*net.TCPAddr).Port)
	if c, err := net.Dial("tcp6", net.JoinHostPort("::1", port)); err == nil {
		c.Close()
		t.Fatalf("the RPC listener on 0.0.0.0:%s accepted a connection over IPv6", port)
	}
	c, err := net.Dial("tcp4", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Fatalf("IPv4: %v", err)
	}
	c.Close()

	both := startServer(t, newTestNode(t), func(c *Config) { c.Listen = []string{":0"} })
	fams := map[bool]bool{}
	for _, a := range both.srv.Addrs() {
		fams[a.(*net.TCPAddr).IP.To4() != nil] = true
	}
	if len(fams) != 2 {
		t.Fatalf("an empty host listens on %v, want an IPv4 and an IPv6 socket", both.srv.Addrs())
	}
}

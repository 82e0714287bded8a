package listen

import (
	"net"
	"slices"
	"strconv"
	"testing"
)

// TestNetworks pins btcd's rule: the literal's family, both for no host.
func TestNetworks(t *testing.T) {
	for addr, want := range map[string][]string{
		"0.0.0.0:8334":      {"tcp4"},
		"127.0.0.1:8334":    {"tcp4"},
		"[::]:8334":         {"tcp6"},
		"[::1]:8334":        {"tcp6"},
		"[fe80::1%eth0]:80": {"tcp6"},
		":8334":             {"tcp4", "tcp6"},
		"localhost:8334":    {"tcp"},
		"no port":           {"tcp"},
	} {
		if got := Networks(addr); !slices.Equal(got, want) {
			t.Errorf("Networks(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestIPv4AnyRefusesIPv6: a listener on 0.0.0.0 is not reached over IPv6,
// where Go's "tcp" would accept it.
func TestIPv4AnyRefusesIPv6(t *testing.T) {
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	probe.Close()
	ls, err := Listen("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ls[0].Close()
	if len(ls) != 1 {
		t.Fatalf("%d listeners for 0.0.0.0", len(ls))
	}
	port := ls[0].Addr().(*net.TCPAddr).Port
	if c, err := net.Dial("tcp6", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
		c.Close()
		t.Fatalf("a listener on 0.0.0.0:%d accepted a connection to [::1]", port)
	}
	c, err := net.Dial("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("IPv4: %v", err)
	}
	c.Close()
}

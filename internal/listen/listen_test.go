package listen

import (
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"syscall"
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

// TestMissingFamilyLeftOut: for an empty host, a family the kernel lacks is
// left out when the other opens; any other failure, or a lone family
// missing, fails the address with nothing left open.
func TestMissingFamilyLeftOut(t *testing.T) {
	var opened []net.Listener
	open := func(fail map[string]error) func(network, addr string) (net.Listener, error) {
		return func(network, addr string) (net.Listener, error) {
			if err := fail[network]; err != nil {
				return nil, &net.OpError{Op: "listen", Net: network, Err: os.NewSyscallError("socket", err)}
			}
			l, err := net.Listen(network, "127.0.0.1:0")
			opened = append(opened, l)
			return l, err
		}
	}
	ls, err := listenWith(":0", open(map[string]error{"tcp6": syscall.EAFNOSUPPORT}))
	if err != nil || len(ls) != 1 {
		t.Fatalf("IPv6 missing: %v, %v; want the IPv4 socket alone", ls, err)
	}
	ls[0].Close()
	if _, err := listenWith(":0", open(map[string]error{"tcp6": syscall.EADDRINUSE})); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("IPv6 port taken: %v, want the failure", err)
	}
	if _, err := listenWith("[::]:0", open(map[string]error{"tcp6": syscall.EAFNOSUPPORT})); !errors.Is(err, syscall.EAFNOSUPPORT) {
		t.Fatalf("an IPv6 address without IPv6: %v, want the failure", err)
	}
	for _, l := range opened {
		if l == nil {
			continue
		}
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			c.Close()
			t.Errorf("listener %v left open", l.Addr())
		}
	}
}

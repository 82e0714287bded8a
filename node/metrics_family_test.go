package node

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// TestMetricsIPv4AnyRefusesIPv6: --metricslisten=0.0.0.0 opens on IPv4 only,
// as every other listener does (internal/listen): an operator who exposed
// the port behind an IPv4 firewall does not serve metrics over IPv6.
func TestMetricsIPv4AnyRefusesIPv6(t *testing.T) {
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	probe.Close()
	cfg := testConfig(t, t.TempDir(), false)
	cfg.MetricsListen = "0.0.0.0:0"
	n := startNode(t, cfg)
	port := n.MetricsAddr().(*net.TCPAddr).Port
	c, err := net.DialTimeout("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)), 10*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("--metricslisten=0.0.0.0 (listening on %v) accepted a connection to [::1]:%d; "+
			"every other listener opens 0.0.0.0 on IPv4 only", n.MetricsAddr(), port)
	}
}

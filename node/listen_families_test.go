package node

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/internal/listen"
)

// TestIPv4AndIPv6AnyOnOnePort: btcd's sample config lists "All ipv4
// interfaces on port 8334: rpclisten=0.0.0.0:8334" and "All ipv6 interfaces
// on port 8334: rpclisten=[::]:8334". Every listener opens them as btcd
// does, each on its own family, so both bind at once, and the start-up
// check takes the pair, where a bare port beside either still overlaps.
func TestIPv4AndIPv6AnyOnOnePort(t *testing.T) {
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 here: %v", err)
	}
	port := strconv.Itoa(probe.Addr().(*net.TCPAddr).Port)
	probe.Close()
	v4, v6 := "0.0.0.0:"+port, "[::]:"+port

	// The two addresses bind together, as the listeners open them.
	var held []net.Listener
	for _, a := range []string{v4, v6} {
		ls, err := listen.Listen(a)
		if err != nil {
			t.Skipf("%s does not bind here: %v", a, err)
		}
		held = append(held, ls...)
	}
	for _, l := range held {
		l.Close()
	}

	for _, set := range []func(c *Config){
		func(c *Config) {
			c.RPCListeners, c.DisableTLS = []string{v4, v6}, false
			c.RPCCert, c.RPCKey = filepath.Join(c.DataDir, "rpc.cert"), filepath.Join(c.DataDir, "rpc.key")
		},
		func(c *Config) { c.ElectrumIndex, c.ElectrumListeners = true, []string{v4, v6} },
	} {
		cfg := testConfig(t, t.TempDir(), false)
		set(cfg)
		if err := cfg.Normalize(); err != nil {
			t.Errorf("%s with %s, which bind together (IPv4 only, IPv6 only): %v", v4, v6, err)
		}
	}
	for _, other := range []string{v4, v6} {
		cfg := testConfig(t, t.TempDir(), false)
		cfg.ElectrumIndex, cfg.ElectrumListeners = true, []string{":" + port, other}
		if err := cfg.Normalize(); err == nil {
			t.Errorf(":%s with %s, which cannot both bind, taken", port, other)
		}
	}
}

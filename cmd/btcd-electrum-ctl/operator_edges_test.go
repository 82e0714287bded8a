package main

import (
	"os"
	"testing"
)

// -s/--rpcserver without a port takes the network's RPC port, for an IPv6
// address in brackets ("[::1]", the usual way to write one) as for "::1" and
// "localhost": the server is [::1]:18334 on regtest, not "[[::1]]:18334",
// which no request can reach.
func TestCtlBracketedIPv6ServerTakesDefaultPort(t *testing.T) {
	for _, s := range []string{"::1", "[::1]"} {
		cfg, _, err := loadConfig([]string{"-C", os.DevNull, "--regtest", "-s", s, "getblockcount"})
		if err != nil {
			t.Fatalf("-s %s: %v", s, err)
		}
		if cfg.RPCServer != "[::1]:18334" {
			t.Errorf("-s %s is the server %q, want [::1]:18334", s, cfg.RPCServer)
		}
	}
	// What the operator sees: the request is never sent to the node.
	_, err := ctl(t, "-C", os.DevNull, "--regtest", "--notls", "-u", "u", "-P", "p", "-s", "[::1]", "getblockcount")
	t.Logf("btcd-electrum-ctl -s [::1] getblockcount: %v", err)
}

package node

import (
	"strconv"
	"strings"
	"testing"
)

// TestOneTryToPermanentPeerText: "addnode <addr> onetry" (and "node
// connect <addr> temp") for the address of a connected permanent peer is
// refused with btcd's words, "peer exists as a permanent peer" (server.go
// handleQuery, connectNodeMsg), not those of a second "add" of it.
func TestOneTryToPermanentPeerText(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), false))
	b := startNode(t, testConfig(t, t.TempDir(), false))
	addr := b.P2PAddrs()[0].String()
	if _, err := rawRPC(t, a, "user", "pass", "addnode", strconv.Quote(addr), `"add"`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the permanent peer", func() bool {
		for _, sp := range a.peers.snapshot() {
			if sp.Addr() == addr && sp.persistent {
				return true
			}
		}
		return false
	})
	for _, call := range []struct{ method, p1, p2 string }{
		{"addnode", strconv.Quote(addr), `"onetry"`},
		{"node", `"connect"`, strconv.Quote(addr)},
	} {
		_, err := rawRPC(t, a, "user", "pass", call.method, call.p1, call.p2)
		if err == nil {
			t.Fatalf("%s %s %s: accepted", call.method, call.p1, call.p2)
		}
		if !strings.Contains(err.Error(), "peer exists as a permanent peer") {
			t.Errorf("%s %s %s for a connected permanent peer: %v; btcd answers -8 \"peer exists as a permanent peer\"",
				call.method, call.p1, call.p2, err)
		}
	}
}

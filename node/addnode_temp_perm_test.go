package node

import (
	"strconv"
	"testing"
)

// With a peer connected for now and a permanent one at one address (addnode
// onetry, then add), "node disconnect <addr>" disconnects the temporary one
// and succeeds, as btcd, which looks among its non-persistent peers only.
func TestDisconnectTemporaryBesidePermanent(t *testing.T) {
	a, addr, tempID, _ := tempAndPermPeers(t)

	_, err := rawRPC(t, a, "user", "pass", "node", `"disconnect"`, strconv.Quote(addr))
	if err != nil {
		still := false
		for _, sp := range a.peers.snapshot() {
			still = still || sp.ID() == tempID && sp.Connected()
		}
		t.Fatalf("node disconnect %s with a temporary and a permanent peer there: %v (temporary peer still "+
			"connected: %v); btcd disconnects the temporary one", addr, err, still)
	}
	waitFor(t, "the temporary peer to go", func() bool {
		for _, sp := range a.peers.snapshot() {
			if sp.ID() == tempID {
				return false
			}
		}
		return true
	})
	for _, sp := range a.peers.snapshot() {
		if sp.Addr() == addr && sp.persistent {
			return
		}
	}
	t.Error("the permanent peer went too")
}

// "addnode <addr> remove" disconnects the permanent peer at the address
// only, as btcd's removenode; the temporary one stays.
func TestAddNodeRemoveKeepsTemporary(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), false))
	b := startNode(t, testConfig(t, t.TempDir(), false))
	addr := b.P2PAddrs()[0].String()
	if err := a.ConnectPeer(addr, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the temporary peer", func() bool { return a.ConnectedCount() == 1 })
	var tempID int32
	for _, sp := range a.peers.snapshot() {
		tempID = sp.ID()
	}
	if _, err := rawRPC(t, a, "user", "pass", "addnode", strconv.Quote(addr), `"add"`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the permanent peer beside it", func() bool {
		for _, sp := range a.peers.snapshot() {
			if sp.Addr() == addr && sp.persistent {
				return true
			}
		}
		return false
	})
	if _, err := rawRPC(t, a, "user", "pass", "addnode", strconv.Quote(addr), `"remove"`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the permanent peer to go", func() bool {
		for _, sp := range a.peers.snapshot() {
			if sp.persistent {
				return false
			}
		}
		return true
	})
	for _, sp := range a.peers.snapshot() {
		if sp.ID() == tempID && sp.Connected() {
			return
		}
	}
	t.Errorf("addnode %s remove also disconnected the temporary (onetry) peer %d; btcd removes the persistent one only", addr, tempID)
}

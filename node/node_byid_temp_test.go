package node

import (
	"strconv"
	"testing"
)

// "node disconnect <id>" names one peer, as btcd's DisconnectByID: with two
// temporary peers at one address (two "node connect <addr> temp" before
// either finished its handshake), disconnecting one by its id leaves the
// other connected.
func TestNodeDisconnectByIDKeepsOtherTemporaryPeerAtAddress(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), false))
	b := startNode(t, testConfig(t, t.TempDir(), false))
	addr := b.P2PAddrs()[0].String()
	if err := a.ConnectPeer(addr, false); err != nil {
		t.Fatal(err)
	}
	if err := a.ConnectPeer(addr, false); err != nil {
		t.Skipf("second temporary connection refused (the first finished its handshake first): %v", err)
	}
	var ids []int32
	waitFor(t, "two temporary peers at one address", func() bool {
		ids = ids[:0]
		for _, sp := range a.peers.snapshot() {
			if sp.Addr() == addr && !sp.persistent {
				ids = append(ids, sp.ID())
			}
		}
		return len(ids) == 2
	})
	first, second := ids[0], ids[1]
	if _, err := rawRPC(t, a, "user", "pass", "node", `"disconnect"`, strconv.Quote(strconv.Itoa(int(first)))); err != nil {
		t.Fatalf("node disconnect %d: %v", first, err)
	}
	waitFor(t, "the named peer to go", func() bool { return !peerConnected(a, first) })
	if !peerConnected(a, second) {
		t.Errorf("node disconnect %d (one temporary peer at %s) also disconnected temporary peer %d at the same address; "+
			"btcd's DisconnectByID disconnects the peer with that id only", first, addr, second)
	}
}

package node

import (
	"strconv"
	"strings"
	"testing"
)

// tempAndPermPeers connects a to b twice at one address: a temporary peer
// (onetry) and a permanent one beside it, and returns their ids.
func tempAndPermPeers(t *testing.T) (a *Node, addr string, tempID, permID int32) {
	t.Helper()
	a = startNode(t, testConfig(t, t.TempDir(), false))
	b := startNode(t, testConfig(t, t.TempDir(), false))
	addr = b.P2PAddrs()[0].String()
	if err := a.ConnectPeer(addr, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the temporary peer", func() bool { return a.ConnectedCount() == 1 })
	if err := a.ConnectPeer(addr, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the permanent peer beside it", func() bool {
		tempID, permID = 0, 0
		for _, sp := range a.peers.snapshot() {
			if sp.Addr() != addr {
				continue
			}
			if sp.persistent {
				permID = sp.ID()
			} else {
				tempID = sp.ID()
			}
		}
		return tempID != 0 && permID != 0
	})
	return a, addr, tempID, permID
}

func peerConnected(a *Node, id int32) bool {
	for _, sp := range a.peers.snapshot() {
		if sp.ID() == id && sp.Connected() {
			return true
		}
	}
	return false
}

// As btcd's "node disconnect <id>" (DisconnectByID looks among the inbound
// and outbound peers only), a permanent peer's id is answered "can't
// disconnect a permanent peer, use remove", and the temporary peer at the
// same address stays connected.
func TestNodeDisconnectByPermanentIDKeepsTemporary(t *testing.T) {
	a, addr, tempID, permID := tempAndPermPeers(t)
	_, err := rawRPC(t, a, "user", "pass", "node", `"disconnect"`, strconv.Quote(strconv.Itoa(int(permID))))
	if err == nil || !strings.Contains(err.Error(), "permanent") {
		t.Errorf("node disconnect %d (the permanent peer at %s): error %v; btcd: \"can't disconnect a permanent peer, use remove\"",
			permID, addr, err)
	}
	if !peerConnected(a, tempID) {
		t.Errorf("node disconnect %d (the permanent peer's id) disconnected the temporary peer %d at the same address", permID, tempID)
	}
}

// As btcd's "node remove <id>" (RemoveByID looks among the persistent peers
// only), a temporary peer's id is answered "can't remove a temporary peer,
// use disconnect", and the permanent peer at the same address stays.
func TestNodeRemoveByTemporaryIDKeepsPermanent(t *testing.T) {
	a, addr, tempID, permID := tempAndPermPeers(t)
	_, err := rawRPC(t, a, "user", "pass", "node", `"remove"`, strconv.Quote(strconv.Itoa(int(tempID))))
	if err == nil || !strings.Contains(err.Error(), "temporary") {
		t.Errorf("node remove %d (the temporary peer at %s): error %v; btcd: \"can't remove a temporary peer, use disconnect\"",
			tempID, addr, err)
	}
	if !peerConnected(a, permID) {
		t.Errorf("node remove %d (the temporary peer's id) removed the permanent peer %d at the same address", tempID, permID)
	}
	added := false
	for _, an := range (rpcBackend{a}).AddedNodes() {
		added = added || an.Addr == addr
	}
	if !added {
		t.Errorf("node remove %d (the temporary peer's id) dropped %s from the added nodes", tempID, addr)
	}
}

// As btcd's handleNode, "node connect" takes an address only: a number is
// not a peer's id there (btcd dials it as a host name and fails), so it
// never makes the temporary peer with that id permanent; and an unknown
// subcommand is refused as such whatever its target.
func TestNodeConnectTakesNoPeerID(t *testing.T) {
	a, addr, tempID, _ := tempAndPermPeers(t)
	if err := (rpcBackend{a}).RemoveNode(addr); err != nil {
		t.Fatal(err)
	}
	id := strconv.Quote(strconv.Itoa(int(tempID)))
	if _, err := rawRPC(t, a, "user", "pass", "node", `"connect"`, id, `"perm"`); err == nil {
		t.Errorf("node connect %s perm succeeded; btcd dials %s as a host name and fails", id, id)
	}
	for _, an := range (rpcBackend{a}).AddedNodes() {
		if an.Addr == addr {
			t.Errorf("node connect %s perm added the address of the peer with that id, %s", id, addr)
		}
	}
	_, err := rawRPC(t, a, "user", "pass", "node", `"bogus"`, `"99999"`)
	if err == nil || !strings.Contains(err.Error(), "invalid subcommand for node") {
		t.Errorf("node bogus 99999: error %v; btcd: \"invalid subcommand for node\"", err)
	}
}

package node

// btcd's network and mining methods, answered as btcd v0.26.2 answers
// them.

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/btcjson"
)

// getnodeaddresses with a count of 0 (or less) is refused with -8 "Address
// count out of range", as btcd's handleGetNodeAddresses.
func TestGetNodeAddressesCountOutOfRange(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	for _, count := range []string{"0", "-1"} {
		_, err := rawRPC(t, n, "user", "pass", "getnodeaddresses", count)
		e := parityRPCError(err)
		if e == nil || e.Code != btcjson.ErrRPCInvalidParameter || e.Message != "Address count out of range" {
			t.Fatalf("getnodeaddresses %s: %v; btcd answers -8 Address count out of range", count, err)
		}
	}
}

// setgenerate true with genproclimit 0 stops the miner rather than
// starting it, as btcd ("if genProcLimit == 0 ... generate = false").
func TestSetGenerateZeroProcsStopsMiner(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := rawRPC(t, n, "user", "pass", "setgenerate", "true", "0"); err != nil {
		t.Fatalf("setgenerate true 0: %v", err)
	}
	out, err := rawRPC(t, n, "user", "pass", "getgenerate")
	if err != nil || string(out) != "false" {
		_, _ = rawRPC(t, n, "user", "pass", "setgenerate", "false")
		t.Fatalf("getgenerate after setgenerate true 0: %s %v; btcd leaves the miner stopped", out, err)
	}
}

// "node connect <addr>" without a subcommand connects a temporary peer, as
// btcd (connectSubCmd defaults to "temp"): it is not among the added nodes
// and "node disconnect" drops it.
func TestNodeConnectDefaultsToTemporary(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), false))
	b := startNode(t, testConfig(t, t.TempDir(), false))
	addr := b.P2PAddrs()[0].String()
	if _, err := rawRPC(t, a, "user", "pass", "node", `"connect"`, strconv.Quote(addr)); err != nil {
		t.Fatalf("node connect %s: %v", addr, err)
	}
	waitFor(t, "the peer", func() bool { return a.ConnectedCount() == 1 })
	out, err := rawRPC(t, a, "user", "pass", "getaddednodeinfo", "false")
	var added []string
	if err != nil || json.Unmarshal(out, &added) != nil || len(added) != 0 {
		t.Fatalf("getaddednodeinfo after node connect without a subcommand: %s %v; btcd connects a temporary peer", out, err)
	}
	for _, sp := range a.peers.snapshot() {
		if sp.persistent {
			t.Fatalf("node connect %s without a subcommand made a permanent peer; btcd's default is temp", addr)
		}
	}
}

// getaddednodeinfo of an address that was not added answers -24 "Node has
// not been added", as btcd.
func TestGetAddedNodeInfoNotAdded(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	for _, dns := range []string{"false", "true"} {
		_, err := rawRPC(t, n, "user", "pass", "getaddednodeinfo", dns, `"127.0.0.1:1"`)
		e := parityRPCError(err)
		if e == nil || e.Code != btcjson.ErrRPCClientNodeNotAdded || e.Message != "Node has not been added" {
			t.Fatalf("getaddednodeinfo %s of an address not added: %v; btcd answers -24 Node has not been added", dns, err)
		}
	}
}

// "node remove <addr>" of a temporary peer answers -1 "can't remove a
// temporary peer, use disconnect", as btcd's handleNode (RemoveByAddr
// fails and peerExists finds the peer at the address).
func TestNodeRemoveByAddrRefusesTemporaryPeer(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	parityRawPeer(t, n)
	c := rpcClient(t, n.RPCAddrs()[0].String())
	addr := parityPeerInfo(t, c)[0].Addr
	_, err := rawRPC(t, n, "user", "pass", "node", `"remove"`, strconv.Quote(addr))
	e := parityRPCError(err)
	if e == nil || e.Code != btcjson.ErrRPCMisc || e.Message != "can't remove a temporary peer, use disconnect" {
		t.Fatalf("node remove %s (a temporary peer): %v; btcd answers -1 can't remove a temporary peer", addr, err)
	}
}

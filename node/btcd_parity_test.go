package node

// Behaviours of btcd v0.26.2's RPC server for peers and the node that its
// clients rely on.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
)

// parityRawPeer connects an outside peer to n and waits until n counts it.
func parityRawPeer(t *testing.T, n *Node) {
	t.Helper()
	_, verack := rawPeer(t, n.P2PAddrs()[0].String())
	select {
	case <-verack:
	case <-time.After(testWait):
		t.Fatal("no handshake")
	}
	waitFor(t, "the peer to be registered", func() bool { return n.ConnectedCount() == 1 })
}

// parityPeerInfo returns the node's getpeerinfo over RPC.
func parityPeerInfo(t *testing.T, c *rpcclient.Client) []btcjson.GetPeerInfoResult {
	t.Helper()
	peers, err := c.GetPeerInfo()
	if err != nil {
		t.Fatal(err)
	}
	return peers
}

// parityRPCError extracts the RPC error of a RawRequest.
func parityRPCError(err error) *btcjson.RPCError {
	for err != nil {
		if e, ok := err.(*btcjson.RPCError); ok {
			return e
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return nil
		}
		err = u.Unwrap()
	}
	return nil
}

// getpeerinfo reports each peer's ban score, as btcd's does.
func TestGetPeerInfoReportsBanScore(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	p, verack := rawPeer(t, n.P2PAddrs()[0].String())
	select {
	case <-verack:
	case <-time.After(testWait):
		t.Fatal("no handshake")
	}
	waitFor(t, "the peer to be registered", func() bool { return n.ConnectedCount() == 1 })
	// One unrequested block in notfound: +20 persistent, as btcd
	// (server.go:1600-1606), below the ban threshold.
	nf := wire.NewMsgNotFound()
	_ = nf.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &chainhash.Hash{1}))
	p.QueueMessage(nf, nil)
	waitFor(t, "the ban score to rise", func() bool {
		for _, sp := range n.peers.snapshot() {
			if sp.banScore.Int() == 20 {
				return true
			}
		}
		return false
	})
	c := rpcClient(t, n.RPCAddrs()[0].String())
	peers := parityPeerInfo(t, c)
	if len(peers) != 1 || peers[0].BanScore != 20 {
		t.Fatalf("getpeerinfo %+v: banscore should be 20 as in btcd", peers)
	}
}

// btcd's "addnode <addr> remove" only removes permanent peers and answers -8
// "peer not found" for a temporary one.
func TestAddNodeRemoveRefusesTemporaryPeer(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	parityRawPeer(t, n)
	c := rpcClient(t, n.RPCAddrs()[0].String())
	addr := parityPeerInfo(t, c)[0].Addr
	_, err := c.RawRequest("addnode", []json.RawMessage{json.RawMessage(strconv.Quote(addr)),
		json.RawMessage(`"remove"`)})
	e := parityRPCError(err)
	if e == nil || e.Code != btcjson.ErrRPCInvalidParameter || e.Message != "peer not found" {
		t.Fatalf("addnode %s remove of an inbound peer: %v; btcd answers -8 peer not found", addr, err)
	}
}

// btcd's "node remove <id>" of a temporary peer answers -1 "can't remove a
// temporary peer, use disconnect".
func TestNodeRemoveRefusesTemporaryPeer(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	parityRawPeer(t, n)
	c := rpcClient(t, n.RPCAddrs()[0].String())
	id := parityPeerInfo(t, c)[0].ID
	_, err := c.RawRequest("node", []json.RawMessage{json.RawMessage(`"remove"`),
		json.RawMessage(fmt.Sprintf(`"%d"`, id))})
	e := parityRPCError(err)
	if e == nil || e.Code != btcjson.ErrRPCMisc || e.Message != "can't remove a temporary peer, use disconnect" {
		t.Fatalf("node remove %d (inbound): %v; btcd answers -1 can't remove a temporary peer", id, err)
	}
}

// btcd's "node disconnect" of a permanent peer answers -1 (ErrRPCMisc) "can't
// disconnect a permanent peer, use remove".
func TestNodeDisconnectPermanentPeerCode(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), false))
	b := startNode(t, testConfig(t, t.TempDir(), false))
	if err := a.ConnectPeer(b.P2PAddrs()[0].String(), true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the permanent peer", func() bool { return a.ConnectedCount() == 1 })
	c := rpcClient(t, a.RPCAddrs()[0].String())
	id := parityPeerInfo(t, c)[0].ID
	_, err := c.RawRequest("node", []json.RawMessage{json.RawMessage(`"disconnect"`),
		json.RawMessage(fmt.Sprintf(`"%d"`, id))})
	e := parityRPCError(err)
	if e == nil || e.Code != btcjson.ErrRPCMisc || e.Message != "can't disconnect a permanent peer, use remove" {
		t.Fatalf("node disconnect %d (permanent): %v; btcd answers -1", id, err)
	}
}

// btcd's getinfo reports --proxy.
func TestGetInfoReportsProxy(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.Proxy = "127.0.0.1:9"
	n := startNode(t, cfg)
	c := rpcClient(t, n.RPCAddrs()[0].String())
	raw, err := c.RawRequest("getinfo", nil)
	if err != nil {
		t.Fatal(err)
	}
	var info btcjson.InfoChainResult
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	if info.Proxy != cfg.Proxy {
		t.Fatalf("getinfo proxy %q, btcd reports %q", info.Proxy, cfg.Proxy)
	}
}

// btcd's getinfo reports the offset of the peers' median time (the version
// messages' timestamps) from the clock.
func TestGetInfoReportsTimeOffset(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	ahead := time.Now().Add(90 * time.Second)
	for i := 0; i < 5; i++ {
		n.timeSource.AddTimeSample(fmt.Sprintf("192.0.2.%d", i+1), ahead)
	}
	c := rpcClient(t, n.RPCAddrs()[0].String())
	// Asked late in a second: the offset is whole seconds, whatever the
	// clock's fraction.
	for ns := time.Now().Nanosecond(); ns < 600_000_000 || ns > 900_000_000; ns = time.Now().Nanosecond() {
		time.Sleep(5 * time.Millisecond)
	}
	raw, err := c.RawRequest("getinfo", nil)
	if err != nil {
		t.Fatal(err)
	}
	var info btcjson.InfoChainResult
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	if want := int64(n.timeSource.Offset().Seconds()); want == 0 || info.TimeOffset != want {
		t.Fatalf("getinfo timeoffset %d, the node's median time is %d s off", info.TimeOffset, want)
	}
}

// btcd's "addnode <addr> add" of a peer connected for now (onetry) adds it
// to keep: only a permanent peer of that address refuses it.
func TestAddNodeAddOfTemporaryPeer(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), false))
	b := startNode(t, testConfig(t, t.TempDir(), false))
	addr := b.P2PAddrs()[0].String()
	if err := a.ConnectPeer(addr, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the temporary peer", func() bool { return a.ConnectedCount() == 1 })
	if err := a.ConnectPeer(addr, true); err != nil {
		t.Fatalf("addnode %s add of a temporary peer: %v; btcd keeps it", addr, err)
	}
	waitFor(t, "the permanent peer", func() bool {
		for _, sp := range a.peers.snapshot() {
			if sp.persistent && sp.Addr() == addr {
				return true
			}
		}
		return false
	})
	if err := a.ConnectPeer(addr, true); err == nil {
		t.Error("a second addnode add of the permanent peer was accepted")
	}
}

package node

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// rawPeer connects btcd's peer package to the node as an outside peer, and
// reports when the verack arrived.
func rawPeer(t *testing.T, addr string) (*peer.Peer, <-chan struct{}) {
	t.Helper()
	verack := make(chan struct{})
	p, err := peer.NewOutboundPeer(&peer.Config{
		ChainParams:      &chaincfg.RegressionNetParams,
		Services:         wire.SFNodeNetwork | wire.SFNodeWitness,
		UserAgentName:    "test",
		UserAgentVersion: "1.0",
		AllowSelfConns:   true,
		Listeners: peer.MessageListeners{
			OnVerAck: func(*peer.Peer, *wire.MsgVerAck) { close(verack) },
		},
	}, addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.AssociateConnection(conn)
	t.Cleanup(p.Disconnect)
	return p, verack
}

// TestMisbehavingPeerIsBanned sends notfound for blocks nobody asked for:
// the node raises the peer's ban score past the threshold, disconnects it,
// and refuses its host afterwards; the node keeps serving.
func TestMisbehavingPeerIsBanned(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	addr := n.P2PAddrs()[0].String()
	p, verack := rawPeer(t, addr)
	select {
	case <-verack:
	case <-time.After(testWait):
		t.Fatal("no handshake")
	}
	waitFor(t, "the peer to be registered", func() bool { return n.ConnectedCount() == 1 })

	notFound := wire.NewMsgNotFound()
	for i := 0; i < 6; i++ {
		_ = notFound.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &chainhash.Hash{byte(i + 1)}))
	}
	p.QueueMessage(notFound, nil)
	select {
	case <-p.Done():
	case <-time.After(testWait):
		t.Fatal("misbehaving peer was not disconnected")
	}
	waitFor(t, "the peer to be removed", func() bool { return n.ConnectedCount() == 0 })
	if !n.bans.isBanned("127.0.0.1") {
		t.Fatal("host not banned")
	}

	// A new connection from the banned host is closed at once.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(testWait))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("banned host got data")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("banned host's connection stayed open")
	}

	// The node still mines and serves.
	if _, err := n.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
}

// TestAddAndRemovePermanentPeer adds a permanent peer that does not exist
// and removes it again, as addnode add/remove do.
func TestAddAndRemovePermanentPeer(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := n.ConnectPeer(addr, true); err != nil {
		t.Fatal(err)
	}
	if err := n.ConnectPeer(addr, true); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("adding the same peer twice: %v", err)
	}
	if err := n.DisconnectPeer(addr); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := n.DisconnectPeer(addr); err == nil {
		t.Fatal("removing it twice succeeded")
	}
}

// TestStartFailureStopsCleanly occupies the RPC port between New and
// Start: Start fails, Stop still closes everything and the datadir opens
// again.
func TestStartFailureStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	cfg.RPCListeners = []string{freePort(t)}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", cfg.RPCListeners[0])
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if err := n.Start(); err == nil {
		t.Fatal("Start succeeded on a busy RPC port")
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop after a failed Start: %v", err)
	}
	n2 := startNode(t, testConfig(t, dir, true))
	generate(t, n2, 1)
}

// TestReorgFollowsLongerPeerChain lets two nodes mine separate chains, then
// connects the shorter one to the longer: it reorganizes, its Electrum index
// follows to the new tip, and an Electrum client subscribed to headers and
// to the mining script is told about the new tip and the changed history.
func TestReorgFollowsLongerPeerChain(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), true))
	b := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, a, 12)
	generate(t, b, 10)
	c := dialElectrum(t, b)
	c.call("server.version", "node-test", "1.4")
	c.call("blockchain.headers.subscribe")
	pkScript, _ := txscript.PayToAddrScript(testMiningAddr(t))
	sh := indexers.ScriptHashFromScript(pkScript).String()
	before := c.call("blockchain.scripthash.subscribe", sh)

	if err := b.ConnectPeer(a.P2PAddrs()[0].String(), true); err != nil {
		t.Fatal(err)
	}
	want := a.Chain().BestSnapshot()
	waitFor(t, "the reorganization", func() bool {
		tip, err := b.index.electrum.Tip()
		return err == nil && tip.Hash == want.Hash && b.Chain().BestSnapshot().Hash == want.Hash
	})
	for {
		header := c.notification("blockchain.headers.subscribe")
		if h, _ := header[0].(map[string]any)["height"].(float64); h == 12 {
			break
		}
	}
	note := c.notification("blockchain.scripthash.subscribe")
	if note[0] != sh || note[1] == before {
		t.Fatalf("status notification %v after the reorganization", note)
	}
	hist, _ := c.call("blockchain.scripthash.get_history", sh).([]any)
	if len(hist) != 12 {
		t.Fatalf("history after the reorganization has %d entries, want 12", len(hist))
	}
	for i, e := range hist {
		block, err := a.Chain().BlockByHeight(int32(i + 1))
		if err != nil {
			t.Fatal(err)
		}
		if e.(map[string]any)["tx_hash"] != block.Transactions()[0].Hash().String() {
			t.Fatalf("history entry %d is %v, not the coinbase of the winning chain", i, e)
		}
	}
}

// TestV2TransportSync syncs two nodes over BIP 324 encrypted transport
// (--v2transport on both).
func TestV2TransportSync(t *testing.T) {
	cfgA := testConfig(t, t.TempDir(), false)
	cfgA.V2Transport = true
	a := startNode(t, cfgA)
	if _, err := a.Generate(5, nil); err != nil {
		t.Fatal(err)
	}
	cfgB := testConfig(t, t.TempDir(), false)
	cfgB.V2Transport = true
	cfgB.ConnectPeers = []string{a.P2PAddrs()[0].String()}
	cfgB.Listeners = nil
	b := startNode(t, cfgB)
	want := a.Chain().BestSnapshot().Hash
	waitFor(t, "sync over v2 transport", func() bool { return b.Chain().BestSnapshot().Hash == want })
	for _, p := range b.Peers() {
		if !p.StatsSnapshot().V2Connection {
			t.Fatalf("peer %s is not a v2 connection", p)
		}
	}
}

package node

// How the node treats P2P peers where btcd v0.26.2's server does something
// a hostile peer could otherwise use.

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// orphanTx returns a transaction spending an output of a transaction nobody
// knows: the mempool keeps it as an orphan.
func orphanTx(t *testing.T) *wire.MsgTx {
	t.Helper()
	var parent chainhash.Hash
	if _, err := rand.Read(parent[:]); err != nil {
		t.Fatal(err)
	}
	pkScript, err := txscript.PayToAddrScript(testMiningAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(2)
	sig := bytes.Repeat([]byte{0x01}, 72)
	sigScript, err := txscript.NewScriptBuilder().AddData(sig).AddData(testPub.SerializeCompressed()).Script()
	if err != nil {
		t.Fatal(err)
	}
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&parent, 0), sigScript, nil))
	tx.AddTxOut(wire.NewTxOut(50_000, pkScript))
	return tx
}

// pingSync waits until the node processed everything p sent before: the
// node answers a ping after the messages queued ahead of it. It reports
// false when p was disconnected instead.
func pingSync(t *testing.T, p *peer.Peer, pongs <-chan struct{}) bool {
	t.Helper()
	p.QueueMessage(wire.NewMsgPing(uint64(time.Now().UnixNano())), nil)
	select {
	case <-pongs:
		return true
	case <-p.Done():
		return false
	case <-time.After(testWait):
		t.Fatal("no pong")
		return false
	}
}

// TestDisconnectedPeerOrphansEvicted: the orphan transactions a peer sent
// leave the pool when it disconnects, as btcd evicts them by the peer's
// tag: a peer may not fill the orphan pool and leave it full.
func TestDisconnectedPeerOrphansEvicted(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	pongs := make(chan struct{}, 10)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnPong: func(*peer.Peer, *wire.MsgPong) { pongs <- struct{}{} },
	})
	waitFor(t, "the peer to be registered", func() bool { return n.ConnectedCount() == 1 })

	// The node registers the peer with netsync asynchronously; a
	// transaction arriving before that is dropped, so send until five
	// orphans were kept.
	var hashes []chainhash.Hash
	for tries := 0; len(hashes) < 5; tries++ {
		if tries == 100 {
			t.Fatalf("only %d orphans kept", len(hashes))
		}
		tx := orphanTx(t)
		p.QueueMessage(tx, nil)
		if !pingSync(t, p, pongs) {
			t.Fatal("peer disconnected for sending orphans")
		}
		if h := tx.TxHash(); n.TxPool().IsOrphanInPool(&h) {
			hashes = append(hashes, h)
		}
	}

	p.Disconnect()
	waitFor(t, "the peer to be removed", func() bool { return n.ConnectedCount() == 0 })
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := 0
		for _, h := range hashes {
			if n.TxPool().IsOrphanInPool(&h) {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d orphans of the disconnected peer are still in the pool (btcd evicts them by peer tag)", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBlocksOnlyDisconnectsTxAnnouncer: with --blocksonly the node tells
// peers not to relay transactions; one (BIP 37 or newer) that announces
// them anyway is disconnected, as btcd does.
func TestBlocksOnlyDisconnectsTxAnnouncer(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.BlocksOnly = true
	n := startNode(t, cfg)
	pongs := make(chan struct{}, 10)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnPong: func(*peer.Peer, *wire.MsgPong) { pongs <- struct{}{} },
	})
	waitFor(t, "the peer to be registered", func() bool { return n.ConnectedCount() == 1 })

	inv := wire.NewMsgInv()
	_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeTx, &chainhash.Hash{7}))
	p.QueueMessage(inv, nil)
	if pingSync(t, p, pongs) {
		t.Fatal("peer announcing transactions to a --blocksonly node was not disconnected (btcd disconnects it)")
	}
}

// TestGetAddrDoesNotEchoPeerAddresses: a getaddr is not answered with the
// addresses the asking peer sent, as btcd's is not: a peer may not plant
// addresses and look for them in the answers to tell nodes apart.
func TestGetAddrDoesNotEchoPeerAddresses(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	got := make(chan []string, 10)
	pongs := make(chan struct{}, 10)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnPong: func(*peer.Peer, *wire.MsgPong) { pongs <- struct{}{} },
		OnAddr: func(_ *peer.Peer, m *wire.MsgAddr) {
			var s []string
			for _, na := range m.AddrList {
				s = append(s, net.JoinHostPort(na.IP.String(), "8333"))
			}
			got <- s
		},
		OnAddrV2: func(_ *peer.Peer, m *wire.MsgAddrV2) {
			var s []string
			for _, na := range m.AddrList {
				s = append(s, net.JoinHostPort(na.Addr.String(), "8333"))
			}
			got <- s
		},
	})
	waitFor(t, "the peer to be registered", func() bool { return n.ConnectedCount() == 1 })
	// Addresses the node learnt elsewhere, which the answer may hold.
	others := make(map[string]bool)
	var learnt []*wire.NetAddressV2
	for i := 1; i <= 40; i++ {
		ip := net.IPv4(byte(100+i), byte(i), 2, 2)
		learnt = append(learnt, wire.NetAddressV2FromBytes(time.Now(), wire.SFNodeNetwork, ip, 8333))
		others[net.JoinHostPort(ip.String(), "8333")] = true
	}
	n.addrManager.AddAddresses(learnt, wire.NetAddressV2FromBytes(time.Now(), 0, net.IPv4(9, 9, 9, 9), 8333))

	planted := make(map[string]bool)
	if p.WantsAddrV2() {
		msg := wire.NewMsgAddrV2()
		for i := 1; i <= 40; i++ {
			ip := net.IPv4(byte(20+i), byte(i), 1, 1)
			msg.AddrList = append(msg.AddrList, wire.NetAddressV2FromBytes(time.Now(), wire.SFNodeNetwork, ip, 8333))
			planted[net.JoinHostPort(ip.String(), "8333")] = true
		}
		p.QueueMessage(msg, nil)
	} else {
		msg := wire.NewMsgAddr()
		for i := 1; i <= 40; i++ {
			ip := net.IPv4(byte(20+i), byte(i), 1, 1)
			_ = msg.AddAddress(wire.NewNetAddressTimestamp(time.Now(), wire.SFNodeNetwork, ip, 8333))
			planted[net.JoinHostPort(ip.String(), "8333")] = true
		}
		p.QueueMessage(msg, nil)
	}
	if !pingSync(t, p, pongs) {
		t.Fatal("disconnected after addr")
	}
	p.QueueMessage(wire.NewMsgGetAddr(), nil)
	if !pingSync(t, p, pongs) {
		t.Fatal("disconnected after getaddr")
	}
	select {
	case addrs := <-got:
		fromOthers := 0
		for _, a := range addrs {
			if planted[a] {
				t.Fatalf("getaddr answer echoes back %s, an address this peer sent; answer %v", a, addrs)
			}
			if others[a] {
				fromOthers++
			}
		}
		if fromOthers == 0 {
			t.Fatalf("getaddr answer %v holds none of the addresses learnt elsewhere", addrs)
		}
	case <-time.After(testWait):
		t.Fatal("no answer to getaddr")
	}
}

// TestInboundHandshakeSourceLimit: one source network (/24, /64) may have
// at most 8 inbound connections between accept and the handshake's end, as
// in btcd; the 9th is closed at once.
func TestInboundHandshakeSourceLimit(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	addr := n.P2PAddrs()[0].String()
	for i := 0; i < 8; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// The node admits accepted connections on goroutines of their own:
	// wait until the 8 are counted.
	for deadline := time.Now().Add(testWait); ; time.Sleep(5 * time.Millisecond) {
		n.admission.mu.Lock()
		pending := 0
		for _, s := range n.admission.sources {
			pending += s.pending
		}
		n.admission.mu.Unlock()
		if pending == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the 8 connections counted as pending", pending)
		}
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("9th concurrent pending handshake from one source was accepted and kept open (btcd closes it)")
	}
}

// TestInboundV2HandshakeRateLimited: with --v2transport the key work of
// inbound v2 handshakes is rate-limited per source (a burst of 4, then 2 a
// second) and in all, as in btcd: a connection sending one non-v1 byte
// does not get a key pair generated for free, without bound.
func TestInboundV2HandshakeRateLimited(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.V2Transport = true
	n := startNode(t, cfg)
	addr := n.P2PAddrs()[0].String()

	const tries = 16
	start := time.Now()
	answered := 0
	for i := 0; i < tries; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Not the first byte of the regtest magic: the responder takes
		// the v2 path and generates its key.
		if _, err := c.Write([]byte{0x00}); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, 64)); err == nil {
			answered++
		}
	}
	elapsed := time.Since(start)
	// btcd: at most the burst of 4 plus 2 per second elapsed (and at
	// most 8 pending per source).
	allowed := 4 + int(2*elapsed.Seconds()) + 1
	if allowed > 8 {
		allowed = 8
	}
	if answered > allowed {
		t.Fatalf("%d of %d v2 handshakes from one source answered in %v; btcd answers at most %d",
			answered, tries, elapsed, allowed)
	}
}

// TestOneTryV2PeerFallsBackToV1: with --v2transport, a one-try outbound
// connection whose v2 handshake shows a v1-only peer is made again over
// v1, as btcd makes it.
func TestOneTryV2PeerFallsBackToV1(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), false)) // v1 only
	cfgB := testConfig(t, t.TempDir(), false)
	cfgB.V2Transport = true
	b := startNode(t, cfgB)
	if err := b.ConnectPeer(a.P2PAddrs()[0].String(), false); err != nil {
		t.Fatal(err)
	}
	// btcd retries after connectionRetryInterval (5 s) over v1.
	deadline := time.Now().Add(20 * time.Second)
	for b.ConnectedCount() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("one-try connection to a v1-only peer never fell back to v1 (btcd reconnects with v1)")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMaxInboundReservesPermanentAndAutomaticOutbound: --maxpeers is
// shared as btcd shares it: the permanent peers first, then the automatic
// outbound target out of the rest, and inbound connections only what is
// left (with --maxpeers=10 and 3 --addpeer: 7 automatic, no inbound).
func TestMaxInboundReservesPermanentAndAutomaticOutbound(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.RegressionTest = false
	cfg.SigNet = true
	cfg.MiningAddrs = nil
	cfg.MaxPeers = 10
	for i := 0; i < 3; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.AddPeers = append(cfg.AddPeers, l.Addr().String())
		l.Close()
	}
	n := startNode(t, cfg)
	if n.Params().Name != chaincfg.SigNetParams.Name {
		t.Fatalf("network %s", n.Params().Name)
	}
	c, err := net.Dial("tcp", n.P2PAddrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("inbound connection accepted although permanent + automatic outbound peers take all 10 slots (btcd's maxInbound is 0)")
	}
}

// TestProxyAddrYouNotLeaked: with --proxy, a peer connecting from the
// proxy's host is told 0.0.0.0 in the version, not its address.
func TestProxyAddrYouNotLeaked(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.Proxy = "127.0.0.1:9" // only its host matters here
	n := startNode(t, cfg)
	addrYou := make(chan wire.NetAddress, 1)
	listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnVersion: func(_ *peer.Peer, m *wire.MsgVersion) *wire.MsgReject {
			addrYou <- m.AddrYou
			return nil
		},
	})
	got := recv(t, addrYou, "the node's version")
	if !got.IP.IsUnspecified() || got.Port != 0 {
		t.Fatalf("version sent to a peer connecting from the proxy host has addr_recv %v:%d (btcd sends 0.0.0.0:0)", got.IP, got.Port)
	}
}

// TestOneHostCannotSkewNetworkTime: the network-adjusted time takes one
// sample per host, so connections of one host on many ports cannot move it
// (nor grow the samples' keys without bound).
func TestOneHostCannotSkewNetworkTime(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	addr := n.P2PAddrs()[0].String()
	params := &chaincfg.RegressionNetParams
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, wire.SFNodeNetwork|wire.SFNodeWitness)
		you := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, 0)
		v := wire.NewMsgVersion(me, you, uint64(i+1)*7919, 0)
		v.Services = wire.SFNodeNetwork | wire.SFNodeWitness
		v.Timestamp = time.Unix(time.Now().Add(time.Hour).Unix(), 0)
		if err := wire.WriteMessage(c, v, wire.ProtocolVersion, params.Net); err != nil {
			t.Fatal(err)
		}
		// The node answers with its own version once it processed ours.
		_ = c.SetReadDeadline(time.Now().Add(testWait))
		if _, _, err := wire.ReadMessage(c, wire.ProtocolVersion, params.Net); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	if off := n.timeSource.Offset(); off >= 30*time.Minute {
		t.Fatalf("one host (5 connections) moved the network-adjusted time by %v", off)
	}
}

package node

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestAddNodeOneTryAtMaxPeers: with --maxpeers reached, "addnode <addr>
// onetry" (and "node connect <addr> temp") is refused with btcd's RPC error
// "max peers reached", not answered success and the connection then
// dropped at its handshake.
func TestAddNodeOneTryAtMaxPeers(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.MaxPeers = 1
	n := startNode(t, cfg)
	parityRawPeer(t, n) // the one peer --maxpeers allows

	// The peer to try: btcd's peer package behind a plain listener.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	handshake := make(chan *peer.Peer, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		verack := make(chan struct{})
		p := peer.NewInboundPeer(&peer.Config{
			ChainParams:      &chaincfg.RegressionNetParams,
			Services:         wire.SFNodeNetwork | wire.SFNodeWitness,
			UserAgentName:    "target",
			UserAgentVersion: "1.0",
			AllowSelfConns:   true,
			Listeners: peer.MessageListeners{
				OnVerAck: func(*peer.Peer, *wire.MsgVerAck) { close(verack) },
			},
		})
		p.AssociateConnection(conn)
		t.Cleanup(p.Disconnect)
		select {
		case <-verack:
			handshake <- p
		case <-p.Done():
		}
	}()

	c := rpcClient(t, n.RPCAddrs()[0].String())
	target := l.Addr().String()
	_, err = c.RawRequest("addnode", []json.RawMessage{json.RawMessage(strconv.Quote(target)),
		json.RawMessage(`"onetry"`)})
	if err != nil {
		// btcd's answer: refused up front, for the limit.
		if !strings.Contains(err.Error(), "max peers reached") {
			t.Fatalf("addnode onetry refused with %v, btcd says \"max peers reached\"", err)
		}
		return
	}

	// Accepted: then the connection must be kept.
	var p *peer.Peer
	select {
	case p = <-handshake:
	case <-time.After(testWait):
		t.Fatal("addnode onetry answered success but the node never connected")
	}
	deadline := time.After(testWait) // hang guard
	for {
		for _, sp := range n.peers.snapshot() {
			if sp.Addr() == target {
				return
			}
		}
		select {
		case <-p.Done():
			t.Fatalf("addnode %s onetry answered success with --maxpeers=1 reached, then the node "+
				"dropped the connection right after the handshake (getpeerinfo never shows it); "+
				"btcd answers the RPC error \"max peers reached\"", target)
		case <-deadline:
			t.Fatal("hang guard")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

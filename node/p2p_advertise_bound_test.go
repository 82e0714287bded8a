//go:build linux

package node

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// advertiseNetnsEnv marks the test binary run inside a network namespace
// of its own.
const advertiseNetnsEnv = "BTCD_ELECTRUM_TEST_IN_NETNS"

// TestBoundAddressAdvertisedAsBtcd: as btcd v0.26.2 (server.go,
// initListeners and addLocalAddress, addrmgr.BoundPrio), without
// --externalip the node adds the addresses its P2P listeners are bound to
// (for 0.0.0.0, every IPv4 address of the machine's interfaces) to its
// address manager's local addresses, and so advertises a routable one to
// each outbound peer once it is in sync: a node with a public address on
// its interface (a VPS) is found by other nodes without --externalip or
// --upnp.
//
// The test runs in a network namespace of its own (unshare -rn, which
// needs user namespaces; it is skipped where they are not allowed) whose
// loopback interface also holds 1.2.3.4, a routable address; the node
// listens on 0.0.0.0:18444, connects out to a test peer and must send it
// addr 1.2.3.4:18444 before its getaddr.
func TestBoundAddressAdvertisedAsBtcd(t *testing.T) {
	if os.Getenv(advertiseNetnsEnv) == "" {
		if out, err := exec.Command("unshare", "-rn", "ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			t.Skipf("cannot make a network namespace to add an address in (unshare -rn ip link set lo up: %v %s)",
				err, strings.TrimSpace(string(out)))
		}
		cmd := exec.Command("unshare", "-rn", os.Args[0], "-test.run=^TestBoundAddressAdvertisedAsBtcd$",
			"-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), advertiseNetnsEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a network namespace with 1.2.3.4 on an interface (%v):\n%s", err, lastBytes(string(out), 3000))
		}
		if strings.Contains(string(out), "--- SKIP") {
			t.Skipf("skipped in the network namespace:\n%s", lastBytes(string(out), 1000))
		}
		return
	}

	for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", "1.2.3.4/32", "dev", "lo"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Skipf("ip %v: %v %s", args, err, out)
		}
	}
	cfg := testConfig(t, t.TempDir(), false)
	cfg.Listeners = []string{"0.0.0.0:18444"}
	n := startNode(t, cfg)
	if _, err := n.Generate(1, nil); err != nil { // in sync: a recent tip
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The node queues its addr before its getaddr; the test peer reads
	// them in order.
	events := make(chan string, 100)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		p := peer.NewInboundPeer(&peer.Config{
			ChainParams: &chaincfg.RegressionNetParams, Services: wire.SFNodeNetwork | wire.SFNodeWitness,
			UserAgentName: "test", UserAgentVersion: "1.0", AllowSelfConns: true,
			Listeners: peer.MessageListeners{
				OnAddr: func(_ *peer.Peer, m *wire.MsgAddr) {
					for _, a := range m.AddrList {
						events <- "addr " + net.JoinHostPort(a.IP.String(), strconv.Itoa(int(a.Port)))
					}
				},
				OnAddrV2: func(_ *peer.Peer, m *wire.MsgAddrV2) {
					for _, a := range m.AddrList {
						events <- "addr " + net.JoinHostPort(a.Addr.String(), strconv.Itoa(int(a.Port)))
					}
				},
				OnGetAddr: func(*peer.Peer, *wire.MsgGetAddr) { events <- "getaddr" },
			},
		})
		p.AssociateConnection(conn)
		t.Cleanup(p.Disconnect)
	}()
	if err := n.ConnectPeer(ln.Addr().String(), false); err != nil {
		t.Fatal(err)
	}
	var advertised []string
	for {
		ev := recv(t, events, "getaddr from the node")
		if ev == "getaddr" {
			break
		}
		advertised = append(advertised, ev)
	}
	for _, a := range advertised {
		if a == "addr 1.2.3.4:18444" {
			return
		}
	}
	t.Fatalf("listening on 0.0.0.0:18444 with 1.2.3.4 on an interface, the node advertised %v to its outbound peer; "+
		"btcd v0.26.2 advertises 1.2.3.4:18444", advertised)
}

// lastBytes returns the last n bytes of s.
func lastBytes(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

package integration

import (
	"fmt"
	"net"
	"net/url"
	"testing"
)

// holdAddr listens on addr (a port the node had) as another program
// would, accepting and closing each connection, until the test ends.
func holdAddr(t *testing.T, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("holding %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
}

// listenAddrsOf returns the addresses a node reports, by listener.
func listenAddrsOf(n *Node) map[string]string {
	esp := ""
	if u, err := url.Parse(n.EsploraURL); err == nil {
		esp = u.Host
	}
	return map[string]string{"p2p": n.P2PAddr, "rpc": n.RPCAddr, "electrum": n.ElectrumAddr,
		"tls": n.ElectrumTLSAddr, "ws": n.ElectrumWSAddr, "wss": n.ElectrumWSSAddr, "esplora": esp}
}

// TestRestartFallbackEachListener: a node whose address another program
// took meanwhile starts again on other ports (Restart). For each listener kind, binary and in-process, the test stops
// the node, holds one of its addresses, and restarts it.
func TestRestartFallbackEachListener(t *testing.T) {
	if _, err := NodeBinary(); err != nil {
		t.Fatal(err)
	}
	for _, binary := range []bool{false, true} {
		for _, kind := range []string{"p2p", "rpc", "electrum", "tls", "ws", "wss", "esplora"} {
			t.Run(fmt.Sprintf("binary=%v/%s", binary, kind), func(t *testing.T) {
				n := StartNode(t, NodeConfig{Binary: binary, ElectrumTLS: true, ElectrumWS: true,
					ElectrumWSS: true, Esplora: true, Args: []string{"--esplorapath=/api"}})
				held := listenAddrsOf(n)[kind]
				if err := n.Stop(); err != nil {
					t.Fatal(err)
				}
				holdAddr(t, held)
				nn := n.Restart(t)
				for k, a := range listenAddrsOf(nn) {
					if a == "" {
						t.Errorf("restarted node reports no %s address", k)
					}
					if a == held {
						t.Errorf("restarted node reports %s address %s, which another program holds", k, a)
					}
				}
			})
		}
	}
}

// TestRestartArgsListenTakenP2P: a node with a P2P listener of its own
// in Args; another program takes the harness's P2P address before the
// restart. The node skips the address that does not bind (as btcd does)
// and starts on its other listener, so the restarted Node must not report
// the taken address as its P2PAddr.
func TestRestartArgsListenTakenP2P(t *testing.T) {
	for _, binary := range []bool{false, true} {
		t.Run(fmt.Sprintf("binary=%v", binary), func(t *testing.T) {
			extra, err := freeAddrs(1)
			if err != nil {
				t.Fatal(err)
			}
			n := StartNode(t, NodeConfig{Binary: binary, Args: []string{"--listen=" + extra[0]}})
			held := n.P2PAddr
			if err := n.Stop(); err != nil {
				t.Fatal(err)
			}
			holdAddr(t, held)
			nn := n.Restart(t)
			if nn.P2PAddr == held {
				t.Fatalf("the restarted node reports P2PAddr %s, an address another program holds (the node listens on %s only)",
					nn.P2PAddr, extra[0])
			}
		})
	}
}

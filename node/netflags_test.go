package node

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// socksRequest is one CONNECT a socks5 server received.
type socksRequest struct {
	user, pass string
	target     string // host:port as the client named it
	resolve    bool   // Tor's RESOLVE extension rather than CONNECT
}

// socks5 is a minimal SOCKS5 server for the tests: it accepts
// username/password (any) or no authentication, records every CONNECT and
// forwards it to route(target).
type socks5 struct {
	ln    net.Listener
	route func(target string) string

	mu       sync.Mutex
	requests []socksRequest
}

// startSOCKS5 listens on loopback until the test ends.
func startSOCKS5(t *testing.T, route func(string) string) *socks5 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &socks5{ln: ln, route: route}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

// got returns the CONNECT requests so far.
func (s *socks5) got() []socksRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]socksRequest(nil), s.requests...)
}

// serve handles one client connection.
func (s *socks5) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(testWait))
	var req socksRequest
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(c, hdr); err != nil || hdr[0] != 5 {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return
	}
	method := byte(0)
	for _, m := range methods {
		if m == 2 {
			method = 2
		}
	}
	if _, err := c.Write([]byte{5, method}); err != nil {
		return
	}
	if method == 2 {
		readString := func() (string, error) {
			n := make([]byte, 1)
			if _, err := io.ReadFull(c, n); err != nil {
				return "", err
			}
			b := make([]byte, n[0])
			_, err := io.ReadFull(c, b)
			return string(b), err
		}
		ver := make([]byte, 1)
		if _, err := io.ReadFull(c, ver); err != nil {
			return
		}
		var err1, err2 error
		req.user, err1 = readString()
		req.pass, err2 = readString()
		if err1 != nil || err2 != nil {
			return
		}
		if _, err := c.Write([]byte{1, 0}); err != nil {
			return
		}
	}
	head := make([]byte, 4)
	if _, err := io.ReadFull(c, head); err != nil || (head[1] != 1 && head[1] != 0xF0) {
		return
	}
	var host string
	switch head[3] {
	case 1:
		ip := make([]byte, 4)
		if _, err := io.ReadFull(c, ip); err != nil {
			return
		}
		host = net.IP(ip).String()
	case 3:
		n := make([]byte, 1)
		if _, err := io.ReadFull(c, n); err != nil {
			return
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		host = string(b)
	default:
		return
	}
	portBuf := make([]byte, 2)
	if _, err := io.ReadFull(c, portBuf); err != nil {
		return
	}
	req.target = net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(portBuf))))
	req.resolve = head[1] == 0xF0
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if req.resolve {
		// Tor's RESOLVE: every name is 127.0.0.1 here.
		_, _ = c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0})
		return
	}

	up, err := net.Dial("tcp", s.route(req.target))
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// TestProxyAndOnion routes the node's outbound connections through SOCKS5
// proxies as btcd: --proxy with its credentials for ordinary addresses,
// --onion for .onion ones, fresh random credentials per connection with
// --torisolation, and no onion connections at all with --noonion.
func TestProxyAndOnion(t *testing.T) {
	target := startNode(t, testConfig(t, t.TempDir(), false))
	targetAddr := target.P2PAddrs()[0].String()
	const onion = "bitcoinxbitcoinxbitcoinxbitcoinxbitcoinxbitcoinxbitcoinx.onion:18444"
	route := func(string) string { return targetAddr }
	proxy, onionProxy := startSOCKS5(t, route), startSOCKS5(t, route)

	cfg := testConfig(t, t.TempDir(), false)
	cfg.Proxy, cfg.ProxyUser, cfg.ProxyPass = proxy.ln.Addr().String(), "alice", "secret"
	cfg.OnionProxy, cfg.OnionProxyUser, cfg.OnionProxyPass = onionProxy.ln.Addr().String(), "bob", "hidden"
	n := startNode(t, cfg)
	if err := n.ConnectPeer(targetAddr, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the proxied peer", func() bool { return n.ConnectedCount() == 1 })
	if r := proxy.got(); len(r) != 1 || r[0].target != targetAddr || r[0].user != "alice" || r[0].pass != "secret" {
		t.Fatalf("proxy saw %+v", r)
	}
	if err := n.ConnectPeer(onion, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the onion peer", func() bool { return len(onionProxy.got()) == 1 })
	if r := onionProxy.got(); r[0].target != onion || r[0].user != "bob" || r[0].pass != "hidden" {
		t.Fatalf("onion proxy saw %+v", r)
	}
	if len(proxy.got()) != 1 {
		t.Fatal("an onion address went through --proxy although --onion is set")
	}
	// Names are resolved through the onion proxy's Tor RESOLVE (both
	// proxies set, as btcd), never by the local resolver; the connection
	// then goes through --proxy.
	_, port, _ := net.SplitHostPort(targetAddr)
	if err := n.DisconnectPeer(targetAddr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the disconnect", func() bool {
		for _, p := range n.Peers() {
			if p.Addr() == targetAddr {
				return false
			}
		}
		return true
	})
	if err := n.ConnectPeer(net.JoinHostPort("seed.example.invalid", port), false); err != nil {
		t.Fatalf("name behind the proxies: %v", err)
	}
	waitFor(t, "the connection by name", func() bool { return len(proxy.got()) == 2 })
	resolved := false
	for _, r := range onionProxy.got() {
		resolved = resolved || (r.resolve && r.target == "seed.example.invalid:0")
	}
	if !resolved || proxy.got()[1].target != "127.0.0.1:"+port {
		t.Fatalf("name lookup: onion proxy saw %+v, proxy %+v", onionProxy.got(), proxy.got())
	}

	// --torisolation: every connection authenticates differently.
	iso := testConfig(t, t.TempDir(), false)
	iso.Proxy, iso.TorIsolation = proxy.ln.Addr().String(), true
	n2 := startNode(t, iso)
	before := len(proxy.got())
	for i := 0; i < 2; i++ {
		if err := n2.ConnectPeer(targetAddr, false); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the isolated connection", func() bool { return len(proxy.got()) == before+i+1 })
		waitFor(t, "the peer", func() bool { return n2.ConnectedCount() == 1 })
		if err := n2.DisconnectPeer(n2.Peers()[0].Addr()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the disconnect", func() bool { return n2.ConnectedCount() == 0 })
	}
	r := proxy.got()[before:]
	if r[0].user == "" || r[0].user == r[1].user || r[0].pass == r[1].pass {
		t.Fatalf("torisolation credentials %+v", r)
	}

	// --noonion refuses onion addresses.
	no := testConfig(t, t.TempDir(), false)
	no.Proxy, no.NoOnion = proxy.ln.Addr().String(), true
	n3 := startNode(t, no)
	if err := n3.ConnectPeer(onion, false); err == nil || !strings.Contains(err.Error(), "tor has been disabled") {
		t.Fatalf("onion with --noonion: %v", err)
	}
}

// TestAgentFilters applies --agentblacklist and --agentwhitelist to
// connecting peers' user agents as btcd.
func TestAgentFilters(t *testing.T) {
	for _, tc := range []struct {
		black, white []string
		agent        string
		kept         bool
	}{
		{nil, nil, "wallet", true},
		{[]string{"evil"}, nil, "evilwallet", false},
		{[]string{"evil"}, nil, "wallet", true},
		{nil, []string{"good"}, "wallet", false},
		{nil, []string{"good"}, "goodwallet", true},
		{[]string{"bad"}, []string{"good"}, "goodbadwallet", false},
	} {
		cfg := testConfig(t, t.TempDir(), false)
		cfg.AgentBlacklist, cfg.AgentWhitelist = tc.black, tc.white
		n := startNode(t, cfg)
		p := agentPeer(t, n.P2PAddrs()[0].String(), tc.agent)
		if tc.kept {
			waitFor(t, "the peer to be registered", func() bool { return n.ConnectedCount() == 1 })
			continue
		}
		select {
		case <-p.Done():
		case <-time.After(testWait):
			t.Fatalf("agent %q with blacklist %v whitelist %v was kept", tc.agent, tc.black, tc.white)
		}
		if n.ConnectedCount() != 0 {
			t.Fatal("a refused peer is registered")
		}
	}
}

// agentPeer connects a peer with the given user agent name and waits for the
// handshake.
func agentPeer(t *testing.T, addr, agent string) *peer.Peer {
	t.Helper()
	verack := make(chan struct{})
	p, err := peer.NewOutboundPeer(&peer.Config{
		ChainParams: &chaincfg.RegressionNetParams, Services: wire.SFNodeNetwork | wire.SFNodeWitness,
		UserAgentName: agent, UserAgentVersion: "1.0", AllowSelfConns: true,
		Listeners: peer.MessageListeners{OnVerAck: func(*peer.Peer, *wire.MsgVerAck) { close(verack) }},
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
	select {
	case <-verack:
	case <-time.After(testWait):
		t.Fatal("no handshake")
	}
	return p
}

// TestWhitelistedPeerNotBanned sends the misbehaviour that bans a peer in
// TestMisbehavingPeerIsBanned from a --whitelist network: the peer stays.
func TestWhitelistedPeerNotBanned(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.Whitelists = []string{"127.0.0.0/8"}
	n := startNode(t, cfg)
	pong := make(chan struct{})
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnPong: func(*peer.Peer, *wire.MsgPong) { close(pong) },
	})
	waitFor(t, "the peer to be registered", func() bool { return n.ConnectedCount() == 1 })
	notFound := wire.NewMsgNotFound()
	for i := 0; i < 6; i++ {
		_ = notFound.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &chainhash.Hash{byte(i + 1)}))
	}
	p.QueueMessage(notFound, nil)
	// The node answers the ping after it processed the notfound.
	p.QueueMessage(wire.NewMsgPing(7), nil)
	recv(t, pong, "pong")
	if !p.Connected() || n.bans.isBanned("127.0.0.1") {
		t.Fatal("whitelisted peer was disconnected or banned")
	}
}

// TestExternalIPAdvertised gives --externalip: the node tells its outbound
// peers that address, as btcd.
func TestExternalIPAdvertised(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.ExternalIPs = []string{"1.2.3.4:18555"}
	n := startNode(t, cfg)
	if _, err := n.Generate(1, nil); err != nil { // in sync: a recent tip
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addrs := make(chan string, 10)
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
						addrs <- net.JoinHostPort(a.IP.String(), strconv.Itoa(int(a.Port)))
					}
				},
				OnAddrV2: func(_ *peer.Peer, m *wire.MsgAddrV2) {
					for _, a := range m.AddrList {
						addrs <- net.JoinHostPort(a.Addr.String(), strconv.Itoa(int(a.Port)))
					}
				},
			},
		})
		p.AssociateConnection(conn)
		t.Cleanup(p.Disconnect)
	}()
	if err := n.ConnectPeer(ln.Addr().String(), false); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, addrs, "addr"); got != "1.2.3.4:18555" {
		t.Fatalf("advertised %s", got)
	}
}

// TestBtcdOptionsValidation checks the btcd options' validation and what
// they imply.
func TestBtcdOptionsValidation(t *testing.T) {
	base := func() *Config {
		cfg := testConfig(t, t.TempDir(), false)
		return cfg
	}
	for name, tc := range map[string]struct {
		set  func(*Config)
		want string
	}{
		"dbtype":            {func(c *Config) { c.DbType = "leveldb" }, "database type"},
		"txindex+drop":      {func(c *Config) { c.TxIndex, c.DropTxIndex = true, true }, "--droptxindex"},
		"addrindex+drop":    {func(c *Config) { c.AddrIndex, c.DropAddrIndex = true, true }, "--dropaddrindex"},
		"addrindex+droptx":  {func(c *Config) { c.AddrIndex, c.DropTxIndex = true, true }, "relies on the transaction index"},
		"whitelist":         {func(c *Config) { c.Whitelists = []string{"not-an-ip"} }, "whitelist"},
		"torisolation":      {func(c *Config) { c.TorIsolation = true }, "requires either proxy"},
		"signet challenge":  {func(c *Config) { c.RegressionTest, c.SigNet, c.SigNetChallenge = false, true, "zz" }, "signet challenge"},
		"limit user = full": {func(c *Config) { c.RPCLimitUser, c.RPCLimitPass = c.RPCUser, c.RPCPass }, "must not be the same"},
	} {
		cfg := base()
		tc.set(cfg)
		if err := cfg.Normalize(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, tc.want)
		}
	}

	// A custom signet: its own network magic and seeds.
	cfg := base()
	cfg.RegressionTest, cfg.SigNet = false, true
	cfg.SigNetChallenge = "512103ad5e0edad18cb1f0fc0d28a3d4f1f3e445640337489abb10404f2d1e086be43051ae"
	cfg.SigNetSeedNode = []string{"seed.example.org"}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	if cfg.Params().Net == chaincfg.SigNetParams.Net || len(cfg.Params().DNSSeeds) != 1 ||
		cfg.Params().DNSSeeds[0].Host != "seed.example.org" || cfg.NetDataDir() == "" {
		t.Fatalf("custom signet params %v %v", cfg.Params().Net, cfg.Params().DNSSeeds)
	}

	// --addrindex turns --txindex on.
	cfg = base()
	cfg.AddrIndex = true
	if err := cfg.Normalize(); err != nil || !cfg.TxIndex {
		t.Fatalf("addrindex: %v, txindex %v", err, cfg.TxIndex)
	}

	// --proxy without --listen turns listening off, as in btcd; with
	// --listen it stays on.
	cfg = base()
	cfg.Listeners, cfg.DisableListen, cfg.Proxy = nil, false, "127.0.0.1:9050"
	if err := cfg.Normalize(); err != nil || !cfg.DisableListen {
		t.Fatalf("proxy: %v, listening off %v", err, cfg.DisableListen)
	}
	cfg = base()
	cfg.Listeners, cfg.DisableListen, cfg.Proxy = []string{"127.0.0.1:0"}, false, "127.0.0.1:9050"
	if err := cfg.Normalize(); err != nil || cfg.DisableListen {
		t.Fatalf("proxy with listen: %v, listening off %v", err, cfg.DisableListen)
	}
}

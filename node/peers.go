package node

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/addrmgr"
	"github.com/btcsuite/btcd/btcutil/v2/bloom"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/connmgr"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/listen"
)

const (
	// userAgentName and userAgentVersion are advertised to peers.
	userAgentName    = "btcd-electrum"
	userAgentVersion = "0.1.0"

	// connectionRetryInterval is how long connmgr waits before retrying a
	// permanent peer.
	connectionRetryInterval = 5 * time.Second

	// dialTimeout bounds an outbound TCP connect.
	dialTimeout = 30 * time.Second

	// defaultTargetOutbound is the number of automatic outbound peers, as
	// btcd.
	defaultTargetOutbound = 8
)

// serverPeer is one connected peer with the node-side state netsync and
// relay need.
type serverPeer struct {
	*peer.Peer

	node       *Node
	connReq    *connmgr.ConnReq
	persistent bool

	// continueHash is the last block hash of a full getblocks answer;
	// when the peer asks for that block, it is sent an inv of the tip so
	// it continues with the next getblocks. Only touched on the peer's
	// input goroutine.
	continueHash *chainhash.Hash

	banScore        connmgr.DynamicBanScore
	filter          *bloom.Filter // BIP 37, unloaded until filterload
	relayTxDisabled atomic.Bool
	feeFilter       atomic.Int64
	sentAddrs       bool
	// knownAddrs are the addresses the peer sent (addKnownAddrs).
	knownAddrs map[string]struct{}
	added      atomic.Bool
	// removed is set when the peer's connection request was removed from
	// connmgr (RPC addnode remove), which must then not be told again.
	removed atomic.Bool

	// handshaking, for an inbound peer, ends its count among the
	// handshakes pending (admission).
	handshaking func()

	verAckOnce     sync.Once
	verAckCh       chan struct{}
	txProcessed    chan struct{}
	blockProcessed chan struct{}
	quit           chan struct{}
}

// newServerPeer prepares the node-side state of a peer.
func newServerPeer(n *Node, persistent bool) *serverPeer {
	return &serverPeer{
		node:           n,
		persistent:     persistent,
		filter:         bloom.LoadFilter(nil),
		verAckCh:       make(chan struct{}),
		txProcessed:    make(chan struct{}, 1),
		blockProcessed: make(chan struct{}, 1),
		quit:           make(chan struct{}),
	}
}

// peerSet tracks the peers that completed the handshake.
type peerSet struct {
	mu    sync.RWMutex
	peers map[int32]*serverPeer
	wg    sync.WaitGroup // one per peer lifecycle goroutine
	// stopping is set by wait: connmgr calls back on goroutines of its
	// own, so a connection may come after it stopped.
	stopping bool
}

// newPeerSet returns an empty set.
func newPeerSet() *peerSet { return &peerSet{peers: make(map[int32]*serverPeer)} }

// add registers a peer.
func (s *peerSet) add(sp *serverPeer) {
	s.mu.Lock()
	s.peers[sp.ID()] = sp
	s.mu.Unlock()
}

// remove forgets a peer.
func (s *peerSet) remove(sp *serverPeer) {
	s.mu.Lock()
	delete(s.peers, sp.ID())
	s.mu.Unlock()
}

// snapshot returns the current peers.
func (s *peerSet) snapshot() []*serverPeer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*serverPeer, 0, len(s.peers))
	for _, sp := range s.peers {
		out = append(out, sp)
	}
	return out
}

// count returns the number of registered peers.
func (s *peerSet) count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.peers)
}

// disconnectAll disconnects every registered peer.
func (s *peerSet) disconnectAll() {
	for _, sp := range s.snapshot() {
		sp.Disconnect()
	}
}

// wait blocks until every peer lifecycle goroutine ended.
func (s *peerSet) wait() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.wg.Wait()
}

// track counts a peer lifecycle goroutine about to start; false once the
// node is stopping, when the connection is to be closed instead.
func (s *peerSet) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.wg.Add(1)
	return true
}

// setupPeerServer creates the address manager, the P2P listeners and the
// connection manager.
func (n *Node) setupPeerServer() error {
	cfg := n.cfg
	n.services = wire.SFNodeNetwork | wire.SFNodeNetworkLimited | wire.SFNodeWitness |
		wire.SFNodeBloom | wire.SFNodeCF
	if cfg.NoPeerBloomFilters {
		n.services &^= wire.SFNodeBloom
	}
	if cfg.NoCFilters {
		n.services &^= wire.SFNodeCF
	}
	if cfg.V2Transport {
		n.services |= wire.SFNodeP2PV2
	}
	if cfg.Prune != 0 {
		// A pruned node can serve recent blocks only.
		n.services &^= wire.SFNodeNetwork
	}
	n.addrManager = addrmgr.New(cfg.netDataDir, n.lookupIP)
	n.addExternalIPs()

	if !cfg.DisableListen {
		for _, addr := range cfg.Listeners {
			for _, network := range listen.Networks(addr) {
				l, err := net.Listen(network, addr)
				if err != nil {
					srvrLog.Warnf("Can't listen on %s (%s): %v", addr, network, err)
					continue
				}
				n.p2pListeners = append(n.p2pListeners, l)
				srvrLog.Infof("P2P listening on %s", l.Addr())
			}
		}
		if len(n.p2pListeners) == 0 {
			return errors.New("no valid P2P listen address")
		}
		n.addBoundAddresses()
	}

	permanent := len(cfg.ConnectPeers)
	if permanent == 0 {
		permanent = len(cfg.AddPeers)
	}
	var newAddress func() (net.Addr, error)
	targetOutbound := 0
	// Automatic outbound connections need discovered addresses, which
	// simnet and regtest never have (btcd disables them on simnet too).
	if !cfg.SimNet && n.params.Net != wire.TestNet && len(cfg.ConnectPeers) == 0 {
		newAddress = n.newOutboundAddress
		// The permanent peers come out of --maxpeers first.
		targetOutbound = min(defaultTargetOutbound, max(cfg.MaxPeers-permanent, 0))
	}
	// Outbound slots, permanent and automatic, are reserved out of
	// --maxpeers; the rest is inbound.
	reserved := min(permanent+targetOutbound, cfg.MaxPeers)
	maxInbound := uint32(max(cfg.MaxPeers-reserved, 0))
	if maxInbound == 0 && len(n.p2pListeners) > 0 {
		srvrLog.Infof("Inbound connections disabled: maxpeers=%d, reserved outbound=%d", cfg.MaxPeers, reserved)
	}
	cm, err := connmgr.New(&connmgr.Config{
		Listeners:      n.p2pListeners,
		OnAccept:       n.inboundPeerConnected,
		MaxInbound:     &maxInbound,
		RetryDuration:  connectionRetryInterval,
		TargetOutbound: uint32(max(targetOutbound, 1)),
		Dial:           n.dial,
		OnConnection:   n.outboundPeerConnected,
		GetNewAddress:  newAddress,
	})
	if err != nil {
		return err
	}
	n.connManager = cm
	n.downgrader = peer.NewP2PDowngrader(uint(targetOutbound) + 1)
	n.admission = newAdmission()
	return nil
}

// newOutboundAddress picks an address from the address manager for an
// automatic outbound connection, preferring the network's default port and
// one peer per network group.
func (n *Node) newOutboundAddress() (net.Addr, error) {
	groups := make(map[string]bool)
	for _, sp := range n.peers.snapshot() {
		if !sp.Inbound() {
			groups[addrmgr.GroupKey(sp.NA())] = true
		}
	}
	for tries := 0; tries < 100; tries++ {
		ka := n.addrManager.GetAddress()
		if ka == nil {
			break
		}
		na := ka.NetAddress()
		if groups[addrmgr.GroupKey(na)] {
			continue
		}
		if tries < 30 && time.Since(ka.LastAttempt()) < 10*time.Minute {
			continue
		}
		if tries < 50 && strconv.Itoa(int(na.Port)) != n.params.DefaultPort {
			continue
		}
		n.addrManager.Attempt(na)
		return n.resolvePeerAddr(addrmgr.NetAddressKey(na))
	}
	return nil, errors.New("no valid connect address")
}

// connectPermanentPeers connects to the --connect peers, or to the
// --addpeer peers when there are none; connmgr reconnects them when they
// drop.
func (n *Node) connectPermanentPeers() {
	addrs := n.cfg.ConnectPeers
	if len(addrs) == 0 {
		addrs = n.cfg.AddPeers
	}
	for _, a := range addrs {
		if err := n.ConnectPeer(a, true); err != nil {
			srvrLog.Warnf("Peer %s: %v", a, err)
		}
	}
}

// seedFromDNS adds addresses from the network's DNS seeds to the address
// manager, unless disabled or connecting only to given peers.
func (n *Node) seedFromDNS() {
	if n.cfg.DisableDNSSeed || len(n.cfg.ConnectPeers) > 0 || len(n.params.DNSSeeds) == 0 {
		return
	}
	go connmgr.SeedFromDNS(n.params, wire.SFNodeNetwork, n.lookupIP,
		func(addrs []*wire.NetAddressV2) {
			// As btcd: the seed's addresses are credited to the
			// first address returned.
			if len(addrs) > 0 {
				n.addrManager.AddAddresses(addrs, addrs[0])
			}
		})
}

// ConnectPeer connects to a peer at host:port (the network's default port
// when none is given). A permanent peer is reconnected whenever it drops.
func (n *Node) ConnectPeer(addr string, permanent bool) error {
	if !n.started.Load() {
		return errNotStarted
	}
	addr = normalizeAddresses([]string{addr}, n.params.DefaultPort)[0]
	tcpAddr, err := n.resolvePeerAddr(addr)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", addr, err)
	}
	// As btcd: a connection for now would be dropped at the handshake
	// (peerHandshakeDone), so the request is refused here; a permanent
	// peer is kept past the limit.
	if !permanent && n.peers.count() >= n.cfg.MaxPeers {
		return errors.New("max peers reached")
	}
	// A peer connected for now may still be added to keep, as btcd and
	// Bitcoin Core add it: only a permanent one refuses that.
	for _, sp := range n.peers.snapshot() {
		switch {
		case sp.Addr() != tcpAddr.String():
		case !permanent && sp.persistent:
			return errors.New("peer exists as a permanent peer") // btcd's words
		case !permanent || sp.persistent:
			return errors.New("peer already connected")
		}
	}
	req := &connmgr.ConnReq{Addr: tcpAddr, Permanent: permanent}
	if permanent {
		n.permanentMu.Lock()
		if _, ok := n.permanent[tcpAddr.String()]; ok {
			n.permanentMu.Unlock()
			return errors.New("peer already added")
		}
		n.permanent[tcpAddr.String()] = req
		n.permanentMu.Unlock()
	}
	go n.connManager.Connect(req)
	return nil
}

// DisconnectPeer disconnects the peers at addr (host:port) and stops
// reconnecting to them, also when a permanent peer is not connected.
func (n *Node) DisconnectPeer(addr string) error { return n.disconnectPeers(addr, false) }

// disconnectPeers is DisconnectPeer, for the permanent peer only when
// permanentOnly (addnode remove, which leaves a peer connected for now).
func (n *Node) disconnectPeers(addr string, permanentOnly bool) error {
	var removedReq *connmgr.ConnReq
	if tcpAddr, err := n.resolvePeerAddr(addr); err == nil {
		n.permanentMu.Lock()
		removedReq = n.permanent[tcpAddr.String()]
		delete(n.permanent, tcpAddr.String())
		n.permanentMu.Unlock()
		if removedReq != nil {
			n.connManager.Remove(removedReq.ID())
		}
	}
	found := removedReq != nil
	for _, sp := range n.peers.snapshot() {
		if sp.Addr() != addr || (permanentOnly && !sp.persistent) {
			continue
		}
		found = true
		if sp.connReq != nil && sp.removed.CompareAndSwap(false, true) && sp.connReq != removedReq {
			n.connManager.Remove(sp.connReq.ID())
		}
		sp.Disconnect()
	}
	if !found {
		return errors.New("peer not found")
	}
	return nil
}

// Peers returns the connected peers that completed the handshake.
func (n *Node) Peers() []*peer.Peer {
	sps := n.peers.snapshot()
	out := make([]*peer.Peer, 0, len(sps))
	for _, sp := range sps {
		out = append(out, sp.Peer)
	}
	return out
}

// ConnectedCount returns the number of peers that completed the handshake.
func (n *Node) ConnectedCount() int32 { return int32(n.peers.count()) }

// newPeerConfig returns btcd's peer configuration with the node's message
// listeners.
func (n *Node) newPeerConfig(sp *serverPeer) *peer.Config {
	return &peer.Config{
		Listeners: peer.MessageListeners{
			OnVersion:    sp.OnVersion,
			OnVerAck:     sp.OnVerAck,
			OnTx:         sp.OnTx,
			OnBlock:      sp.OnBlock,
			OnInv:        sp.OnInv,
			OnHeaders:    sp.OnHeaders,
			OnGetData:    sp.OnGetData,
			OnGetBlocks:  sp.OnGetBlocks,
			OnGetHeaders: sp.OnGetHeaders,
			OnNotFound:   sp.OnNotFound,
			OnFeeFilter:  sp.OnFeeFilter,
			OnGetAddr:    sp.OnGetAddr,
			OnAddr:       sp.OnAddr,
			OnAddrV2:     sp.OnAddrV2,

			OnGetCFilters:  sp.OnGetCFilters,
			OnGetCFHeaders: sp.OnGetCFHeaders,
			OnGetCFCheckpt: sp.OnGetCFCheckpt,
			OnFilterLoad:   sp.OnFilterLoad,
			OnFilterAdd:    sp.OnFilterAdd,
			OnFilterClear:  sp.OnFilterClear,
			OnMemPool:      sp.OnMemPool,
			OnRead:         n.totals.onRead,
			OnWrite:        n.totals.onWrite,
		},
		NewestBlock: func() (*chainhash.Hash, int32, error) {
			best := n.chain.BestSnapshot()
			return &best.Hash, best.Height, nil
		},
		HostToNetAddress:    n.addrManager.HostToNetAddress,
		UserAgentName:       userAgentName,
		UserAgentVersion:    userAgentVersion,
		UserAgentComments:   n.cfg.UserAgentComments,
		ChainParams:         n.params,
		Services:            n.services,
		DisableRelayTx:      n.cfg.BlocksOnly,
		ProtocolVersion:     peer.MaxProtocolVersion,
		TrickleInterval:     n.cfg.TrickleInterval,
		DisableStallHandler: n.cfg.DisableStallHandler,
		UsingV2Conn:         n.cfg.V2Transport,
		AllowSelfConns:      n.cfg.AllowSelfConns,
		// A peer on the proxy's host is told 0.0.0.0, not its address.
		Proxy: n.cfg.Proxy,
	}
}

// inboundPeerConnected is connmgr's callback for an accepted connection.
func (n *Node) inboundPeerConnected(conn net.Conn) {
	if n.bans.isBanned(hostOf(conn.RemoteAddr().String())) {
		srvrLog.Debugf("Rejecting banned peer %s", conn.RemoteAddr())
		_ = conn.Close()
		return
	}
	done, v2, ok := n.admission.admit(conn.RemoteAddr())
	if !ok {
		srvrLog.Debugf("Rejecting peer %s: %d handshakes from its network pending", conn.RemoteAddr(), maxPendingPerSource)
		_ = conn.Close()
		return
	}
	if !n.peers.track() {
		done()
		_ = conn.Close()
		return
	}
	sp := newServerPeer(n, false)
	sp.handshaking = done
	pcfg := n.newPeerConfig(sp)
	pcfg.V2HandshakeAdmission = v2
	sp.Peer = peer.NewInboundPeer(pcfg)
	sp.AssociateConnection(conn)
	go n.peerLifecycle(sp)
}

// outboundPeerConnected is connmgr's callback for an established outbound
// connection.
func (n *Node) outboundPeerConnected(c *connmgr.ConnReq, conn net.Conn) {
	sp := newServerPeer(n, c.Permanent)
	pcfg := n.newPeerConfig(sp)
	if n.downgrader.ShouldDowngrade(c.Addr.String()) {
		pcfg.UsingV2Conn = false
	}
	p, err := peer.NewOutboundPeer(pcfg, c.Addr.String())
	if err != nil {
		srvrLog.Debugf("Cannot create outbound peer %s: %v", c.Addr, err)
		_ = conn.Close()
		if c.Permanent {
			n.connManager.Disconnect(c.ID())
		} else {
			n.connManager.Remove(c.ID())
			go n.connManager.NewConnReq()
		}
		return
	}
	if !n.peers.track() {
		_ = conn.Close()
		return
	}
	sp.Peer = p
	sp.connReq = c
	n.addrManager.Attempt(sp.NA())
	sp.AssociateConnection(conn)
	go n.peerLifecycle(sp)
}

// peerLifecycle registers a peer with the sync manager once its handshake
// completes and unregisters it when it disconnects.
func (n *Node) peerLifecycle(sp *serverPeer) {
	defer n.peers.wg.Done()
	select {
	case <-sp.verAckCh:
		n.peerHandshakeDone(sp)
	case <-sp.Done():
	case <-n.quit:
		sp.Disconnect()
	}
	if sp.handshaking != nil {
		sp.handshaking()
	}
	sp.WaitForDisconnect()
	close(sp.quit)

	downgrade := !sp.Inbound() && sp.Peer.ShouldDowngradeToV1()
	if downgrade {
		n.downgrader.MarkForDowngrade(sp.Addr())
	}
	if sp.added.Load() {
		n.peers.remove(sp)
		n.syncManager.DonePeer(sp.Peer)
		// Its orphan transactions go with it: a peer may not fill the
		// orphan pool and leave it full.
		if evicted := n.txMemPool.RemoveOrphansByTag(mempool.Tag(sp.ID())); evicted > 0 {
			srvrLog.Debugf("Evicted %d orphans of peer %s", evicted, sp)
		}
		srvrLog.Debugf("Removed peer %s", sp)
	}
	if sp.connReq != nil && !sp.removed.Load() {
		select {
		case <-n.quit:
		default:
			switch {
			case sp.persistent:
				n.connManager.Disconnect(sp.connReq.ID())
			case downgrade:
				// Its v2 handshake showed a v1-only peer: the same
				// address again, over v1.
				n.connManager.Disconnect(sp.connReq.ID(), connmgr.WithTriggerReconnect())
			default:
				n.connManager.Remove(sp.connReq.ID())
				go n.connManager.NewConnReq()
			}
		}
	}
}

// peerHandshakeDone registers a peer after verack, unless the node is
// stopping or the peer limit is reached.
func (n *Node) peerHandshakeDone(sp *serverPeer) {
	select {
	case <-n.quit:
		sp.Disconnect()
		return
	default:
	}
	if !sp.Connected() {
		return
	}
	if n.bans.isBanned(hostOf(sp.Addr())) && !sp.persistent {
		srvrLog.Infof("Peer %s is banned - disconnecting", sp)
		sp.Disconnect()
		return
	}
	if !n.cfg.agentAllowed(sp.UserAgent()) {
		srvrLog.Debugf("Disconnecting peer %s with undesired user agent %q", sp, sp.UserAgent())
		sp.Disconnect()
		return
	}
	if n.peers.count() >= n.cfg.MaxPeers && !sp.persistent {
		srvrLog.Infof("Max peers reached [%d] - disconnecting peer %s", n.cfg.MaxPeers, sp)
		sp.Disconnect()
		return
	}
	n.peers.add(sp)
	sp.added.Store(true)
	srvrLog.Infof("New peer %s", sp)
	n.syncManager.NewPeer(sp.Peer)

	if !sp.Inbound() && !n.cfg.SimNet {
		n.advertiseLocalAddress(sp)
		if n.addrManager.NeedMoreAddresses() {
			sp.QueueMessage(wire.NewMsgGetAddr(), nil)
		}
		n.addrManager.Good(sp.NA())
		n.addrManager.Connected(sp.NA())
	}
}

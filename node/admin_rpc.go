package node

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

var _ rpcext.NodeAdmin = rpcBackend{}

// netTotals counts the bytes read from and written to peers, through the
// peers' OnRead and OnWrite listeners (btcd's getnettotals).
type netTotals struct {
	recv, sent atomic.Uint64
}

// onRead counts a message read from a peer.
func (t *netTotals) onRead(_ *peer.Peer, n int, _ wire.Message, _ error) {
	t.recv.Add(uint64(n))
}

// onWrite counts a message written to a peer.
func (t *netTotals) onWrite(_ *peer.Peer, n int, _ wire.Message, _ error) {
	t.sent.Add(uint64(n))
}

// NetTotals returns the bytes received from and sent to peers.
func (b rpcBackend) NetTotals() (uint64, uint64) {
	return b.totals.recv.Load(), b.totals.sent.Load()
}

// PingPeers queues a ping to every peer.
func (b rpcBackend) PingPeers() {
	for _, sp := range b.peers.snapshot() {
		nonce := uint64(sp.ID())<<32 | uint64(b.totals.sent.Load()&0xffffffff)
		sp.QueueMessage(wire.NewMsgPing(nonce), nil)
	}
}

// AddedNodes lists the permanent peers and whether they are connected.
func (b rpcBackend) AddedNodes() []rpcext.AddedNode {
	b.permanentMu.Lock()
	addrs := make([]string, 0, len(b.permanent))
	for a := range b.permanent {
		addrs = append(addrs, a)
	}
	b.permanentMu.Unlock()
	connected := map[string]*serverPeer{}
	for _, sp := range b.peers.snapshot() {
		connected[sp.Addr()] = sp
	}
	out := make([]rpcext.AddedNode, 0, len(addrs))
	for _, a := range addrs {
		sp, ok := connected[a]
		out = append(out, rpcext.AddedNode{Addr: a, Connected: ok, Inbound: ok && sp.Inbound()})
	}
	return out
}

// KnownAddresses returns the address manager's addresses.
func (b rpcBackend) KnownAddresses() []*wire.NetAddressV2 {
	return b.addrManager.AddressCache()
}

// PeerAddr returns the address of the peer with the id, and whether it is
// permanent.
func (b rpcBackend) PeerAddr(id int32) (string, bool, bool) {
	for _, sp := range b.peers.snapshot() {
		if sp.ID() == id {
			return sp.Addr(), sp.persistent, true
		}
	}
	return "", false, false
}

// DisconnectNode disconnects the temporary peers at addr; a permanent one
// must be removed instead, as btcd, which refuses only when it is the one
// peer there.
func (b rpcBackend) DisconnectNode(addr string) error {
	found, permanent := false, false
	for _, sp := range b.peers.snapshot() {
		switch {
		case sp.Addr() != addr:
		case sp.persistent:
			permanent = true
		default:
			found = true
			sp.Disconnect()
		}
	}
	switch {
	case found:
		return nil
	case permanent:
		return rpcext.ErrPermanentPeer
	}
	return errors.New("peer not found")
}

// DisconnectNodeID disconnects the temporary peer with the id, as btcd's
// DisconnectByID: another peer at its address stays.
func (b rpcBackend) DisconnectNodeID(id int32) error {
	for _, sp := range b.peers.snapshot() {
		if sp.ID() != id {
			continue
		}
		if sp.persistent {
			return rpcext.ErrPermanentPeer
		}
		sp.Disconnect()
		return nil
	}
	return errors.New("peer not found")
}

// SetGenerate starts or stops the CPU miner.
func (b rpcBackend) SetGenerate(on bool, workers int) error {
	if !on {
		b.cpuMiner.Stop()
		return nil
	}
	if len(b.cfg.miningAddrs) == 0 {
		return errors.New("No payment addresses specified via --miningaddr")
	}
	b.cpuMiner.SetNumWorkers(int32(workers))
	b.cpuMiner.Start()
	return nil
}

// Mining reports the CPU miner's state.
func (b rpcBackend) Mining() (bool, int32, float64) {
	return b.cpuMiner.IsMining(), b.cpuMiner.NumWorkers(), b.cpuMiner.HashesPerSecond()
}

// SetDebugLevel applies a --debuglevel spec at run time, as btcd's
// debuglevel.
func (b rpcBackend) SetDebugLevel(spec string) (string, error) {
	if spec == "show" {
		return fmt.Sprintf("Supported subsystems %v", SupportedSubsystems()), nil
	}
	if err := validateLogLevels(spec); err != nil {
		return "", err
	}
	if err := SetLogLevels(strings.TrimSpace(spec)); err != nil {
		return "", err
	}
	return "Done.", nil
}

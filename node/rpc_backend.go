package node

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// rpcBackend is what the JSON-RPC server asks the node for (rpcext.Backend).
type rpcBackend struct{ *Node }

var _ rpcext.Backend = rpcBackend{}

// ConfirmedTx finds a confirmed transaction through the Electrum index
// (which holds every confirmed transaction, so --electrumindex alone serves
// getrawtransaction for any txid) or else btcd's --txindex.
func (b rpcBackend) ConfirmedTx(txHash *chainhash.Hash) (*wire.MsgTx, *chainhash.Hash, error) {
	return b.Node.ConfirmedTx(txHash)
}

// ConfirmedTx returns a transaction of the main chain and the hash of the
// block holding it, through the Electrum index or btcd's transaction index.
// When neither can tell whether the chain holds it (no index, or the
// Electrum index trailing the chain) the error is an RPC error saying so.
func (n *Node) ConfirmedTx(txHash *chainhash.Hash) (*wire.MsgTx, *chainhash.Hash, error) {
	if idx := n.index.electrum; idx != nil {
		before, _ := idx.LatestTip()
		raw, loc, err := idx.RawTx(*txHash)
		if err == nil && n.chain.MainChainHasBlock(&loc.BlockHash) {
			var tx wire.MsgTx
			if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
				return nil, nil, err
			}
			return &tx, &loc.BlockHash, nil
		}
		if err != nil && !errors.Is(err, indexers.ErrNotFound) {
			return nil, nil, err
		}
		// Not found, or found in a block the chain has left: the index
		// may not have followed the chain yet (catching up, a block just
		// connected, a reorganization). btcd's transaction index, in step
		// with the chain, settles it; without it, "not found" would be a
		// guess.
		if n.index.txIndex == nil {
			best := n.chain.BestSnapshot()
			if err == nil || before.Height < best.Height || !n.chain.MainChainHasBlock(&before.Hash) {
				return nil, nil, &btcjson.RPCError{Code: btcjson.ErrRPCNoTxInfo, Message: fmt.Sprintf(
					"The Electrum index is at height %d of the chain's %d: it cannot tell yet", before.Height, best.Height)}
			}
			return nil, nil, err
		}
	}
	if idx := n.index.txIndex; idx != nil {
		region, err := idx.TxBlockRegion(txHash)
		if err != nil {
			return nil, nil, err
		}
		if region == nil {
			return nil, nil, errors.New("no information available about transaction")
		}
		var raw []byte
		err = n.db.View(func(dbTx database.Tx) error {
			b, err := dbTx.FetchBlockRegion(region)
			raw = append([]byte(nil), b...)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		var tx wire.MsgTx
		if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
			return nil, nil, err
		}
		return &tx, region.Hash, nil
	}
	return nil, nil, errNoTxIndex
}

// errNoTxIndex is btcd's answer without a transaction index. Unlike "No
// information available about transaction", which lnd takes for a
// transaction that is not confirmed, it makes lnd scan the blocks.
var errNoTxIndex = &btcjson.RPCError{Code: btcjson.ErrRPCNoTxInfo,
	Message: "The transaction index must be enabled to query the blockchain (specify --txindex or --electrumindex)"}

// SubmitBlock processes a block through the sync manager, as one from a
// peer.
func (b rpcBackend) SubmitBlock(block *btcutil.Block) error {
	if !b.started.Load() {
		return errNotStarted
	}
	_, err := b.syncManager.ProcessBlock(block, blockchain.BFNone)
	return err
}

// PeerInfo describes the connected peers as btcd's getpeerinfo.
func (b rpcBackend) PeerInfo() []*btcjson.GetPeerInfoResult {
	syncPeer := b.syncManager.SyncPeerID()
	sps := b.peers.snapshot()
	out := make([]*btcjson.GetPeerInfoResult, 0, len(sps))
	for _, sp := range sps {
		st := sp.StatsSnapshot()
		local := ""
		if a := sp.LocalAddr(); a != nil {
			local = a.String()
		}
		info := &btcjson.GetPeerInfoResult{
			ID:             st.ID,
			Addr:           st.Addr,
			AddrLocal:      local,
			Services:       fmt.Sprintf("%08d", uint64(st.Services)),
			RelayTxes:      !sp.relayTxDisabled.Load(),
			LastSend:       st.LastSend.Unix(),
			LastRecv:       st.LastRecv.Unix(),
			BytesSent:      st.BytesSent,
			BytesRecv:      st.BytesRecv,
			ConnTime:       st.ConnTime.Unix(),
			PingTime:       float64(st.LastPingMicros),
			TimeOffset:     st.TimeOffset,
			Version:        st.Version,
			SubVer:         st.UserAgent,
			Inbound:        st.Inbound,
			StartingHeight: st.StartingHeight,
			CurrentHeight:  st.LastBlock,
			FeeFilter:      sp.feeFilter.Load(),
			BanScore:       int32(sp.banScore.Int()),
			SyncNode:       st.ID == syncPeer,
			V2Connection:   st.V2Connection,
		}
		if sp.LastPingNonce() != 0 {
			info.PingWait = float64(time.Since(st.LastPingTime).Nanoseconds()) / 1000
		}
		out = append(out, info)
	}
	return out
}

// AddNode connects to a peer ("addnode add" is permanent, "onetry" not).
func (b rpcBackend) AddNode(addr string, permanent bool) error {
	return b.ConnectPeer(addr, permanent)
}

// RemoveNode disconnects a permanent peer and stops reconnecting to it; as
// btcd, a temporary peer is not removed (it is disconnected instead).
func (b rpcBackend) RemoveNode(addr string) error {
	permanent := false
	if tcpAddr, err := b.resolvePeerAddr(addr); err == nil {
		b.permanentMu.Lock()
		permanent = b.permanent[tcpAddr.String()] != nil
		b.permanentMu.Unlock()
	}
	if !permanent {
		for _, sp := range b.peers.snapshot() {
			if sp.Addr() == addr {
				return rpcext.ErrTemporaryPeer
			}
		}
		return errors.New("peer not found")
	}
	return b.disconnectPeers(addr, true)
}

// EstimateFee returns btcd's fee estimate in BTC/kB.
func (b rpcBackend) EstimateFee(numBlocks uint32) (float64, error) {
	rate, err := b.fees.current().EstimateFee(numBlocks)
	if err != nil {
		return 0, err
	}
	return float64(rate), nil
}

// ElectrumInfo reports the Electrum index tip and the server's listeners
// and sessions.
func (b rpcBackend) ElectrumInfo() rpcext.ElectrumInfo {
	best := b.chain.BestSnapshot()
	info := rpcext.ElectrumInfo{ChainHeight: best.Height, IndexHeight: -1}
	if idx := b.index.electrum; idx != nil {
		if tip, err := idx.Tip(); err == nil {
			info.IndexHeight = tip.Height
			info.IndexHash = tip.Hash.String()
		}
		if rows, bytes, err := idx.Size(); err == nil {
			info.IndexRows, info.IndexSizeBytes = rows, bytes
		}
		if p := idx.Progress(); !p.Started.IsZero() {
			info.CatchUp = &rpcext.CatchUpInfo{
				Running: p.Running, FromHeight: p.From, TargetHeight: p.Target,
				Height: p.Height, Txs: p.Txs, TargetTxs: p.TargetTxs,
				TxPerSecond: p.Rate, ETASeconds: p.ETA.Seconds(), Seconds: p.Duration().Seconds(),
			}
		}
	}
	// Without the index there is nothing to catch up.
	info.CatchingUp = b.index.electrum != nil && info.IndexHeight < info.ChainHeight
	if info.ChainHeight > 0 {
		info.Progress = float64(max(info.IndexHeight, 0)) / float64(info.ChainHeight)
	}
	if !info.CatchingUp && b.index.electrum != nil {
		info.Progress = 1
	}
	info.Listeners = b.srv.electrumListenURLs()
	info.Sessions, info.Subscriptions = b.srv.electrumSessions()
	if e := b.srv.electrum; e != nil {
		st := e.Stats()
		info.Refused, info.Disconnected = st.Refused, st.Disconnected
		info.Throttled, info.SubscriptionsRefused = st.Throttled, st.SubscriptionsRefused
	}
	return info
}

// RequestStop asks the binary to shut the node down.
func (b rpcBackend) RequestStop() { b.Node.RequestStop() }

// RPCAddrs returns the addresses the JSON-RPC server listens on (after
// Start; nil with --norpc).
func (n *Node) RPCAddrs() []net.Addr {
	if n.srv == nil || n.srv.rpc == nil {
		return nil
	}
	return n.srv.rpc.Addrs()
}

package node

import (
	"bytes"
	"errors"
	"time"

	"github.com/btcsuite/btcd/addrmgr"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// getDataBatch is how many getdata answers are queued before waiting for
// them to be sent, so a large request cannot queue the whole chain in
// memory.
const getDataBatch = 5

// OnVersion checks the remote version: outbound peers must be full nodes
// (and segwit-enabled once segwit is active); the peer's clock is sampled
// for the network time; its relay preference is remembered.
func (sp *serverPeer) OnVersion(_ *peer.Peer, msg *wire.MsgVersion) *wire.MsgReject {
	n := sp.node
	inbound := sp.Inbound()
	if !n.cfg.SimNet && !inbound {
		n.addrManager.SetServices(sp.NA(), msg.Services)
	}
	if msg.ProtocolVersion < int32(peer.MinAcceptableProtocolVersion) {
		return nil
	}
	if !inbound && msg.Services&wire.SFNodeNetwork != wire.SFNodeNetwork {
		srvrLog.Debugf("Rejecting peer %s with services %v: not a full node", sp.Peer, msg.Services)
		return wire.NewMsgReject(msg.Command(), wire.RejectNonstandard, "required services not offered")
	}
	if !n.cfg.SimNet && !inbound {
		active, err := n.chain.IsDeploymentActive(chaincfg.DeploymentSegwit)
		if err == nil && active && !sp.IsWitnessEnabled() {
			srvrLog.Infof("Disconnecting non-segwit peer %v", sp)
			sp.Disconnect()
			return nil
		}
	}
	// One sample per host: connections from one host on many ports
	// count once, and the samples' keys do not grow with each of them.
	n.timeSource.AddTimeSample(hostOf(sp.Addr()), msg.Timestamp)
	sp.relayTxDisabled.Store(msg.DisableRelayTx)
	return nil
}

// OnVerAck marks the handshake complete; peerLifecycle then registers the
// peer with the sync manager.
func (sp *serverPeer) OnVerAck(_ *peer.Peer, _ *wire.MsgVerAck) {
	sp.verAckOnce.Do(func() { close(sp.verAckCh) })
}

// OnTx hands a transaction to the sync manager and waits until it was
// processed, so a peer cannot queue unbounded work.
func (sp *serverPeer) OnTx(_ *peer.Peer, msg *wire.MsgTx) {
	if sp.node.cfg.BlocksOnly {
		return
	}
	tx := btcutil.NewTx(msg)
	sp.AddKnownInventory(wire.NewInvVect(wire.InvTypeTx, tx.Hash()))
	sp.node.syncManager.QueueTx(tx, sp.Peer, sp.txProcessed)
	select {
	case <-sp.txProcessed:
	case <-sp.node.quit:
	}
}

// OnBlock hands a block to the sync manager and waits until it was
// processed.
func (sp *serverPeer) OnBlock(_ *peer.Peer, msg *wire.MsgBlock, buf []byte) {
	block := btcutil.NewBlockFromBlockAndBytes(msg, buf)
	sp.AddKnownInventory(wire.NewInvVect(wire.InvTypeBlock, block.Hash()))
	sp.node.syncManager.QueueBlock(block, sp.Peer, sp.blockProcessed)
	select {
	case <-sp.blockProcessed:
	case <-sp.node.quit:
	}
}

// OnInv passes announcements to the sync manager (only block
// announcements with --blocksonly).
func (sp *serverPeer) OnInv(_ *peer.Peer, msg *wire.MsgInv) {
	if len(msg.InvList) == 0 {
		return
	}
	if !sp.node.cfg.BlocksOnly {
		sp.node.syncManager.QueueInv(msg, sp.Peer)
		return
	}
	blocks := wire.NewMsgInvSizeHint(uint(len(msg.InvList)))
	for _, iv := range msg.InvList {
		switch iv.Type {
		case wire.InvTypeBlock, wire.InvTypeWitnessBlock:
			_ = blocks.AddInvVect(iv)
		case wire.InvTypeTx, wire.InvTypeWitnessTx:
			// It was told (relay false in its version) not to.
			if sp.ProtocolVersion() >= wire.BIP0037Version {
				srvrLog.Infof("Peer %v is announcing transactions to a --blocksonly node: disconnecting", sp)
				sp.Disconnect()
				return
			}
		}
	}
	if len(blocks.InvList) > 0 {
		sp.node.syncManager.QueueInv(blocks, sp.Peer)
	}
}

// OnHeaders passes headers to the sync manager.
func (sp *serverPeer) OnHeaders(_ *peer.Peer, msg *wire.MsgHeaders) {
	sp.node.syncManager.QueueHeaders(msg, sp.Peer)
}

// OnNotFound passes notfound answers to the sync manager; an unknown
// inventory type disconnects the peer.
func (sp *serverPeer) OnNotFound(_ *peer.Peer, msg *wire.MsgNotFound) {
	var blocks, txs uint32
	for _, iv := range msg.InvList {
		switch iv.Type {
		case wire.InvTypeBlock, wire.InvTypeWitnessBlock:
			blocks++
		case wire.InvTypeTx, wire.InvTypeWitnessTx:
			txs++
		default:
			srvrLog.Debugf("Invalid inv type %d in notfound from %s", iv.Type, sp)
			sp.Disconnect()
			return
		}
	}
	if blocks > 0 && sp.addBanScore(20*blocks, 0, "blocks not found") {
		return
	}
	if txs > 0 && sp.addBanScore(0, 10*txs, "transactions not found") {
		return
	}
	sp.node.syncManager.QueueNotFound(msg, sp.Peer)
}

// OnFeeFilter records the peer's minimum fee rate for transaction relay.
func (sp *serverPeer) OnFeeFilter(_ *peer.Peer, msg *wire.MsgFeeFilter) {
	if msg.MinFee < 0 || msg.MinFee > btcutil.MaxSatoshi {
		srvrLog.Debugf("Peer %v sent an invalid feefilter %d -- disconnecting", sp, msg.MinFee)
		sp.Disconnect()
		return
	}
	sp.feeFilter.Store(msg.MinFee)
}

// OnGetData sends the requested blocks and mempool transactions, waiting
// every few items for them to be written, and a notfound for the rest.
func (sp *serverPeer) OnGetData(_ *peer.Peer, msg *wire.MsgGetData) {
	// A decaying score, as btcd: a burst above the maximum inventory
	// size within a short time bans; steady requests (initial sync) do not.
	if sp.addBanScore(0, uint32(len(msg.InvList))*99/wire.MaxInvPerMsg, "getdata") {
		return
	}
	notFound := wire.NewMsgNotFound()
	pending := make([]chan struct{}, 0, getDataBatch)
	waitPending := func() bool {
		for _, c := range pending {
			select {
			case <-c:
			case <-sp.quit:
				return false
			case <-sp.node.quit:
				return false
			}
		}
		pending = pending[:0]
		return true
	}
	for _, iv := range msg.InvList {
		done := make(chan struct{}, 1)
		if err := sp.pushInventory(iv, done); err != nil {
			_ = notFound.AddInvVect(iv)
			continue
		}
		pending = append(pending, done)
		if len(pending) == getDataBatch && !waitPending() {
			return
		}
	}
	if len(notFound.InvList) > 0 {
		done := make(chan struct{}, 1)
		sp.QueueMessage(notFound, done)
		pending = append(pending, done)
	}
	waitPending()
}

// pushInventory queues one requested item; done is signalled once it was
// written. It returns an error (and does not use done) when the item is
// unknown.
func (sp *serverPeer) pushInventory(iv *wire.InvVect, done chan struct{}) error {
	switch iv.Type {
	case wire.InvTypeTx:
		return sp.pushTx(&iv.Hash, done, wire.BaseEncoding)
	case wire.InvTypeWitnessTx:
		return sp.pushTx(&iv.Hash, done, wire.WitnessEncoding)
	case wire.InvTypeBlock:
		return sp.pushBlock(&iv.Hash, done, wire.BaseEncoding)
	case wire.InvTypeWitnessBlock:
		return sp.pushBlock(&iv.Hash, done, wire.WitnessEncoding)
	case wire.InvTypeFilteredBlock:
		return sp.pushMerkleBlock(&iv.Hash, done, wire.BaseEncoding)
	case wire.InvTypeFilteredWitnessBlock:
		return sp.pushMerkleBlock(&iv.Hash, done, wire.WitnessEncoding)
	default:
		return errors.New("unsupported inventory type")
	}
}

// pushTx sends a mempool transaction.
func (sp *serverPeer) pushTx(hash *chainhash.Hash, done chan struct{}, enc wire.MessageEncoding) error {
	tx, err := sp.node.txMemPool.FetchTransaction(hash)
	if err != nil {
		return err
	}
	sp.QueueMessageWithEncoding(tx.MsgTx(), done, enc)
	return nil
}

// pushBlock sends a block from the database; when it is the last block of
// a full getblocks answer, an inv of the tip follows so the peer asks for
// the next batch.
func (sp *serverPeer) pushBlock(hash *chainhash.Hash, done chan struct{}, enc wire.MessageEncoding) error {
	var raw []byte
	err := sp.node.db.View(func(dbTx database.Tx) error {
		b, err := dbTx.FetchBlock(hash)
		if err != nil {
			return err
		}
		raw = append([]byte(nil), b...)
		return nil
	})
	if err != nil {
		return err
	}
	var msgBlock wire.MsgBlock
	if err := msgBlock.Deserialize(bytes.NewReader(raw)); err != nil {
		return err
	}
	sendInv := sp.continueHash != nil && sp.continueHash.IsEqual(hash)
	if !sendInv {
		sp.QueueMessageWithEncoding(&msgBlock, done, enc)
		return nil
	}
	sp.QueueMessageWithEncoding(&msgBlock, nil, enc)
	best := sp.node.chain.BestSnapshot()
	inv := wire.NewMsgInvSizeHint(1)
	_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &best.Hash))
	sp.QueueMessage(inv, done)
	sp.continueHash = nil
	return nil
}

// OnGetBlocks answers with an inv of up to 500 main-chain block hashes after
// the locator.
func (sp *serverPeer) OnGetBlocks(_ *peer.Peer, msg *wire.MsgGetBlocks) {
	hashes := sp.node.chain.LocateBlocks(msg.BlockLocatorHashes, &msg.HashStop, wire.MaxBlocksPerMsg)
	if len(hashes) == 0 {
		return
	}
	inv := wire.NewMsgInvSizeHint(uint(len(hashes)))
	for i := range hashes {
		_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &hashes[i]))
	}
	if len(hashes) == wire.MaxBlocksPerMsg {
		last := hashes[len(hashes)-1]
		sp.continueHash = &last
	}
	sp.QueueMessage(inv, nil)
}

// OnGetHeaders answers with up to 2000 main-chain headers after the
// locator, once the node is in sync.
func (sp *serverPeer) OnGetHeaders(_ *peer.Peer, msg *wire.MsgGetHeaders) {
	if !sp.node.syncManager.IsCurrent() {
		return
	}
	headers := sp.node.chain.LocateHeaders(msg.BlockLocatorHashes, &msg.HashStop)
	out := make([]*wire.BlockHeader, len(headers))
	for i := range headers {
		out[i] = &headers[i]
	}
	sp.QueueMessage(&wire.MsgHeaders{Headers: out}, nil)
}

// OnGetAddr answers an inbound peer's first getaddr with known addresses.
func (sp *serverPeer) OnGetAddr(_ *peer.Peer, _ *wire.MsgGetAddr) {
	if sp.node.cfg.SimNet || !sp.Inbound() || sp.sentAddrs {
		return
	}
	sp.sentAddrs = true
	// Not the addresses it sent: a peer may not plant addresses and
	// look for them in the answers to tell nodes apart.
	addrs := sp.node.addrManager.AddressCache()
	kept := addrs[:0]
	for _, na := range addrs {
		if _, known := sp.knownAddrs[addrmgr.NetAddressKey(na)]; !known {
			kept = append(kept, na)
		}
	}
	addrs = kept
	if len(addrs) == 0 {
		return
	}
	if sp.WantsAddrV2() {
		_, _ = sp.PushAddrV2Msg(addrs)
		return
	}
	legacy := make([]*wire.NetAddress, 0, len(addrs))
	for _, na := range addrs {
		if l := na.ToLegacy(); l != nil {
			legacy = append(legacy, l)
		}
	}
	_, _ = sp.PushAddrMsg(legacy)
}

// OnAddr adds advertised addresses to the address manager.
func (sp *serverPeer) OnAddr(_ *peer.Peer, msg *wire.MsgAddr) {
	if sp.node.cfg.SimNet || sp.ProtocolVersion() < wire.NetAddressTimeVersion {
		return
	}
	if len(msg.AddrList) == 0 {
		sp.Disconnect()
		return
	}
	addrs := make([]*wire.NetAddressV2, 0, len(msg.AddrList))
	for _, na := range msg.AddrList {
		ts := clampAddrTime(na.Timestamp)
		addrs = append(addrs, wire.NetAddressV2FromBytes(ts, na.Services, na.IP, na.Port))
	}
	sp.addKnownAddrs(addrs)
	sp.node.addrManager.AddAddresses(addrs, sp.NA())
}

// OnAddrV2 adds advertised addresses to the address manager.
func (sp *serverPeer) OnAddrV2(_ *peer.Peer, msg *wire.MsgAddrV2) {
	if sp.node.cfg.SimNet {
		return
	}
	if len(msg.AddrList) == 0 {
		sp.Disconnect()
		return
	}
	for _, na := range msg.AddrList {
		na.Timestamp = clampAddrTime(na.Timestamp)
	}
	sp.addKnownAddrs(msg.AddrList)
	sp.node.addrManager.AddAddresses(msg.AddrList, sp.NA())
}

// maxKnownAddrs bounds the addresses remembered per peer, as btcd does.
const maxKnownAddrs = 5000

// addKnownAddrs remembers addresses the peer sent, which its getaddr is not
// answered with. Past maxKnownAddrs an arbitrary one is forgotten for
// each new one. Only the peer's input goroutine calls it.
func (sp *serverPeer) addKnownAddrs(addrs []*wire.NetAddressV2) {
	if sp.knownAddrs == nil {
		sp.knownAddrs = make(map[string]struct{})
	}
	for _, na := range addrs {
		if len(sp.knownAddrs) >= maxKnownAddrs {
			for k := range sp.knownAddrs {
				delete(sp.knownAddrs, k)
				break
			}
		}
		sp.knownAddrs[addrmgr.NetAddressKey(na)] = struct{}{}
	}
}

// clampAddrTime replaces a timestamp more than ten minutes in the future
// by one five days in the past, as btcd does.
func clampAddrTime(ts time.Time) time.Time {
	now := time.Now()
	if ts.After(now.Add(10 * time.Minute)) {
		return now.Add(-5 * 24 * time.Hour)
	}
	return ts
}

// RelayInventory announces a block or transaction to every peer that does
// not know it yet: block headers to peers that asked for headers, invs to
// the others; transactions honour each peer's relay flag and fee filter.
// Part of netsync.PeerNotifier; it never blocks.
func (n *Node) RelayInventory(iv *wire.InvVect, data interface{}) {
	for _, sp := range n.peers.snapshot() {
		if !sp.Connected() {
			continue
		}
		if iv.Type == wire.InvTypeBlock && sp.WantsHeaders() {
			// netsync passes the block's header with a block
			// inventory.
			header, ok := data.(wire.BlockHeader)
			if !ok {
				continue
			}
			msg := wire.NewMsgHeaders()
			if err := msg.AddBlockHeader(&header); err == nil {
				sp.QueueMessage(msg, nil)
			}
			continue
		}
		if iv.Type == wire.InvTypeTx {
			if sp.relayTxDisabled.Load() {
				continue
			}
			if desc, ok := data.(*mempool.TxDesc); ok {
				if f := sp.feeFilter.Load(); f > 0 && desc.FeePerKB < f {
					continue
				}
				// A peer with a bloom filter gets the matching
				// transactions only.
				if sp.filter.IsLoaded() && !sp.filter.MatchTxAndUpdate(desc.Tx) {
					continue
				}
			}
		}
		sp.QueueInventory(iv)
	}
}

// UpdatePeerHeights records a new height for the peers that announced the
// block. Part of netsync.PeerNotifier.
func (n *Node) UpdatePeerHeights(hash *chainhash.Hash, height int32, source *peer.Peer) {
	for _, sp := range n.peers.snapshot() {
		if sp.Peer == source {
			continue
		}
		if last := sp.LastAnnouncedBlock(); last != nil && *last == *hash {
			sp.UpdateLastBlockHeight(height)
			sp.UpdateLastAnnouncedBlock(nil)
		}
	}
}

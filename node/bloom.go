package node

import (
	"github.com/btcsuite/btcd/btcutil/v2/bloom"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// BIP 37 serving with btcd's bloom package: a peer loads a filter
// (filterload, filteradd, filterclear); the node then relays only matching
// transactions to it, answers mempool with the matching ones, and getdata of
// a filtered block with a merkleblock and the matching transactions. With
// --nopeerbloomfilters the service bit is not advertised and a peer sending
// these messages is disconnected (and banned when its protocol version says
// it knew, as btcd).

// bloomServing reports whether the node serves bloom filters; otherwise it
// disconnects (and may ban) the peer that sent cmd.
func (sp *serverPeer) bloomServing(cmd string) bool {
	if sp.node.services&wire.SFNodeBloom == wire.SFNodeBloom {
		return true
	}
	if sp.ProtocolVersion() >= wire.BIP0111Version && !sp.node.cfg.DisableBanning {
		sp.addBanScore(100, 0, cmd)
	}
	srvrLog.Debugf("Peer %s sent an unsupported %s request -- disconnecting", sp, cmd)
	sp.Disconnect()
	return false
}

// OnFilterLoad loads (replaces) the peer's bloom filter and turns
// transaction relay to it on.
func (sp *serverPeer) OnFilterLoad(_ *peer.Peer, msg *wire.MsgFilterLoad) {
	if !sp.bloomServing(msg.Command()) {
		return
	}
	sp.relayTxDisabled.Store(false)
	sp.filter.Reload(msg)
}

// OnFilterAdd adds an element to the loaded filter; without one the peer is
// disconnected.
func (sp *serverPeer) OnFilterAdd(_ *peer.Peer, msg *wire.MsgFilterAdd) {
	if !sp.bloomServing(msg.Command()) {
		return
	}
	if !sp.filter.IsLoaded() {
		srvrLog.Debugf("Peer %s sent filteradd with no filter loaded -- disconnecting", sp)
		sp.Disconnect()
		return
	}
	sp.filter.Add(msg.Data)
}

// OnFilterClear unloads the filter; without one the peer is disconnected.
func (sp *serverPeer) OnFilterClear(_ *peer.Peer, msg *wire.MsgFilterClear) {
	if !sp.bloomServing(msg.Command()) {
		return
	}
	if !sp.filter.IsLoaded() {
		srvrLog.Debugf("Peer %s sent filterclear with no filter loaded -- disconnecting", sp)
		sp.Disconnect()
		return
	}
	sp.filter.Unload()
}

// OnMemPool answers with an inv of the mempool's transactions (the ones
// matching the peer's filter when it loaded one), at most one message's
// worth. Only served with bloom filtering on, as btcd.
func (sp *serverPeer) OnMemPool(_ *peer.Peer, msg *wire.MsgMemPool) {
	if sp.node.services&wire.SFNodeBloom != wire.SFNodeBloom {
		srvrLog.Debugf("Peer %s sent mempool with bloom filtering disabled -- disconnecting", sp)
		sp.Disconnect()
		return
	}
	if sp.addBanScore(0, 33, "mempool") {
		return
	}
	descs := sp.node.txMemPool.TxDescs()
	inv := wire.NewMsgInvSizeHint(uint(len(descs)))
	for _, d := range descs {
		if sp.filter.IsLoaded() && !sp.filter.MatchTxAndUpdate(d.Tx) {
			continue
		}
		_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeTx, d.Tx.Hash()))
		if len(inv.InvList)+1 > wire.MaxInvPerMsg {
			break
		}
	}
	if len(inv.InvList) > 0 {
		sp.QueueMessage(inv, nil)
	}
}

// pushMerkleBlock answers getdata of a filtered block: a merkleblock of the
// transactions matching the peer's filter, followed by those transactions.
// Without a loaded filter nothing is sent (as btcd), and done is signalled.
func (sp *serverPeer) pushMerkleBlock(hash *chainhash.Hash, done chan struct{}, enc wire.MessageEncoding) error {
	if !sp.filter.IsLoaded() {
		done <- struct{}{}
		return nil
	}
	block, err := sp.node.chain.BlockByHash(hash)
	if err != nil {
		return err
	}
	merkle, matched := bloom.NewMerkleBlock(block, sp.filter)
	if len(matched) == 0 {
		sp.QueueMessage(merkle, done)
		return nil
	}
	sp.QueueMessage(merkle, nil)
	txs := block.MsgBlock().Transactions
	for i, ti := range matched {
		var dc chan struct{}
		if i == len(matched)-1 {
			dc = done
		}
		if int(ti) < len(txs) {
			sp.QueueMessageWithEncoding(txs[ti], dc, enc)
		} else if dc != nil {
			dc <- struct{}{}
		}
	}
	return nil
}

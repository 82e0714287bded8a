package node

import (
	"errors"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// ProcessTx validates a transaction into the mempool with btcd's policy,
// relays it and the orphans it unlocked to peers, and feeds them to the
// Electrum mempool view. The transaction is announced again now and then
// until a block confirms it. The submitted transaction's descriptor comes
// first. Rejections are mempool.RuleError values.
func (n *Node) ProcessTx(tx *btcutil.Tx) ([]*mempool.TxDesc, error) {
	accepted, err := n.txMemPool.ProcessTransaction(tx, false, false, 0)
	if err != nil {
		return nil, err
	}
	if len(accepted) == 0 || !accepted[0].Tx.Hash().IsEqual(tx.Hash()) {
		// With allowOrphan false, ProcessTransaction either accepts the
		// transaction itself first or fails.
		return nil, errors.New("transaction was not accepted into the mempool")
	}
	n.rebroadcast.add(*tx.Hash())
	// The submitter (an Electrum broadcast, sendrawtransaction) may ask
	// about the transaction right away: the view has it before this
	// returns. The queued event then finds it there and changes nothing.
	n.updateMempoolView(false, accepted, nil)
	n.AnnounceNewTransactions(accepted)
	return accepted, nil
}

// AnnounceNewTransactions relays transactions newly accepted into the
// mempool (from peers, from ProcessTx, or orphans a block made valid) and
// queues them for the Electrum mempool view. Part of netsync.PeerNotifier;
// it can run inside the chain's notification callback, so it never blocks.
func (n *Node) AnnounceNewTransactions(txns []*mempool.TxDesc) {
	n.fees.observe(txns...)
	for _, desc := range txns {
		n.RelayInventory(wire.NewInvVect(wire.InvTypeTx, desc.Tx.Hash()), desc)
	}
	if n.srv != nil {
		n.srv.txsAccepted(txns)
	}
	if n.mempoolView != nil {
		n.events.push(nodeEvent{accepted: txns})
	}
}

// updateMempoolView brings the Electrum mempool view in line with btcd's
// pool and tells the Electrum server which scripts changed. btcd's pool has
// no removal hook, so after blocks (which mine, evict and re-add
// transactions) the view is reconciled with the whole pool; otherwise the
// accepted transactions are added, unless one of them replaces a
// transaction of the view (it spends an output the view already sees
// spent), which also needs the full reconciliation.
func (n *Node) updateMempoolView(blocks bool, accepted []*mempool.TxDesc, confirmed map[chainhash.Hash]struct{}) {
	mp := n.mempoolView
	if mp == nil || (!blocks && len(accepted) == 0) {
		return
	}
	// One update at a time: a reconciliation works from a snapshot of the
	// pool, and would take out a transaction ProcessTx adds meanwhile.
	n.viewMu.Lock()
	full := blocks
	if !full {
		spent := make(map[wire.OutPoint]struct{})
	check:
		for _, d := range accepted {
			for _, in := range d.Tx.MsgTx().TxIn {
				// Spent by the transaction itself: ProcessTx added it.
				by, seen := mp.SpentBy(in.PreviousOutPoint)
				seen = seen && by != *d.Tx.Hash()
				if _, dup := spent[in.PreviousOutPoint]; dup || seen {
					full = true
					break check
				}
				spent[in.PreviousOutPoint] = struct{}{}
			}
		}
	}
	var touched []indexers.ScriptHash
	if full {
		var keep func(chainhash.Hash) bool
		if b := n.indexBackend; b != nil {
			keep = b.MinedAhead
		}
		touched = mp.SyncKeeping(unconfirmed(n.txMemPool.TxDescs(), confirmed), keep)
	} else {
		touched = mp.Add(accepted...)
	}
	n.viewMu.Unlock()
	n.srv.electrumMempool(touched)
}

// unconfirmed returns descs without the transactions of confirmed: btcd's
// pool drops a block's transactions in the chain's notification, which the
// index's commit of the block may come before.
func unconfirmed(descs []*mempool.TxDesc, confirmed map[chainhash.Hash]struct{}) []*mempool.TxDesc {
	if len(confirmed) == 0 {
		return descs
	}
	out := descs[:0]
	for _, d := range descs {
		if _, ok := confirmed[*d.Tx.Hash()]; !ok {
			out = append(out, d)
		}
	}
	return out
}

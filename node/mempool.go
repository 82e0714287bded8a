package node

import (
	"errors"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
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
	n.AnnounceNewTransactions(accepted)
	return accepted, nil
}

// AnnounceNewTransactions relays transactions newly accepted into the
// mempool (from peers, from ProcessTx, or orphans a block made valid) and
// queues them for the Electrum mempool view. Part of netsync.PeerNotifier;
// it can run inside the chain's notification callback, so it never blocks.
func (n *Node) AnnounceNewTransactions(txns []*mempool.TxDesc) {
	for _, desc := range txns {
		n.RelayInventory(wire.NewInvVect(wire.InvTypeTx, desc.Tx.Hash()), desc)
	}
	n.events.push(nodeEvent{mempoolChanged: true})
}

// syncMempoolView brings the Electrum mempool view in line with btcd's pool
// and tells the Electrum server which scripts changed. btcd's pool has no
// removal hook, so this runs after every block and after acceptances
// (which can also replace transactions); the view's Sync does the diff.
func (n *Node) syncMempoolView() {
	if n.mempoolView == nil {
		return
	}
	touched := n.mempoolView.Sync(n.txMemPool.TxDescs())
	n.srv.electrumMempool(touched)
}

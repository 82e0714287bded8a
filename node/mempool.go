package node

import (
	"errors"
	"sync"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
)

// mempoolSink receives the node's view of mempool changes (the Electrum
// mempool overlay).
type mempoolSink interface {
	// addTx records a transaction that entered the pool.
	addTx(desc *mempool.TxDesc)
	// removeTx records a transaction that left the pool (mined, replaced,
	// double-spent, expired).
	removeTx(hash chainhash.Hash)
}

// mempoolTracker keeps a mirror of btcd's pool for the mempool overlay.
// btcd's mempool has no removal hook, so additions are taken from the
// acceptance paths (AnnounceNewTransactions, ProcessTx) and the whole set is
// reconciled against TxPool.TxDescs after every block.
type mempoolTracker struct {
	pool *mempool.TxPool

	mu    sync.Mutex
	known map[chainhash.Hash]struct{}
	sinks []mempoolSink
}

// newMempoolTracker returns a tracker of n's pool.
func newMempoolTracker(n *Node) *mempoolTracker {
	return &mempoolTracker{pool: n.txMemPool, known: make(map[chainhash.Hash]struct{})}
}

// addSink registers a consumer of mempool changes.
func (t *mempoolTracker) addSink(s mempoolSink) {
	t.mu.Lock()
	t.sinks = append(t.sinks, s)
	t.mu.Unlock()
}

// added records transactions just accepted into the pool.
func (t *mempoolTracker) added(descs []*mempool.TxDesc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range descs {
		h := *d.Tx.Hash()
		if _, ok := t.known[h]; ok {
			continue
		}
		t.known[h] = struct{}{}
		for _, s := range t.sinks {
			s.addTx(d)
		}
	}
}

// reconcile brings the mirror in line with the pool: transactions that left
// it are removed, ones it missed are added.
func (t *mempoolTracker) reconcile() {
	descs := t.pool.TxDescs()
	t.mu.Lock()
	defer t.mu.Unlock()
	current := make(map[chainhash.Hash]*mempool.TxDesc, len(descs))
	for _, d := range descs {
		current[*d.Tx.Hash()] = d
	}
	for h := range t.known {
		if _, ok := current[h]; !ok {
			delete(t.known, h)
			for _, s := range t.sinks {
				s.removeTx(h)
			}
		}
	}
	for h, d := range current {
		if _, ok := t.known[h]; ok {
			continue
		}
		t.known[h] = struct{}{}
		for _, s := range t.sinks {
			s.addTx(d)
		}
	}
}

// size returns the number of tracked transactions.
func (t *mempoolTracker) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.known)
}

// ProcessTx validates a transaction into the mempool with btcd's policy,
// relays it and the orphans it unlocked to peers, and feeds them to the
// mempool view and RPC websocket clients. The submitted transaction's
// descriptor comes first. Rejections are mempool.RuleError values.
func (n *Node) ProcessTx(tx *btcutil.Tx) ([]*mempool.TxDesc, error) {
	accepted, err := n.txMemPool.ProcessTransaction(tx, false, false, 0)
	if err != nil {
		return nil, err
	}
	if len(accepted) == 0 || !accepted[0].Tx.Hash().IsEqual(tx.Hash()) {
		// ProcessTransaction with allowOrphan=false either accepts the
		// transaction itself first or fails.
		return nil, errors.New("transaction was not accepted into the mempool")
	}
	n.AnnounceNewTransactions(accepted)
	return accepted, nil
}

// wireTxInv is the inventory vector announcing a mempool transaction.
func wireTxInv(desc *mempool.TxDesc) *wire.InvVect {
	return wire.NewInvVect(wire.InvTypeTx, desc.Tx.Hash())
}

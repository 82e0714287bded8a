package node

import (
	"math/rand"
	"sync"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/wire/v2"
)

// maxRebroadcastDelay bounds the random wait between two rebroadcasts of the
// node's own transactions.
const maxRebroadcastDelay = 5 * time.Minute

// rebroadcaster re-announces the transactions submitted to this node (RPC
// sendrawtransaction, Electrum broadcast) until a block confirms them or
// they leave the mempool, so they reach peers that connect later, as btcd
// does for its RPC transactions.
type rebroadcaster struct {
	mu  sync.Mutex
	txs map[chainhash.Hash]struct{}
}

// newRebroadcaster returns an empty rebroadcaster.
func newRebroadcaster() *rebroadcaster {
	return &rebroadcaster{txs: make(map[chainhash.Hash]struct{})}
}

// add starts rebroadcasting a transaction.
func (r *rebroadcaster) add(hash chainhash.Hash) {
	r.mu.Lock()
	r.txs[hash] = struct{}{}
	r.mu.Unlock()
}

// remove stops rebroadcasting a transaction.
func (r *rebroadcaster) remove(hash chainhash.Hash) {
	r.mu.Lock()
	delete(r.txs, hash)
	r.mu.Unlock()
}

// pending returns the transactions being rebroadcast.
func (r *rebroadcaster) pending() []chainhash.Hash {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]chainhash.Hash, 0, len(r.txs))
	for h := range r.txs {
		out = append(out, h)
	}
	return out
}

// TransactionConfirmed stops rebroadcasting a transaction a block
// confirmed. Part of netsync.PeerNotifier.
func (n *Node) TransactionConfirmed(tx *btcutil.Tx) {
	n.rebroadcast.remove(*tx.Hash())
}

// reannounce announces once more a transaction the pool already holds,
// which a wallet submitted again, as bitcoind's sendrawtransaction does (it
// does not rebroadcast it later: the node did not take it from this
// wallet). The pool's copy is announced, whose witness may differ from
// the wallet's, with the fee from the mempool view, so a client resending
// pool transactions costs no pass over the pool.
func (n *Node) reannounce(hash chainhash.Hash) {
	tx, err := n.txMemPool.FetchTransaction(&hash)
	if err != nil {
		return // gone meanwhile
	}
	var desc *mempool.TxDesc
	if fee, ok := n.viewFee(hash); ok {
		desc = &mempool.TxDesc{TxDesc: mining.TxDesc{Tx: tx, Fee: fee,
			FeePerKB: fee * 1000 / mempool.GetTxVirtualSize(tx)}}
	} else {
		for _, d := range n.txMemPool.TxDescs() {
			if *d.Tx.Hash() == hash {
				desc = d
				break
			}
		}
		if desc == nil {
			return // gone meanwhile
		}
	}
	n.RelayInventory(wire.NewInvVect(wire.InvTypeTx, &hash), desc)
}

// viewFee returns a transaction's fee from the mempool view, when it holds
// the transaction.
func (n *Node) viewFee(hash chainhash.Hash) (int64, bool) {
	if n.mempoolView == nil {
		return 0, false
	}
	return n.mempoolView.Fee(hash)
}

// rebroadcastLoop re-announces the node's own unconfirmed transactions at
// random intervals until the node stops.
func (n *Node) rebroadcastLoop() {
	defer n.wg.Done()
	timer := time.NewTimer(randomDelay())
	defer timer.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-timer.C:
		}
		pending := n.rebroadcast.pending()
		if len(pending) > 0 {
			inPool := make(map[chainhash.Hash]*mempool.TxDesc)
			for _, d := range n.txMemPool.TxDescs() {
				inPool[*d.Tx.Hash()] = d
			}
			for _, hash := range pending {
				desc, ok := inPool[hash]
				if !ok {
					// Mined, replaced or evicted.
					n.rebroadcast.remove(hash)
					continue
				}
				n.RelayInventory(wire.NewInvVect(wire.InvTypeTx, &hash), desc)
			}
		}
		timer.Reset(randomDelay())
	}
}

// randomDelay returns a delay up to maxRebroadcastDelay.
func randomDelay() time.Duration {
	return time.Duration(rand.Int63n(int64(maxRebroadcastDelay))) + time.Second
}

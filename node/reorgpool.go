package node

import (
	"sync"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
)

// maxHeldAside bounds the pool transactions held aside between a
// reorganization's first disconnect and its end. Beyond it, the rest are
// not held: they leave the pool for good as they would without this.
const maxHeldAside = 50_000

// heldAside keeps, during a reorganization, the pool descendants of the
// transactions of the disconnected blocks, as they were before btcd's sync
// manager put the blocks' transactions back into the pool. When it cannot
// put one back (a non-standard transaction, valid in a block but refused by
// this node's policy), it removes it with its descendants, and the node's
// dropOrphaned removes the spenders of any that did not return. Bitcoin
// Core re-adds a reorganization's transactions only after its connects,
// leaving out those the new branch confirms, so a child of a transaction
// the new branch confirms again stays in its pool. The node gets there by
// submitting the held transactions again once the connects are done
// (restoreHeld).
type heldAside struct {
	mu   sync.Mutex
	txs  []*btcutil.Tx
	seen map[chainhash.Hash]struct{}
	// gen counts disconnects; takenAt is gen at the last take. A
	// restore that began before a later disconnect may have been refused
	// in the middle of that reorganization (retry).
	gen, takenAt uint64
}

// newHeldAside returns an empty set.
func newHeldAside() *heldAside {
	return &heldAside{seen: make(map[chainhash.Hash]struct{})}
}

// add holds the pool descendants of block's transactions, its coinbase
// included. It reads only btcd's pool (its own lock), never the chain.
func (h *heldAside) add(pool *mempool.TxPool, block *btcutil.Block) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	walked := make(map[chainhash.Hash]struct{})
	queue := block.Transactions()
	for len(queue) > 0 {
		tx := queue[0]
		queue = queue[1:]
		for i := range tx.MsgTx().TxOut {
			child := pool.CheckSpend(wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)})
			if child == nil {
				continue
			}
			if _, ok := walked[*child.Hash()]; ok {
				continue
			}
			walked[*child.Hash()] = struct{}{}
			if !h.hold(child) {
				return
			}
			queue = append(queue, child)
		}
	}
}

// hold adds tx to the set; false once the set is full.
func (h *heldAside) hold(tx *btcutil.Tx) bool {
	if _, ok := h.seen[*tx.Hash()]; ok {
		return true
	}
	if len(h.txs) >= maxHeldAside {
		log.Warnf("Reorganization: more than %d pool transactions spend the disconnected blocks' "+
			"transactions; the others are not submitted again after it", maxHeldAside)
		return false
	}
	h.seen[*tx.Hash()] = struct{}{}
	h.txs = append(h.txs, tx)
	return true
}

// take returns the held transactions and the disconnect count they were
// held by, and empties the set.
func (h *heldAside) take() ([]*btcutil.Tx, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.takeLocked()
}

func (h *heldAside) takeLocked() ([]*btcutil.Tx, uint64) {
	txs := h.txs
	if len(txs) > 0 {
		h.txs, h.seen = nil, make(map[chainhash.Hash]struct{})
	}
	h.takenAt = h.gen
	return txs, h.gen
}

// retry holds again txs that a restore queued at disconnect count gen
// could not return to the pool, when a disconnect came after it: the
// restore may have run between that disconnect and its reorganization's
// connects, when a parent the new branch confirms again was confirmed
// nowhere. When that reorganization has already ended (taken the set), it
// takes them back at once, under the same lock, for the caller to submit:
// a disconnect coming in between would otherwise hand them to its own
// reorganization's end before its connects.
func (h *heldAside) retry(txs []*btcutil.Tx, gen uint64) ([]*btcutil.Tx, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(txs) == 0 || h.gen == gen {
		return nil, 0
	}
	for _, tx := range txs {
		if !h.hold(tx) {
			break
		}
	}
	if h.takenAt != h.gen {
		return nil, 0 // the reorganization under way submits them at its end
	}
	return h.takeLocked()
}

// holdDescendants is subscribed to the chain before netsync, so that on a
// disconnect it runs before netsync's callback removes anything from the
// pool. Like any chain callback it never blocks and takes no chain lock.
func (n *Node) holdDescendants(note *blockchain.Notification) {
	if note.Type != blockchain.NTBlockDisconnected {
		return
	}
	if block, ok := note.Data.(*btcutil.Block); ok {
		n.held.add(n.txMemPool, block)
	}
}

// reorganized queues the held transactions for the dispatcher, which
// submits them again (restoreHeld). It is called once a reorganization's
// connects are done: on NTBlockAccepted, which btcd sends after all
// disconnects and connects of one ProcessBlock, and after invalidateblock
// and reconsiderblock return (which send none, docs/BTCD.md §2). It never
// blocks.
func (n *Node) reorganized() {
	if txs, gen := n.held.take(); len(txs) > 0 {
		n.events.push(nodeEvent{restore: txs, restoreGen: gen})
	}
}

// restoreHeld submits the held transactions again, parents first, through
// btcd's pool, as netsync puts a disconnected block's transactions back:
// the pool checks them against the chain and itself as it does every
// transaction. One still in the pool is skipped; one whose inputs exist
// nowhere now (a parent the new branch does not confirm, or one it
// double-spends) or that the new branch confirms is not accepted, and
// stays out with its descendants: they are all held, and the pool takes
// none of them without its parent. Orphans waiting for a restored
// transaction are accepted and announced. It runs on the dispatcher, never
// in a chain callback, since the pool takes the chain lock.
func (n *Node) restoreHeld(txs []*btcutil.Tx, gen uint64) {
	var restored int
	var unlocked []*mempool.TxDesc
	var out []*btcutil.Tx
	defer func() {
		if again, g := n.held.retry(out, gen); len(again) > 0 {
			n.events.push(nodeEvent{restore: again, restoreGen: g})
		}
	}()
	for _, tx := range parentsFirst(txs) {
		if n.txMemPool.IsTransactionInPool(tx.Hash()) {
			continue
		}
		missing, desc, err := n.txMemPool.MaybeAcceptTransaction(tx, false, false)
		if err != nil || len(missing) > 0 || desc == nil {
			log.Debugf("Transaction %v, held aside during a reorganization, stays out of the mempool: "+
				"err %v, missing inputs %d", tx.Hash(), err, len(missing))
			out = append(out, tx)
			continue
		}
		restored++
		n.fees.observe(desc)
		unlocked = append(unlocked, n.txMemPool.ProcessOrphans(tx)...)
	}
	if restored > 0 {
		log.Debugf("Reorganization: %d of %d held pool transactions returned to the mempool", restored, len(txs))
	}
	if len(unlocked) > 0 {
		n.AnnounceNewTransactions(unlocked)
	}
}

// parentsFirst orders txs so that each comes after those of txs it spends.
func parentsFirst(txs []*btcutil.Tx) []*btcutil.Tx {
	byHash := make(map[chainhash.Hash]*btcutil.Tx, len(txs))
	for _, tx := range txs {
		byHash[*tx.Hash()] = tx
	}
	out := make([]*btcutil.Tx, 0, len(txs))
	done := make(map[chainhash.Hash]bool, len(txs))
	var visit func(tx *btcutil.Tx)
	visit = func(tx *btcutil.Tx) {
		if done[*tx.Hash()] {
			return
		}
		done[*tx.Hash()] = true
		for _, in := range tx.MsgTx().TxIn {
			if p, ok := byHash[in.PreviousOutPoint.Hash]; ok {
				visit(p)
			}
		}
		out = append(out, tx)
	}
	for _, tx := range txs {
		visit(tx)
	}
	return out
}

// rpcChain is the chain as the RPC server sees it: invalidateblock and
// reconsiderblock reorganize without NTBlockAccepted, so the transactions
// held aside by their disconnects are submitted again when they return.
type rpcChain struct {
	*blockchain.BlockChain
	n *Node
}

// InvalidateBlock is the chain's, then ends the reorganization it made.
func (c rpcChain) InvalidateBlock(hash *chainhash.Hash) error {
	defer c.n.reorganized()
	return c.BlockChain.InvalidateBlock(hash)
}

// ReconsiderBlock is the chain's, then ends the reorganization it made.
func (c rpcChain) ReconsiderBlock(hash *chainhash.Hash) error {
	defer c.n.reorganized()
	return c.BlockChain.ReconsiderBlock(hash)
}

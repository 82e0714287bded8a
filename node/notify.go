package node

import (
	"sync"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// nodeEvent is something the dispatcher passes on to the Electrum server and
// the mempool view: a block connected or disconnected, or a change of the
// mempool.
type nodeEvent struct {
	// block is the connected or disconnected block, nil for a mempool
	// change.
	block     *btcutil.Block
	connected bool

	// accepted are transactions accepted into the mempool (nil for a
	// block event).
	accepted []*mempool.TxDesc

	// indexed is a commit of the Electrum index's writer: the scripts
	// whose confirmed history changed, or all of them.
	indexed *indexers.Commit
	// serving: the Electrum server started; it is told the index tip in
	// the order of the commits' events.
	serving bool

	// restore are the pool transactions held aside during a
	// reorganization that just ended, to submit again (reorgpool.go).
	restore []*btcutil.Tx
	// restoreGen is the held set's disconnect count when it was taken.
	restoreGen uint64
}

// eventQueue is an unbounded FIFO: the chain's notification callback and
// the mempool acceptance paths push without ever blocking; one dispatcher
// goroutine pops.
type eventQueue struct {
	mu     sync.Mutex
	items  []nodeEvent
	signal chan struct{}
	closed bool
}

// newEventQueue returns an empty queue.
func newEventQueue() *eventQueue {
	return &eventQueue{signal: make(chan struct{}, 1)}
}

// push appends an event; it never blocks.
func (q *eventQueue) push(ev nodeEvent) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, ev)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pop waits for events and returns all queued ones; ok is false once the
// queue was closed and drained.
func (q *eventQueue) pop() (evs []nodeEvent, ok bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			evs, q.items = q.items, nil
			q.mu.Unlock()
			return evs, true
		}
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		q.mu.Unlock()
		<-q.signal
	}
}

// close makes pop return false once the remaining events are taken.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// handleChainNotification is subscribed to the chain after netsync. It runs
// on the goroutine processing the block, after the block's chain state and
// index rows were committed; it only hands the block on (never blocks, never
// calls netsync).
func (n *Node) handleChainNotification(note *blockchain.Notification) {
	block, ok := note.Data.(*btcutil.Block)
	if !ok {
		return
	}
	var connected bool
	switch note.Type {
	case blockchain.NTBlockConnected:
		connected = true
		n.dropConfirmed(block)
		n.fees.connected(block)
		n.srv.blockConnected(block)
	case blockchain.NTBlockDisconnected:
		n.dropOrphaned(block)
		n.fees.observe(n.returnedToPool(block)...)
		n.fees.disconnected(block)
		n.srv.blockDisconnected(block)
	case blockchain.NTBlockAccepted:
		// After all the disconnects and connects of one ProcessBlock.
		n.reorganized()
		return
	default:
		return
	}
	n.events.push(nodeEvent{block: block, connected: connected})
}

// dropConfirmed removes a connected block's transactions, and pool
// transactions they double-spend, from btcd's pool. netsync does this only
// while it considers the chain current; a node that is behind (or mines
// on an old chain) would otherwise keep confirmed transactions in its pool
// and serve them to Electrum clients as unconfirmed too. When netsync has
// already done it, these calls find nothing to remove. It runs in the chain
// callback, as netsync's own cleanup does.
func (n *Node) dropConfirmed(block *btcutil.Block) {
	for _, tx := range block.Transactions()[1:] {
		n.txMemPool.RemoveTransaction(tx, false)
		n.txMemPool.RemoveDoubleSpends(tx)
	}
}

// returnedToPool returns the pool's entries for a disconnected block's
// transactions that netsync put back into the pool, which btcd's pool would
// have shown the fee estimator as it took them.
func (n *Node) returnedToPool(block *btcutil.Block) []*mempool.TxDesc {
	if len(block.Transactions()) < 2 {
		return nil
	}
	inBlock := make(map[chainhash.Hash]struct{}, len(block.Transactions()))
	for _, tx := range block.Transactions()[1:] {
		inBlock[*tx.Hash()] = struct{}{}
	}
	var out []*mempool.TxDesc
	for _, d := range n.txMemPool.TxDescs() {
		if _, ok := inBlock[*d.Tx.Hash()]; ok {
			out = append(out, d)
		}
	}
	return out
}

// dropOrphaned removes from btcd's pool the transactions that spend a
// disconnected block's transactions which did not return to the pool.
// netsync puts a disconnected block's transactions back into the pool
// before this runs, and removes the spenders of those it rejects; one whose
// own inputs are missing (an input's transaction, from the same reorg, was
// rejected) is neither added nor removed, so its spenders, put back from a
// higher block a moment earlier, would stay in the pool spending outputs
// that exist nowhere, and Electrum clients would be shown them as unconfirmed
// history and balance. Found by the reorg storm test (docs/RELIABILITY.md).
// The coinbase never returns to the pool, so after a reorganization deeper
// than coinbase maturity its spenders go with their descendants. Spenders
// of a transaction the new branch confirms again come back once the
// reorganization ends: they were held aside (reorgpool.go).
func (n *Node) dropOrphaned(block *btcutil.Block) {
	for _, tx := range block.Transactions() {
		if !n.txMemPool.IsTransactionInPool(tx.Hash()) {
			n.txMemPool.RemoveTransaction(tx, true)
		}
	}
}

// dispatchEvents runs until the queue is closed. For each batch of events
// it updates the mempool view (a full reconciliation with btcd's pool after
// blocks, else just the accepted transactions), then tells the Electrum
// server which scripts' confirmed histories the index's commits changed and
// what the new tip is.
func (n *Node) dispatchEvents() {
	defer n.wg.Done()
	for {
		evs, ok := n.events.pop()
		if !ok {
			return
		}
		blocks, indexed, all, serving := false, false, false, false
		var tip indexers.Tip
		confirmed := make(map[chainhash.Hash]struct{})
		var (
			accepted []*mempool.TxDesc
			touched  []indexers.ScriptHash
		)
		for _, ev := range evs {
			if len(ev.restore) > 0 {
				// Before the view's reconciliation below, which then
				// sees the pool as the reorganization left it.
				n.restoreHeld(ev.restore, ev.restoreGen)
				blocks = true
			}
			// A connected block's transactions leave the view when the
			// index commits the block; a disconnected block's come back
			// into btcd's pool in the chain's notification, which the
			// index's undo may come before. A connected block the index
			// committed already left, in the commit's reconciliation,
			// the pool transactions it double-spends, which btcd's pool
			// dropped only after: reconcile again.
			blocks = blocks || (ev.block != nil && (!ev.connected || n.indexHolds(ev.block)))
			if c := ev.indexed; c != nil {
				indexed, tip = true, c.Tip
				all = all || c.All
				if c.All {
					// Blocks undone: what the batch's earlier
					// commits confirmed may be the pool's again.
					clear(confirmed)
				}
				touched = append(touched, c.Touched...)
				for txid := range c.Confirmed {
					confirmed[txid] = struct{}{}
				}
			}
			accepted = append(accepted, ev.accepted...)
			serving = serving || ev.serving
		}
		// The mempool view is reconciled with btcd's pool before the
		// statuses are computed, which then see the pool as the blocks
		// left it and the index holding them.
		n.updateMempoolView(blocks || indexed, accepted, confirmed)
		if indexed {
			if all {
				n.srv.electrumAllScripts()
			} else {
				n.srv.electrumScripts(touched)
			}
			// The tip the view was just reconciled with: statuses read
			// at a later one wait for its own reconciliation.
			n.srv.electrumTip(tip)
		} else if serving {
			// No commit since the view was synced at start: its tip.
			if t, ok := n.index.electrum.LatestTip(); ok {
				n.srv.electrumTip(t)
			}
		}
	}
}

// indexHolds reports whether the Electrum index has committed block.
func (n *Node) indexHolds(block *btcutil.Block) bool {
	if n.index == nil || n.index.electrum == nil {
		return false
	}
	tip, ok := n.index.electrum.LatestTip()
	return ok && tip.Height >= block.Height()
}

// indexCommitted is the Electrum index writer's callback after each commit;
// it never blocks.
func (n *Node) indexCommitted(c indexers.Commit) {
	n.events.push(nodeEvent{indexed: &c})
}

// observeBlock is the Electrum index writer's callback for every block it
// indexes.
func (n *Node) observeBlock(p indexers.BlockPass) {
	if m := n.metrics; m != nil {
		m.observeBlock(p)
	}
}

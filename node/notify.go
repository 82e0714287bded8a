package node

import (
	"sync"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
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
	// touched are the script hashes whose confirmed history the block
	// changed (nil without the Electrum index). Taken in the chain
	// callback, since the index only remembers the last few blocks.
	touched []indexers.ScriptHash

	// accepted are transactions accepted into the mempool (nil for a
	// block event).
	accepted []*mempool.TxDesc

	// caughtUp: the trailing Electrum index committed blocks the hooks
	// left to it, whose touched scripts were never reported.
	caughtUp bool
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
		n.srv.blockConnected(block)
	case blockchain.NTBlockDisconnected:
		n.dropOrphaned(block)
		n.srv.blockDisconnected(block)
	default:
		return
	}
	ev := nodeEvent{block: block, connected: connected}
	if idx := n.index.electrum; idx != nil {
		ev.touched = idx.Touched(*block.Hash())
	}
	n.events.push(ev)
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

// dropOrphaned removes from btcd's pool the transactions that spend a
// disconnected block's transactions which did not return to the pool.
// netsync puts a disconnected block's transactions back into the pool
// before this runs, and removes the spenders of those it rejects; one whose
// own inputs are missing (an input's transaction, from the same reorg, was
// rejected) is neither added nor removed, so its spenders, put back from a
// higher block a moment earlier, would stay in the pool spending outputs
// that exist nowhere, and Electrum clients would be shown them as unconfirmed
// history and balance. Found by the reorg storm test (docs/RELIABILITY.md).
func (n *Node) dropOrphaned(block *btcutil.Block) {
	for _, tx := range block.Transactions()[1:] {
		if !n.txMemPool.IsTransactionInPool(tx.Hash()) {
			n.txMemPool.RemoveTransaction(tx, true)
		}
	}
}

// dispatchEvents runs until the queue is closed. For each batch of events
// it tells the Electrum server which scripts' confirmed histories changed
// and what the new tip is, then updates the mempool view: a full
// reconciliation with btcd's pool after blocks, else just the accepted
// transactions.
func (n *Node) dispatchEvents() {
	defer n.wg.Done()
	for {
		evs, ok := n.events.pop()
		if !ok {
			return
		}
		blocks, caughtUp := false, false
		var (
			accepted []*mempool.TxDesc
			touched  []indexers.ScriptHash
		)
		for _, ev := range evs {
			if ev.block != nil || ev.caughtUp {
				blocks = true
				touched = append(touched, ev.touched...)
			}
			caughtUp = caughtUp || ev.caughtUp
			accepted = append(accepted, ev.accepted...)
		}
		// The mempool view is reconciled first, so the statuses the
		// server computes for the block's scripts already see the pool
		// as the block left it.
		n.updateMempoolView(blocks, accepted)
		if blocks {
			if caughtUp {
				n.srv.electrumAllScripts()
			} else {
				n.srv.electrumScripts(touched)
			}
			n.srv.electrumTip()
		}
	}
}

// indexCaughtUp is the trailing Electrum index's callback after it committed
// blocks of its own: every subscribed status is recomputed.
func (n *Node) indexCaughtUp() {
	n.events.push(nodeEvent{caughtUp: true})
}

package node

import (
	"sync"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/mempool"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// chainEvent is a block connected to or disconnected from the main chain,
// queued for the Electrum server and the mempool tracker.
type chainEvent struct {
	connected bool
	block     *btcutil.Block
	// touched are the script hashes whose confirmed history the block
	// changed (nil without the Electrum index). Taken in the callback,
	// since the index only remembers the last few blocks.
	touched []indexers.ScriptHash
}

// eventQueue is an unbounded FIFO: the chain's notification callback
// pushes without ever blocking, one dispatcher goroutine pops.
type eventQueue struct {
	mu     sync.Mutex
	items  []chainEvent
	signal chan struct{}
	closed bool
}

// newEventQueue returns an empty queue.
func newEventQueue() *eventQueue {
	return &eventQueue{signal: make(chan struct{}, 1)}
}

// push appends an event; it never blocks.
func (q *eventQueue) push(ev chainEvent) {
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

// pop waits for the next events and returns them all; ok is false once the
// queue was closed and drained.
func (q *eventQueue) pop() (evs []chainEvent, ok bool) {
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
		n.srv.blockConnected(block)
	case blockchain.NTBlockDisconnected:
		n.srv.blockDisconnected(block)
	default:
		return
	}
	ev := chainEvent{connected: connected, block: block}
	if idx := n.index.electrum; idx != nil {
		ev.touched = idx.Touched(*block.Hash())
	}
	n.events.push(ev)
}

// dispatchEvents runs until the queue is closed: after every block it
// reconciles the mempool view with btcd's pool and tells the Electrum
// server about the new tip.
func (n *Node) dispatchEvents() {
	defer n.wg.Done()
	for {
		evs, ok := n.events.pop()
		if !ok {
			return
		}
		for _, ev := range evs {
			n.srv.electrumBlock(ev)
		}
		n.mempoolTrack.reconcile()
	}
}

// AnnounceNewTransactions relays transactions newly accepted into the
// mempool (from peers, or orphans a block made valid) and feeds them to the
// mempool view and the RPC websocket clients. Part of netsync.PeerNotifier;
// it can run inside the chain's notification callback, so it never blocks.
func (n *Node) AnnounceNewTransactions(txns []*mempool.TxDesc) {
	for _, desc := range txns {
		n.RelayInventory(wireTxInv(desc), desc)
	}
	n.mempoolTrack.added(txns)
	n.srv.newTransactions(txns)
}

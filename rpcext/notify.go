package rpcext

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// blockEvent is a main-chain change waiting to be sent to websocket
// clients.
type blockEvent struct {
	block     *btcutil.Block
	connected bool
	// txs, when set, are transactions accepted into the mempool (and
	// block is nil).
	txs []*btcutil.Tx
	// watch, when set, registers a rescan's keys (and block is nil): the
	// events queued before it are not told with them, those after are.
	watch func()
}

// notifier turns block events into websocket notifications on its own
// goroutine, in the order the node reported them.
type notifier struct {
	s *Server

	mu      sync.Mutex
	pending []blockEvent
	running bool
	// tip is the main chain's tip as the block events queued so far
	// leave it: the chain's tip when the server was made, then each
	// block event's.
	tip chainhash.Hash
	// watches counts the registrations queued and not yet run, registered
	// those run: an event is kept while one is queued, or when one ran
	// after enqueue looked at the clients, for the keys it registers.
	watches, registered int

	signal chan struct{}
	done   chan struct{}
}

// newNotifier returns an idle notifier for s, whose block events start at
// the chain's tip.
func newNotifier(s *Server) *notifier {
	return &notifier{s: s, tip: s.cfg.Chain.BestSnapshot().Hash, signal: make(chan struct{}, 1), done: make(chan struct{})}
}

// start runs the notification goroutine; called once from Server.Start.
func (n *notifier) start() {
	n.mu.Lock()
	n.running = true
	n.mu.Unlock()
	go n.run()
}

// wait returns once the goroutine has stopped (immediately if it never
// ran). The server's quit channel must be closed.
func (n *notifier) wait() {
	n.mu.Lock()
	running := n.running
	n.mu.Unlock()
	if running {
		<-n.done
	}
}

// enqueue adds an event without blocking. Events nobody is registered
// for are dropped at once, so a catch-up with no websocket clients holds
// no blocks in memory.
func (n *notifier) enqueue(ev blockEvent) {
	select {
	case <-n.s.quit:
		return
	default:
	}
	// The clients are looked at outside mu: the server's lock is taken
	// before mu elsewhere.
	n.mu.Lock()
	registered := n.registered
	n.mu.Unlock()
	nobody := !n.s.hasBlockClients() && !n.s.hasTxClients()
	n.mu.Lock()
	if ev.block != nil {
		n.tip = *ev.block.Hash()
		if !ev.connected {
			n.tip = ev.block.MsgBlock().Header.PrevBlock
		}
	}
	if nobody && n.watches == 0 && n.registered == registered {
		n.mu.Unlock()
		return
	}
	n.pending = append(n.pending, ev)
	n.mu.Unlock()
	n.wake()
}

// wake has the goroutine look at the queue; it never blocks.
func (n *notifier) wake() {
	select {
	case n.signal <- struct{}{}:
	default:
	}
}

// watchAfter has register run in the queue's order when the block events
// queued so far end at the block after, and reports whether it did: the
// blocks up to after are then told by the rescan that scanned them, and the
// later ones by notifications, each once.
func (n *notifier) watchAfter(after chainhash.Hash, register func()) bool {
	n.mu.Lock()
	best := n.tip
	ok := best == after
	if ok {
		n.pending = append(n.pending, blockEvent{watch: register})
		n.watches++
	}
	n.mu.Unlock()
	if ok {
		n.wake()
	}
	return ok
}

// run sends queued events until the server shuts down.
func (n *notifier) run() {
	defer close(n.done)
	for {
		select {
		case <-n.s.quit:
			return
		case <-n.signal:
		}
		n.mu.Lock()
		events := n.pending
		n.pending = nil
		n.mu.Unlock()
		for _, ev := range events {
			if ev.watch != nil {
				ev.watch()
				n.mu.Lock()
				n.watches--
				n.registered++
				n.mu.Unlock()
				continue
			}
			if ev.txs != nil {
				n.s.sendTxEvent(ev.txs)
				continue
			}
			// As btcd: a connected block's transactions before the
			// block itself.
			if ev.connected {
				n.s.sendBlockTxs(ev.block)
			}
			n.s.sendBlockEvent(ev)
		}
	}
}

// NotifyBlockConnected queues blockconnected and filteredblockconnected
// notifications for a block attached to the main chain. It never blocks;
// call it from the chain's NTBlockConnected callback, in chain order, for
// every block connected after New (the server takes the chain's tip then
// as where its block events start). The block's height should be set
// (blockchain's notifications set it).
func (s *Server) NotifyBlockConnected(block *btcutil.Block) {
	s.gbt.blockConnected()
	s.ntfn.enqueue(blockEvent{block: block, connected: true})
}

// NotifyBlockDisconnected queues blockdisconnected and
// filteredblockdisconnected notifications for a block detached from the
// main chain. It never blocks.
func (s *Server) NotifyBlockDisconnected(block *btcutil.Block) {
	s.ntfn.enqueue(blockEvent{block: block, connected: false})
}

// hasBlockClients reports whether any websocket client asked for block
// notifications.
func (s *Server) hasBlockClients() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.ws {
		c.mu.Lock()
		blocks := c.blocks
		c.mu.Unlock()
		if blocks {
			return true
		}
	}
	return false
}

// blockClients returns the websocket clients that asked for block
// notifications.
func (s *Server) blockClients() []*wsClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*wsClient
	for c := range s.ws {
		c.mu.Lock()
		if c.blocks {
			out = append(out, c)
		}
		c.mu.Unlock()
	}
	return out
}

// sendBlockEvent queues the notifications for one event to every client
// that asked for them; each client's filtered notification carries the
// block's transactions matching its filter.
func (s *Server) sendBlockEvent(ev blockEvent) {
	clients := s.blockClients()
	if len(clients) == 0 {
		return
	}
	block := ev.block
	height := s.blockWithHeight(block)
	header := &block.MsgBlock().Header
	var hbuf bytes.Buffer
	if err := header.Serialize(&hbuf); err != nil {
		log.Errorf("Serialize header of %v: %v", block.Hash(), err)
		return
	}
	headerHex := hex.EncodeToString(hbuf.Bytes())

	var plain interface{}
	if ev.connected {
		plain = btcjson.NewBlockConnectedNtfn(block.Hash().String(), height, header.Timestamp.Unix())
	} else {
		plain = btcjson.NewBlockDisconnectedNtfn(block.Hash().String(), height, header.Timestamp.Unix())
	}
	plainJSON, err := btcjson.MarshalCmd(btcjson.RpcVersion1, nil, plain)
	if err != nil {
		log.Errorf("Marshal block notification: %v", err)
		return
	}
	var disconnectedJSON []byte
	if !ev.connected {
		disconnectedJSON, err = btcjson.MarshalCmd(btcjson.RpcVersion1, nil,
			btcjson.NewFilteredBlockDisconnectedNtfn(height, headerHex))
		if err != nil {
			log.Errorf("Marshal filtered block notification: %v", err)
			return
		}
	}

	txHexes := make(map[int]string)
	for _, c := range clients {
		if !c.queue(plainJSON) {
			continue
		}
		if !ev.connected {
			c.queue(disconnectedJSON)
			continue
		}
		var matched []string
		full := false
		c.mu.Lock()
		if c.filter != nil {
			for i, tx := range block.Transactions() {
				m, over := c.filter.matchAndUpdate(tx, s.cfg.Params, c.subscriptionRoom())
				if over {
					full = true
					break
				}
				if !m {
					continue
				}
				h, ok := txHexes[i]
				if !ok {
					h, err = txHex(tx.MsgTx())
					if err != nil {
						continue
					}
					txHexes[i] = h
				}
				matched = append(matched, h)
			}
		}
		c.mu.Unlock()
		if full {
			c.closeOverSubscribed()
			continue
		}
		msg, err := btcjson.MarshalCmd(btcjson.RpcVersion1, nil,
			btcjson.NewFilteredBlockConnectedNtfn(height, headerHex, matched))
		if err != nil {
			log.Errorf("Marshal filtered block notification: %v", err)
			continue
		}
		c.queue(msg)
	}
}

// txFilter is a websocket client's loadtxfilter state: addresses whose
// payments it wants and outpoints whose spends it wants. Outputs paying a
// watched address are added as watched outpoints, as btcd does.
type txFilter struct {
	addrs     map[string]struct{}
	outpoints map[wire.OutPoint]struct{}
}

// newTxFilter returns an empty filter.
func newTxFilter() *txFilter {
	return &txFilter{addrs: make(map[string]struct{}), outpoints: make(map[wire.OutPoint]struct{})}
}

// addressKey is the form addresses are matched in: the encoded address,
// with pay-to-pubkey normalized to its pay-to-pubkey-hash address so
// either form matches both kinds of output (btcd matches P2PK outputs
// against pubkey-hash filters too).
func addressKey(a address.Address) string {
	if pk, ok := a.(*address.AddressPubKey); ok {
		return pk.AddressPubKeyHash().EncodeAddress()
	}
	return a.EncodeAddress()
}

// matchAndUpdate reports whether tx spends a watched outpoint or pays a
// watched address, adding the outputs paying watched addresses to the
// watched outpoints, at most room of them: full reports one left out, of
// which the client would miss the spend.
func (f *txFilter) matchAndUpdate(tx *btcutil.Tx, params *chaincfg.Params, room int) (matched, full bool) {
	msg := tx.MsgTx()
	for _, in := range msg.TxIn {
		if _, ok := f.outpoints[in.PreviousOutPoint]; ok {
			matched = true
			break
		}
	}
	for i, out := range msg.TxOut {
		_, addrs, _, err := txscript.ExtractPkScriptAddrs(out.PkScript, params)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if _, ok := f.addrs[addressKey(a)]; !ok {
				continue
			}
			matched = true
			op := wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)}
			if _, ok := f.outpoints[op]; !ok {
				if room <= 0 {
					full = true
					break
				}
				f.outpoints[op] = struct{}{}
				room--
			}
			break
		}
	}
	return matched, full
}

// handleLoadTxFilter answers loadtxfilter: it replaces (reload) or extends
// the client's filter.
func handleLoadTxFilter(c *wsClient, cmd interface{}) (interface{}, error) {
	lc := cmd.(*btcjson.LoadTxFilterCmd)
	params := c.s.cfg.Params
	// As btcd: an address that does not decode for the network is
	// skipped, and an outpoint hash is read as chainhash reads it.
	keys := make([]string, 0, len(lc.Addresses))
	for _, s := range lc.Addresses {
		if a, err := address.DecodeAddress(s, params); err == nil && a.IsForNet(params) {
			keys = append(keys, addressKey(a))
		}
	}
	ops := make([]wire.OutPoint, len(lc.OutPoints))
	for i, op := range lc.OutPoints {
		h, err := chainhash.NewHashFromStr(op.Hash)
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter,
				fmt.Sprintf("Invalid outpoint hash %q", truncate(op.Hash)))
		}
		ops[i] = wire.OutPoint{Hash: *h, Index: op.Index}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// The entries it adds count against the subscription limit (those
	// of the filter it replaces do not).
	room, add := c.subscriptionRoom(), 0
	replace := lc.Reload || c.filter == nil
	if replace {
		if c.filter != nil {
			room += len(c.filter.addrs) + len(c.filter.outpoints)
		}
		add = newKeys[string](nil, keys) + newKeys[wire.OutPoint](nil, ops)
	} else {
		add = newKeys(c.filter.addrs, keys) + newKeys(c.filter.outpoints, ops)
	}
	if add > room {
		return nil, c.errSubscriptionLimit()
	}
	if replace {
		c.filter = newTxFilter()
	}
	for _, k := range keys {
		c.filter.addrs[k] = struct{}{}
	}
	for _, op := range ops {
		c.filter.outpoints[op] = struct{}{}
	}
	return nil, nil
}

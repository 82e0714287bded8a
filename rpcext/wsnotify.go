package rpcext

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// btcd's transaction notifications over websockets: notifynewtransactions
// (txaccepted, txacceptedverbose), the legacy notifyreceived and notifyspent
// (recvtx, redeemingtx, for mempool and block transactions), relevanttxaccepted
// for clients with a loadtxfilter filter, rescanblocks over that filter, and
// session.

// wsWatch is a websocket client's transaction subscriptions; guarded by
// the client's mu.
type wsWatch struct {
	txs        bool // notifynewtransactions
	txsVerbose bool
	received   map[string]struct{}        // notifyreceived addresses
	spent      map[wire.OutPoint]struct{} // notifyspent outpoints
	session    uint64
}

// subscriptionRoom is how many more subscriptions the client may have
// (Config.MaxWebsocketSubscriptions). Called with c.mu held.
func (c *wsClient) subscriptionRoom() int {
	n := len(c.watch.received) + len(c.watch.spent)
	if c.filter != nil {
		n += len(c.filter.addrs) + len(c.filter.outpoints)
	}
	return c.s.cfg.MaxWebsocketSubscriptions - n
}

// errSubscriptionLimit answers a request that would take the client past
// its subscription limit.
func (c *wsClient) errSubscriptionLimit() error {
	return btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter,
		fmt.Sprintf("subscription limit reached: at most %d addresses and outpoints per client",
			c.s.cfg.MaxWebsocketSubscriptions))
}

// closeOverSubscribed disconnects a client that payments to its addresses
// would take past its subscription limit: without the outpoints they add
// it would miss their spends unknowingly.
func (c *wsClient) closeOverSubscribed() {
	log.Warnf("Disconnecting websocket client: over %d subscriptions", c.s.cfg.MaxWebsocketSubscriptions)
	c.close()
}

// newKeys counts the distinct keys that have is without.
func newKeys[K comparable](have map[K]struct{}, keys []K) int {
	fresh := make(map[K]struct{})
	for _, k := range keys {
		if _, ok := have[k]; !ok {
			fresh[k] = struct{}{}
		}
	}
	return len(fresh)
}

// active reports whether the client wants transaction notifications.
func (w *wsWatch) active() bool {
	return w.txs || len(w.received) > 0 || len(w.spent) > 0
}

func init() {
	for name, m := range map[string]wsMethod{
		"notifynewtransactions":     handleNotifyNewTransactions,
		"stopnotifynewtransactions": handleStopNotifyNewTransactions,
		"notifyreceived":            handleNotifyReceived,
		"stopnotifyreceived":        handleStopNotifyReceived,
		"notifyspent":               handleNotifySpent,
		"stopnotifyspent":           handleStopNotifySpent,
		"rescanblocks":              handleRescanBlocks,
		"session":                   handleSession,
	} {
		wsMethods[name] = m
	}
}

// handleNotifyNewTransactions answers notifynewtransactions.
func handleNotifyNewTransactions(c *wsClient, cmd interface{}) (interface{}, error) {
	nc := cmd.(*btcjson.NotifyNewTransactionsCmd)
	c.mu.Lock()
	c.watch.txs = true
	c.watch.txsVerbose = nc.Verbose != nil && *nc.Verbose
	c.mu.Unlock()
	return nil, nil
}

// handleStopNotifyNewTransactions answers stopnotifynewtransactions.
func handleStopNotifyNewTransactions(c *wsClient, _ interface{}) (interface{}, error) {
	c.mu.Lock()
	c.watch.txs = false
	c.mu.Unlock()
	return nil, nil
}

// decodeAddrs checks addresses for the client's network.
func decodeAddrs(c *wsClient, addrs []string) ([]string, error) {
	params := c.s.cfg.Params
	keys := make([]string, len(addrs))
	for i, s := range addrs {
		a, err := address.DecodeAddress(s, params)
		if err != nil || !a.IsForNet(params) {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey,
				fmt.Sprintf("Invalid address or key: %s", truncate(s)))
		}
		keys[i] = a.EncodeAddress()
	}
	return keys, nil
}

// decodeOutPoints checks outpoints.
func decodeOutPoints(ops []btcjson.OutPoint) ([]wire.OutPoint, error) {
	out := make([]wire.OutPoint, len(ops))
	for i, op := range ops {
		h, err := chainhash.NewHashFromStr(op.Hash)
		if err != nil {
			return nil, decodeHexError(op.Hash)
		}
		out[i] = wire.OutPoint{Hash: *h, Index: op.Index}
	}
	return out, nil
}

// handleNotifyReceived answers notifyreceived: recvtx for every transaction
// paying one of the addresses, whose paying outputs are then watched for
// spends as with notifyspent.
func handleNotifyReceived(c *wsClient, cmd interface{}) (interface{}, error) {
	keys, err := decodeAddrs(c, cmd.(*btcjson.NotifyReceivedCmd).Addresses)
	if err != nil {
		return nil, err
	}
	if !c.subscribe(keys, nil) {
		return nil, c.errSubscriptionLimit()
	}
	return nil, nil
}

// subscribe adds addresses (EncodeAddress keys) to those whose payments the
// client is told of and outpoints to those whose spends it is told of,
// all or, when they would take it past its subscription limit, none.
func (c *wsClient) subscribe(keys []string, ops []wire.OutPoint) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if newKeys(c.watch.received, keys)+newKeys(c.watch.spent, ops) > c.subscriptionRoom() {
		return false
	}
	if c.watch.received == nil && len(keys) > 0 {
		c.watch.received = make(map[string]struct{})
	}
	for _, k := range keys {
		c.watch.received[k] = struct{}{}
	}
	if c.watch.spent == nil && len(ops) > 0 {
		c.watch.spent = make(map[wire.OutPoint]struct{})
	}
	for _, op := range ops {
		c.watch.spent[op] = struct{}{}
	}
	return true
}

// handleStopNotifyReceived answers stopnotifyreceived.
func handleStopNotifyReceived(c *wsClient, cmd interface{}) (interface{}, error) {
	keys, err := decodeAddrs(c, cmd.(*btcjson.StopNotifyReceivedCmd).Addresses)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	for _, k := range keys {
		delete(c.watch.received, k)
	}
	c.mu.Unlock()
	return nil, nil
}

// handleNotifySpent answers notifyspent: redeemingtx for every transaction
// spending one of the outpoints.
func handleNotifySpent(c *wsClient, cmd interface{}) (interface{}, error) {
	ops, err := decodeOutPoints(cmd.(*btcjson.NotifySpentCmd).OutPoints)
	if err != nil {
		return nil, err
	}
	if !c.subscribe(nil, ops) {
		return nil, c.errSubscriptionLimit()
	}
	c.tellPoolSpends(ops)
	return nil, nil
}

// tellPoolSpends sends, as btcd does when it starts watching outpoints
// (notifyspent, a rescan reaching the tip), redeemingtx alone for each
// mempool transaction already spending one of ops.
func (c *wsClient) tellPoolSpends(ops []wire.OutPoint) {
	pool, err := c.s.pool()
	if err != nil {
		return
	}
	seen := make(map[chainhash.Hash]bool)
	for _, op := range ops {
		tx := pool.CheckSpend(op)
		if tx == nil || seen[*tx.Hash()] {
			continue
		}
		seen[*tx.Hash()] = true
		var buf bytes.Buffer
		if err := tx.MsgTx().Serialize(&buf); err == nil &&
			!c.queueNtfn(btcjson.NewRedeemingTxNtfn(hex.EncodeToString(buf.Bytes()), nil)) {
			return
		}
	}
}

// handleStopNotifySpent answers stopnotifyspent.
func handleStopNotifySpent(c *wsClient, cmd interface{}) (interface{}, error) {
	ops, err := decodeOutPoints(cmd.(*btcjson.StopNotifySpentCmd).OutPoints)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	for _, op := range ops {
		delete(c.watch.spent, op)
	}
	c.mu.Unlock()
	return nil, nil
}

// handleSession answers session with the connection's random id.
func handleSession(c *wsClient, _ interface{}) (interface{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch.session == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		c.watch.session = binary.LittleEndian.Uint64(b[:]) | 1
	}
	return btcjson.SessionResult{SessionID: c.watch.session}, nil
}

// maxRescanBlocks bounds the blocks of one rescanblocks request.
const maxRescanBlocks = 10000

// handleRescanBlocks answers rescanblocks: for each block (each the child
// of the one before), the transactions matching the client's loadtxfilter
// filter, which grows with the outputs paying its addresses, as btcd. The
// answer's bytes are counted as the matches are gathered: once past
// maxAnswerBytes it is errAnswerTooLarge.
func handleRescanBlocks(c *wsClient, cmd interface{}) (interface{}, error) {
	rc := cmd.(*btcjson.RescanBlocksCmd)
	if len(rc.BlockHashes) > maxRescanBlocks {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter,
			fmt.Sprintf("at most %d blocks per rescanblocks", maxRescanBlocks))
	}
	c.mu.Lock()
	loaded := c.filter != nil
	c.mu.Unlock()
	if !loaded {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCMisc, "Transaction filter must be loaded before rescanning")
	}
	out := make([]btcjson.RescannedBlock, 0, len(rc.BlockHashes))
	size := 0 // of the answer's blocks, as encoded
	var last *chainhash.Hash
	for _, hs := range rc.BlockHashes {
		hash, err := chainhash.NewHashFromStr(hs)
		if err != nil {
			return nil, decodeHexError(hs)
		}
		block, err := c.s.cfg.Chain.BlockByHash(hash)
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Failed to fetch block: "+err.Error())
		}
		if last != nil && block.MsgBlock().Header.PrevBlock != *last {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter,
				fmt.Sprintf("Block %v is not a child of %v", hash, last))
		}
		last = hash
		var txs []string
		c.mu.Lock()
		for _, tx := range block.Transactions() {
			matched, full := c.filter.matchAndUpdate(tx, c.s.cfg.Params, c.subscriptionRoom())
			if full {
				c.mu.Unlock()
				return nil, c.errSubscriptionLimit()
			}
			if matched {
				if h, err := txHex(tx.MsgTx()); err == nil {
					txs = append(txs, h)
					if size += len(h) + len(`"",`); size > maxAnswerBytes {
						c.mu.Unlock()
						return nil, errAnswerTooLarge
					}
				}
			}
		}
		c.mu.Unlock()
		if len(txs) > 0 {
			out = append(out, btcjson.RescannedBlock{Hash: hs, Transactions: txs})
			size += len(`{"hash":"","transactions":[]},`) + len(hs)
		}
	}
	return &out, nil
}

// NotifyTxsAccepted queues the notifications of transactions accepted into
// the mempool: txaccepted or txacceptedverbose, recvtx and redeemingtx,
// relevanttxaccepted. It never blocks.
func (s *Server) NotifyTxsAccepted(txs []*btcutil.Tx) {
	s.gbt.mempoolChanged()
	if len(txs) > 0 {
		s.ntfn.enqueue(blockEvent{txs: txs})
	}
}

// sendTxEvent sends the mempool notifications of accepted transactions.
func (s *Server) sendTxEvent(txs []*btcutil.Tx) {
	for _, c := range s.wsClients() {
		for _, tx := range txs {
			s.notifyTx(c, tx, nil, 0)
		}
	}
}

// wsClients returns every websocket client.
func (s *Server) wsClients() []*wsClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*wsClient, 0, len(s.ws))
	for c := range s.ws {
		out = append(out, c)
	}
	return out
}

// notifyTx queues a client's notifications of one transaction, accepted
// into the mempool (block nil) or connected in block at height.
func (s *Server) notifyTx(c *wsClient, tx *btcutil.Tx, block *btcutil.Block, height int32) {
	params := s.cfg.Params
	var msgs [][]byte
	marshal := func(ntfn interface{}) {
		b, err := btcjson.MarshalCmd(btcjson.RpcVersion1, nil, ntfn)
		if err != nil {
			log.Errorf("Marshal notification: %v", err)
			return
		}
		msgs = append(msgs, b)
	}
	hexOf := func() string {
		h, _ := txHex(tx.MsgTx())
		return h
	}
	var details *btcjson.BlockDetails
	if block != nil {
		details = &btcjson.BlockDetails{Height: height, Hash: block.Hash().String(),
			Index: tx.Index(), Time: block.MsgBlock().Header.Timestamp.Unix()}
	}

	c.mu.Lock()
	if block == nil && c.watch.txs {
		if c.watch.txsVerbose {
			if r, err := txRawResult(params, tx.MsgTx(), nil); err == nil {
				marshal(btcjson.NewTxAcceptedVerboseNtfn(*r))
			}
		} else {
			var amount int64
			for _, out := range tx.MsgTx().TxOut {
				amount += out.Value
			}
			marshal(btcjson.NewTxAcceptedNtfn(tx.Hash().String(), btcutil.Amount(amount).ToBTC()))
		}
	}
	if len(c.watch.spent) > 0 {
		// As btcd: one redeemingtx for the transaction, and a block
		// releases every watched output it spends.
		redeems := false
		for _, in := range tx.MsgTx().TxIn {
			if _, ok := c.watch.spent[in.PreviousOutPoint]; ok {
				if block != nil {
					delete(c.watch.spent, in.PreviousOutPoint)
				}
				redeems = true
			}
		}
		if redeems {
			marshal(btcjson.NewRedeemingTxNtfn(hexOf(), details))
		}
	}
	full := false
	var watched []wire.OutPoint // a block's outputs now watched
	if len(c.watch.received) > 0 {
		paid := false
		for i, out := range tx.MsgTx().TxOut {
			_, addrs, _, err := txscript.ExtractPkScriptAddrs(out.PkScript, params)
			if err != nil {
				continue
			}
			for _, a := range addrs {
				if _, ok := c.watch.received[a.EncodeAddress()]; !ok {
					continue
				}
				paid = true
				op := wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)}
				if _, ok := c.watch.spent[op]; ok {
					continue
				}
				if c.subscriptionRoom() <= 0 {
					full = true
					continue
				}
				if c.watch.spent == nil {
					c.watch.spent = make(map[wire.OutPoint]struct{})
				}
				c.watch.spent[op] = struct{}{}
				if block != nil {
					watched = append(watched, op)
				}
			}
		}
		if paid {
			marshal(btcjson.NewRecvTxNtfn(hexOf(), details))
		}
	}
	if block == nil && c.filter != nil {
		matched, over := c.filter.matchAndUpdate(tx, params, c.subscriptionRoom())
		full = full || over
		if matched {
			marshal(btcjson.NewRelevantTxAcceptedNtfn(hexOf()))
		}
	}
	c.mu.Unlock()
	if full {
		c.closeOverSubscribed()
		return
	}
	for _, m := range msgs {
		if !c.queue(m) {
			return
		}
	}
	// As btcd: a confirmed output that starts being watched is told of a
	// pool transaction already spending it (a pool spend of an output
	// paid in the mempool was told when it came).
	c.tellPoolSpends(watched)
}

// hasTxClients reports whether any websocket client wants transaction
// notifications (or has a loadtxfilter filter, which gets
// relevanttxaccepted).
func (s *Server) hasTxClients() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.ws {
		c.mu.Lock()
		want := c.watch.active() || c.filter != nil
		c.mu.Unlock()
		if want {
			return true
		}
	}
	return false
}

// sendBlockTxs sends recvtx and redeemingtx for a connected block's
// transactions to the clients of notifyreceived and notifyspent.
func (s *Server) sendBlockTxs(block *btcutil.Block) {
	height := s.blockWithHeight(block)
	for _, c := range s.wsClients() {
		c.mu.Lock()
		watching := len(c.watch.received) > 0 || len(c.watch.spent) > 0
		c.mu.Unlock()
		if !watching {
			continue
		}
		for _, tx := range block.Transactions() {
			s.notifyTx(c, tx, block, height)
		}
	}
}

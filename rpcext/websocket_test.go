package rpcext

import (
	"bytes"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/gorilla/websocket"
)

// filtered is one filteredblockconnected/disconnected notification.
type filtered struct {
	height int32
	header *wire.BlockHeader
	txs    []*btcutil.Tx
}

// plain is one blockconnected/disconnected notification.
type plain struct {
	hash   chainhash.Hash
	height int32
}

// notifications collects what rpcclient's handlers receive.
type notifications struct {
	connected, disconnected         chan filtered
	plainConnected, plainDisconnect chan plain
}

// newNotifications returns collectors and the handlers feeding them.
func newNotifications() (*notifications, *rpcclient.NotificationHandlers) {
	n := &notifications{
		connected:       make(chan filtered, 1000),
		disconnected:    make(chan filtered, 1000),
		plainConnected:  make(chan plain, 1000),
		plainDisconnect: make(chan plain, 1000),
	}
	return n, &rpcclient.NotificationHandlers{
		OnFilteredBlockConnected: func(height int32, header *wire.BlockHeader, txs []*btcutil.Tx) {
			n.connected <- filtered{height, header, txs}
		},
		OnFilteredBlockDisconnected: func(height int32, header *wire.BlockHeader) {
			n.disconnected <- filtered{height: height, header: header}
		},
		OnBlockConnected: func(hash *chainhash.Hash, height int32, _ time.Time) {
			n.plainConnected <- plain{*hash, height}
		},
		OnBlockDisconnected: func(hash *chainhash.Hash, height int32, _ time.Time) {
			n.plainDisconnect <- plain{*hash, height}
		},
	}
}

// receive waits for the next value on ch; the timeout only turns a
// missing notification into a failure instead of a hang.
func receive[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s notification", what)
		panic("unreachable")
	}
}

// expectConnected checks the next filtered and plain notifications for
// the block hash at height carry exactly the wanted transactions.
func expectConnected(t *testing.T, n *notifications, hash *chainhash.Hash, height int32, want ...chainhash.Hash) {
	t.Helper()
	f := receive(t, n.connected, "filteredblockconnected")
	if f.height != height || f.header.BlockHash() != *hash {
		t.Fatalf("filteredblockconnected %d %v, want %d %v", f.height, f.header.BlockHash(), height, hash)
	}
	if len(f.txs) != len(want) {
		t.Fatalf("block %d: %d filtered txs, want %d", height, len(f.txs), len(want))
	}
	for i, tx := range f.txs {
		if *tx.Hash() != want[i] {
			t.Fatalf("block %d tx %d: %v, want %v", height, i, tx.Hash(), want[i])
		}
	}
	p := receive(t, n.plainConnected, "blockconnected")
	if p.hash != *hash || p.height != height {
		t.Fatalf("blockconnected %v %d, want %v %d", p.hash, p.height, hash, height)
	}
}

// TestWebsocketFilteredNotifications runs the flow rpctest's memwallet
// depends on: loadtxfilter with an address, notifyblocks, and
// filteredblockconnected notifications carrying the transactions that pay
// the address or spend outputs that paid it.
func TestWebsocketFilteredNotifications(t *testing.T) {
	node := matureNode(t)
	ts := startServer(t, node, nil)
	watched, watchedKey := newAddress(t, node)
	other, _ := newAddress(t, node)

	notes, handlers := newNotifications()
	c := ts.wsClient(t, handlers)
	if err := c.LoadTxFilter(true, []address.Address{watched}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.NotifyBlocks(); err != nil {
		t.Fatal(err)
	}
	// An unfiltered client registered for blocks gets empty tx lists.
	bare, bareHandlers := newNotifications()
	c2 := ts.wsClient(t, bareHandlers)
	if err := c2.NotifyBlocks(); err != nil {
		t.Fatal(err)
	}

	// Request methods work over the websocket.
	start, err := c.GetBlockCount()
	if err != nil || start != int64(node.chain.BestSnapshot().Height) {
		t.Fatalf("getblockcount over ws: %d %v", start, err)
	}
	height := int32(start)

	// Coinbases paying the watched address are delivered.
	hashes, err := c.GenerateToAddress(2, watched, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hashes {
		blk, _ := node.chain.BlockByHash(h)
		expectConnected(t, notes, h, height+int32(i)+1, *blk.Transactions()[0].Hash())
		expectConnected(t, bare, h, height+int32(i)+1)
	}
	height += 2

	// A block paying someone else carries no transactions for the filter.
	hashes, err = c.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	height++
	expectConnected(t, notes, hashes[0], height)
	expectConnected(t, bare, hashes[0], height)

	// A payment to the watched address is delivered (output match)...
	pay := spendCoinbase(t, node, 1, watched)
	if _, err := c.SendRawTransaction(pay, false); err != nil {
		t.Fatal(err)
	}
	hashes, err = c.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	height++
	expectConnected(t, notes, hashes[0], height, pay.TxHash())
	expectConnected(t, bare, hashes[0], height)

	// ...and so is its spend to an unwatched address (outpoint match).
	script, _ := txscript.PayToAddrScript(watched)
	spendTx := spend(t, wire.OutPoint{Hash: pay.TxHash(), Index: 0}, script, pay.TxOut[0].Value, watchedKey, other)
	if _, err := c.SendRawTransaction(spendTx, false); err != nil {
		t.Fatal(err)
	}
	hashes, err = c.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	height++
	expectConnected(t, notes, hashes[0], height, spendTx.TxHash())
	expectConnected(t, bare, hashes[0], height)

	// Invalidating the tip sends the disconnected notifications.
	tip := *hashes[0]
	if err := c.InvalidateBlock(&tip); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*notifications{notes, bare} {
		d := receive(t, n.disconnected, "filteredblockdisconnected")
		if d.height != height || d.header.BlockHash() != tip {
			t.Fatalf("filteredblockdisconnected %d %v, want %d %v", d.height, d.header.BlockHash(), height, tip)
		}
		p := receive(t, n.plainDisconnect, "blockdisconnected")
		if p.hash != tip || p.height != height {
			t.Fatalf("blockdisconnected %v %d", p.hash, p.height)
		}
	}
	// Reconsidering reconnects it, with the same filtered transaction.
	if err := c.ReconsiderBlock(&tip); err != nil {
		t.Fatal(err)
	}
	expectConnected(t, notes, &tip, height, spendTx.TxHash())
}

func TestWebsocketFilterErrors(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	c := ts.wsClient(t, nil)

	mainnet, err := address.NewAddressPubKeyHash(make([]byte, 20), &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	// As btcd: an address of another network is skipped, not refused.
	if err := c.LoadTxFilter(false, []address.Address{mainnet}, nil); err != nil {
		t.Fatalf("mainnet address on regtest: %v", err)
	}
	raw, err := c.RawRequest("loadtxfilter", []json.RawMessage{
		json.RawMessage(`false`), json.RawMessage(`[]`), json.RawMessage(`[{"hash":"zz","index":0}]`)})
	if rpcCode(t, err) != btcjson.ErrRPCInvalidParameter {
		t.Fatalf("bad outpoint: %s %v", raw, err)
	}
	if _, err := c.RawRequest("loadtxfilter", []json.RawMessage{json.RawMessage(`"yes"`)}); rpcCode(t, err) != btcjson.ErrRPCInvalidParams.Code {
		t.Fatalf("wrong types: %v", err)
	}
}

// TestSlowWebsocketReaderIsDisconnected pins the bound on what may wait for
// a client that does not read: past it the client is dropped, not the
// server's memory.
func TestSlowWebsocketReaderIsDisconnected(t *testing.T) {
	c := &wsClient{s: &Server{}, signal: make(chan struct{}, 1), quit: make(chan struct{})}
	msg := []byte(`{"method":"blockconnected","params":[],"id":null}`)
	for i := 0; i < wsMaxQueuedMessages; i++ {
		if !c.queue(msg) {
			t.Fatalf("queue refused message %d", i)
		}
	}
	if c.queue(msg) {
		t.Fatal("queue accepted a message past the limit")
	}
	select {
	case <-c.quit:
	default:
		t.Fatal("client not closed past the limit")
	}
	if c.queue(msg) {
		t.Fatal("closed client accepted a message")
	}
}

// TestNotificationHeightFromChain covers blocks handed over without a
// height: the server finds it from the chain.
func TestNotificationHeightFromChain(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	notes, handlers := newNotifications()
	c := ts.wsClient(t, handlers)
	if err := c.NotifyBlocks(); err != nil {
		t.Fatal(err)
	}
	// Detach the test node so only the blocks below are notified.
	node.mu.Lock()
	node.server = nil
	node.mu.Unlock()
	hashes, err := node.Generate(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hashes {
		blk, _ := node.chain.BlockByHash(h)
		ts.srv.NotifyBlockConnected(btcutil.NewBlock(blk.MsgBlock()))
		expectConnected(t, notes, h, int32(i)+1)
	}
	tip, _ := node.chain.BlockByHash(hashes[1])
	if err := node.chain.InvalidateBlock(hashes[1]); err != nil {
		t.Fatal(err)
	}
	ts.srv.NotifyBlockDisconnected(btcutil.NewBlock(tip.MsgBlock()))
	d := receive(t, notes.disconnected, "filteredblockdisconnected")
	if d.height != 2 || d.header.BlockHash() != *hashes[1] {
		t.Fatalf("disconnected %d %v", d.height, d.header.BlockHash())
	}
}

// TestWebsocketSubscriptionLimitCountsEverything: notifyreceived addresses,
// notifyspent outpoints and loadtxfilter entries count against one limit, a
// request past it is refused as a whole with -8, and a client that payments
// to its addresses would take past it is disconnected.
func TestWebsocketSubscriptionLimitCountsEverything(t *testing.T) {
	t.Parallel()
	const limit = 5
	node := newTestNode(t)
	ts := startServer(t, node, func(c *Config) { c.MaxWebsocketSubscriptions = limit })
	miner := ts.httpClient(t, testUser, testPass)
	seen := map[*wsClient]bool{}
	// open connects a client and finds it in the server.
	open := func() (*websocket.Conn, *wsClient) {
		conn, _, err := wsDial(t, ts, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		ts.srv.mu.Lock()
		defer ts.srv.mu.Unlock()
		for c := range ts.srv.ws {
			if !seen[c] {
				seen[c] = true
				return conn, c
			}
		}
		t.Fatal("the client is not in the server")
		return nil, nil
	}
	held := func(c *wsClient) int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return limit - c.subscriptionRoom()
	}
	id := 0
	// call answers a request's error code, 0 for none, skipping
	// notifications.
	call := func(conn *websocket.Conn, method string, params ...interface{}) int {
		t.Helper()
		id++
		body, _ := json.Marshal(map[string]interface{}{"jsonrpc": "1.0", "id": id, "method": method, "params": params})
		conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard
		if err := conn.WriteMessage(websocket.TextMessage, body); err != nil {
			t.Fatal(err)
		}
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			var reply struct {
				ID    *int
				Error *btcjson.RPCError
			}
			if json.Unmarshal(msg, &reply) != nil || reply.ID == nil || *reply.ID != id {
				continue
			}
			if reply.Error == nil {
				return 0
			}
			return int(reply.Error.Code)
		}
	}
	// payUntilFull mines blocks paying payee, each adding an outpoint to
	// the client's subscriptions, and checks that the client is
	// disconnected at the block that would take it past the limit.
	payUntilFull := func(conn *websocket.Conn, c *wsClient, payee string) {
		t.Helper()
		a, err := address.DecodeAddress(payee, node.params)
		if err != nil {
			t.Fatal(err)
		}
		for n := held(c); n <= limit; n++ {
			if _, err := miner.GenerateToAddress(1, a, nil); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard
			for {
				_, msg, err := conn.ReadMessage()
				if n == limit && err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						t.Fatal("the client is still connected past its subscription limit")
					}
					if h := held(c); h != limit {
						t.Fatalf("disconnected holding %d subscriptions, want %d", h, limit)
					}
					return
				}
				if err != nil {
					t.Fatalf("disconnected holding %d subscriptions, limit %d: %v", held(c), limit, err)
				}
				if bytes.Contains(msg, []byte(`"filteredblockconnected"`)) {
					break
				}
			}
			if h := held(c); h != n+1 {
				t.Fatalf("%d subscriptions held after a payment, want %d", h, n+1)
			}
		}
		t.Fatal("the client is still connected past its subscription limit")
	}

	addrs := make([]string, 4)
	for i := range addrs {
		a, _ := newAddress(t, node)
		addrs[i] = a.EncodeAddress()
	}
	outpoint := func(i uint32) btcjson.OutPoint {
		return btcjson.OutPoint{Hash: chainhash.Hash{1}.String(), Index: i}
	}
	refused := int(btcjson.ErrRPCInvalidParameter)
	conn, c := open()
	for i, step := range []struct {
		method string
		params []interface{}
		code   int
		held   int
	}{
		{"notifyreceived", []interface{}{addrs[:2]}, 0, 2},
		{"notifyspent", []interface{}{[]btcjson.OutPoint{outpoint(0)}}, 0, 3},
		// Three would be six: none is added.
		{"loadtxfilter", []interface{}{false, addrs[2:4], []btcjson.OutPoint{outpoint(1)}}, refused, 3},
		{"notifyreceived", []interface{}{addrs[:2]}, 0, 3}, // held already
		{"loadtxfilter", []interface{}{false, addrs[2:3], []btcjson.OutPoint{}}, 0, 4},
		{"notifyspent", []interface{}{[]btcjson.OutPoint{outpoint(1), outpoint(2)}}, refused, 4},
		// A reload replaces the filter's entries rather than adding.
		{"loadtxfilter", []interface{}{true, addrs[3:4], []btcjson.OutPoint{}}, 0, 4},
		{"stopnotifyreceived", []interface{}{addrs[1:2]}, 0, 3},
		{"notifyblocks", nil, 0, 3},
	} {
		if code := call(conn, step.method, step.params...); code != step.code {
			t.Fatalf("step %d, %s: code %d, want %d", i, step.method, code, step.code)
		}
		if n := held(c); n != step.held {
			t.Fatalf("step %d, %s: %d subscriptions held, want %d", i, step.method, n, step.held)
		}
	}
	// The outputs paying a notifyreceived address count.
	payUntilFull(conn, c, addrs[0])

	// So do those paying a filter's address.
	conn, c = open()
	for _, step := range []struct {
		method string
		params []interface{}
	}{
		{"loadtxfilter", []interface{}{true, addrs[3:4], []btcjson.OutPoint{}}},
		{"notifyblocks", nil},
	} {
		if code := call(conn, step.method, step.params...); code != 0 {
			t.Fatalf("%s: code %d", step.method, code)
		}
	}
	payUntilFull(conn, c, addrs[3])

	// A rescan through the tip keeps its keys: refused before it scans
	// when they are too many; one up to a block keeps none.
	conn, _ = open()
	keys := []btcjson.OutPoint{outpoint(0), outpoint(1)}
	genesis := node.params.GenesisHash.String()
	if code := call(conn, "rescan", genesis, addrs, keys); code != refused {
		t.Fatalf("rescan through the tip of %d keys: code %d, want %d", len(addrs)+len(keys), code, refused)
	}
	tip, err := miner.GetBestBlockHash()
	if err != nil {
		t.Fatal(err)
	}
	if code := call(conn, "rescan", genesis, addrs, keys, tip.String()); code != 0 {
		t.Fatalf("rescan up to a block: code %d", code)
	}
}

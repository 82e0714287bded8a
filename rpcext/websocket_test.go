package rpcext

import (
	"encoding/json"
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

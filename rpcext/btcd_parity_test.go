package rpcext

// Review tests: each pins a behaviour of btcd v0.26.2's rpcserver.go or
// rpcwebsocket.go that this server does not match (or an unbounded cost
// btcd does not have). They are expected to FAIL against the current
// server; the btcd file:line each one follows is in its comment.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/gorilla/websocket"
)

// reviewBody runs one request body through the server as an HTTP request
// of the full user and decodes the single reply.
func reviewBody(t *testing.T, s *Server, body string) reply {
	t.Helper()
	out := s.processBody([]byte(body), nil)
	var r reply
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("reply %q to %s: %v", out, body, err)
	}
	return r
}

// reviewWait waits up to d for a value on ch.
func reviewWait[T any](ch chan T, d time.Duration) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	case <-time.After(d):
		var zero T
		return zero, false
	}
}

// reviewWSDial opens a raw websocket to ts with basic auth user:pass.
func reviewWSDial(t *testing.T, ts *testServer, user, pass string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: ts.tlsConfig(t)}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, pass)
	conn, _, err := d.Dial("wss://"+ts.addr+"/ws", http.Header{"Authorization": req.Header["Authorization"]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// reviewWSCall sends one request on a raw websocket and returns the reply
// with its id (notifications are skipped).
func reviewWSCall(t *testing.T, conn *websocket.Conn, body string) reply {
	t.Helper()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("reading the reply to %s: %v", body, err)
		}
		var r reply
		if err := json.Unmarshal(msg, &r); err != nil {
			t.Fatalf("reply %q: %v", msg, err)
		}
		if string(r.ID) == "1" {
			return r
		}
	}
}

// 1. btcd answers btcjson-registered wallet commands with ErrRPCNoWallet
// and its "rpcUnimplemented" commands with ErrRPCUnimplemented (both -1),
// rpcserver.go:195-247 (rpcAskWallet, rpcUnimplemented), :4216-4235 (standardCmdResult), :365-374.
// The server answers -32601 "Method not found" for both.
func TestWalletAndUnimplementedMethodsAnswerAsBtcd(t *testing.T) {
	s := newOfflineServer(t, newTestNode(t))
	for _, c := range []struct{ method, msg string }{
		{"getbalance", "This implementation does not implement wallet commands"},
		{"listunspent", "This implementation does not implement wallet commands"},
		{"getnetworkinfo", "Command unimplemented"},
		{"getmempoolentry", "Command unimplemented"},
	} {
		params := "[]"
		if c.method == "getmempoolentry" {
			params = `["` + strings.Repeat("0", 64) + `"]`
		}
		r := reviewBody(t, s, `{"jsonrpc":"1.0","method":"`+c.method+`","params":`+params+`,"id":1}`)
		if r.Error == nil || r.Error.Code != btcjson.ErrRPCNoWallet || r.Error.Message != c.msg {
			t.Errorf("%s: got %+v, want btcd's {%d %q}", c.method, r.Error, btcjson.ErrRPCNoWallet, c.msg)
		}
	}
}

// 2. btcd's getinfo reports protocolversion maxProtocolVersion = 70002
// (rpcserver.go:77, :2374); the server reports peer.MaxProtocolVersion
// (70016).
func TestGetInfoProtocolVersion(t *testing.T) {
	s := newOfflineServer(t, newTestNode(t))
	r := reviewBody(t, s, `{"jsonrpc":"1.0","method":"getinfo","params":[],"id":1}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var info btcjson.InfoChainResult
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	if info.ProtocolVersion != 70002 {
		t.Fatalf("getinfo protocolversion %d, btcd v0.26.2 reports 70002", info.ProtocolVersion)
	}
}

// 3. btcd's getblock reads the block from the database, so a block off the
// main chain (here: invalidated) is served at verbosity 0
// (rpcserver.go:1084-1100). The server asks Chain.BlockByHash, which only
// knows main-chain blocks, and answers -5 "Block not found".
func TestGetBlockOffMainChainHex(t *testing.T) {
	node := newTestNode(t)
	hashes, err := node.Generate(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := node.chain.BlockByHash(hashes[1])
	if err != nil {
		t.Fatal(err)
	}
	want, err := txHexBlock(block)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.chain.InvalidateBlock(hashes[1]); err != nil {
		t.Fatal(err)
	}
	s := newOfflineServer(t, node)
	r := reviewBody(t, s, fmt.Sprintf(`{"jsonrpc":"1.0","method":"getblock","params":["%s",0],"id":1}`, hashes[1]))
	if r.Error != nil {
		t.Fatalf("getblock of an invalidated block: %+v, btcd answers its hex", r.Error)
	}
	var got string
	if err := json.Unmarshal(r.Result, &got); err != nil || got != want {
		t.Fatalf("getblock hex %q (%v)", got, err)
	}
}

// txHexBlock serializes a block to hex.
func txHexBlock(b *btcutil.Block) (string, error) {
	raw, err := b.Bytes()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", raw), nil
}

// 4. btcd's getblock answers any verbosity other than 0 and 1 with the
// decoded transactions (rpcserver.go:1117, :1165-1186: "if *c.Verbosity ==
// 1 {...} else {rawtx}"). The server refuses verbosity outside 0..2 with
// -8 (chain.go:138).
func TestGetBlockVerbosityAboveTwo(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	s := newOfflineServer(t, node)
	tip := node.chain.BestSnapshot().Hash
	for _, v := range []int{3, -1} {
		r := reviewBody(t, s, fmt.Sprintf(`{"jsonrpc":"1.0","method":"getblock","params":["%s",%d],"id":1}`, tip, v))
		if r.Error != nil {
			t.Errorf("getblock verbosity %d: %+v, btcd answers with the decoded transactions", v, r.Error)
			continue
		}
		var res btcjson.GetBlockVerboseResult
		if err := json.Unmarshal(r.Result, &res); err != nil || len(res.RawTx) != 1 {
			t.Errorf("getblock verbosity %d: %s", v, r.Result)
		}
	}
}

// 5. btcd's loadtxfilter skips addresses that do not decode
// (rpcwebsocket.go:331-341 addAddressStr, :2048-2067) and answers null.
// The server answers -5 (notify.go:291-300).
func TestLoadTxFilterIgnoresUndecodableAddresses(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	c := ts.wsClient(t, nil)
	good, _ := newAddress(t, node)
	_, err := c.RawRequest("loadtxfilter", []json.RawMessage{json.RawMessage(`false`),
		json.RawMessage(`["not-an-address","` + good.EncodeAddress() + `"]`), json.RawMessage(`[]`)})
	if err != nil {
		t.Fatalf("loadtxfilter with an undecodable address: %v; btcd ignores it and answers null", err)
	}
	// btcd takes an outpoint hash of fewer than 64 hex digits as
	// chainhash.NewHashFromStr does (rpcwebsocket.go:2030-2037); the
	// server wants exactly 64 (notify.go:306).
	_, err = c.RawRequest("loadtxfilter", []json.RawMessage{json.RawMessage(`false`),
		json.RawMessage(`[]`), json.RawMessage(`[{"hash":"ab","index":0}]`)})
	if err != nil {
		t.Fatalf("loadtxfilter with a short outpoint hash: %v; btcd accepts it", err)
	}
}

// 6. btcd's rescan does not decode the addresses; it looks them up as
// given (rpcwebsocket.go:2794-2796) and so scans on with one that does not
// decode. The server fails the rescan with -5 (rescan.go:45-50).
func TestRescanIgnoresUndecodableAddresses(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(2, nil); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	finished := make(chan struct{}, 1)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRescanFinished: func(*chainhash.Hash, int32, time.Time) { finished <- struct{}{} },
	})
	_, err := c.RawRequest("rescan", []json.RawMessage{
		json.RawMessage(`"` + node.params.GenesisHash.String() + `"`),
		json.RawMessage(`["not-an-address","` + node.minerTo.EncodeAddress() + `"]`),
		json.RawMessage(`[]`)})
	if err != nil {
		t.Fatalf("rescan with an undecodable address: %v; btcd scans on", err)
	}
	if _, ok := reviewWait(finished, 5*time.Second); !ok {
		t.Fatal("no rescanfinished")
	}
}

// 7. btcd's rescan scans [beginblock, endblock): chain.HeightRange is
// exclusive of its end (rpcwebsocket.go:2596, blockchain/chain.go:1610-1655
// HeightRange), so the end block is not scanned and rescanfinished names
// the block before it. The server scans the end block too (rescan.go:81).
func TestRescanEndBlockIsExclusive(t *testing.T) {
	node := newTestNode(t)
	watched, _ := newAddress(t, node)
	hashes, err := node.Generate(3, watched)
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	var mu sync.Mutex
	var recvs []string
	finished := make(chan chainhash.Hash, 1)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRecvTx: func(_ *btcutil.Tx, d *btcjson.BlockDetails) {
			mu.Lock()
			defer mu.Unlock()
			if d != nil {
				recvs = append(recvs, d.Hash)
			}
		},
		OnRescanFinished: func(h *chainhash.Hash, _ int32, _ time.Time) { finished <- *h },
	})
	if err := c.RescanEndHeight(hashes[0], []address.Address{watched}, nil, hashes[2]); err != nil {
		t.Fatal(err)
	}
	last, ok := reviewWait(finished, 5*time.Second)
	if !ok {
		t.Fatal("no rescanfinished")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(recvs) != 2 || last != *hashes[1] {
		t.Fatalf("rescan %v..%v: recvtx in %v, rescanfinished %v; btcd scans blocks 1-2 and finishes at %v",
			hashes[0], hashes[2], recvs, last, hashes[1])
	}
}

// 8. After a rescan through the tip, btcd registers the client for the
// rescanned addresses and the unspent outpoints found
// (rpcwebsocket.go:2618-2633), so later payments send recvtx. The server
// does not (rescan.go), so nothing arrives.
func TestRescanRegistersAddressesAfterwards(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	watched, _ := newAddress(t, node)
	ts := startServer(t, node, nil)
	recvs := make(chan *btcjson.BlockDetails, 10)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRecvTx: func(_ *btcutil.Tx, d *btcjson.BlockDetails) { recvs <- d },
	})
	if err := c.Rescan(node.params.GenesisHash, []address.Address{watched}, nil); err != nil {
		t.Fatal(err)
	}
	hashes, err := node.Generate(1, watched)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := reviewWait(recvs, 5*time.Second)
	if !ok {
		t.Fatal("no recvtx for a block paying an address rescanned to the tip; btcd registers it")
	}
	if d == nil || d.Hash != hashes[0].String() {
		t.Fatalf("recvtx details %+v", d)
	}
}

// 9. btcd's notifyspent looks for a mempool transaction already spending
// the outpoints and sends redeemingtx at once (rpcwebsocket.go:859-877).
// The server only watches future transactions (wsnotify.go:133-148).
func TestNotifySpentReportsExistingMempoolSpend(t *testing.T) {
	node := matureNode(t)
	to, _ := newAddress(t, node)
	spendTx := spendCoinbase(t, node, 1, to)
	if _, err := node.ProcessTx(btcutil.NewTx(spendTx)); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	redeems := make(chan chainhash.Hash, 10)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRedeemingTx: func(tx *btcutil.Tx, _ *btcjson.BlockDetails) { redeems <- *tx.Hash() },
	})
	op := spendTx.TxIn[0].PreviousOutPoint
	if err := c.NotifySpent([]*wire.OutPoint{&op}); err != nil {
		t.Fatal(err)
	}
	h, ok := reviewWait(redeems, 5*time.Second)
	if !ok {
		t.Fatal("no redeemingtx for the mempool spend of a newly watched outpoint; btcd sends it at once")
	}
	if h != spendTx.TxHash() {
		t.Fatalf("redeemingtx %v, want %v", h, spendTx.TxHash())
	}
}

// 10. For a connected block btcd queues recvtx/redeemingtx of its
// transactions before blockconnected and filteredblockconnected
// (rpcwebsocket.go:464-480). The server sends blockconnected first and the
// transaction notifications after (notify.go:104-106).
func TestBlockTxNotificationsPrecedeBlockConnected(t *testing.T) {
	node := newTestNode(t)
	watched, _ := newAddress(t, node)
	ts := startServer(t, node, nil)
	events := make(chan string, 10)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRecvTx:         func(*btcutil.Tx, *btcjson.BlockDetails) { events <- "recvtx" },
		OnBlockConnected: func(*chainhash.Hash, int32, time.Time) { events <- "blockconnected" },
	})
	if err := c.NotifyBlocks(); err != nil {
		t.Fatal(err)
	}
	if err := c.NotifyReceived([]address.Address{watched}); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Generate(1, watched); err != nil {
		t.Fatal(err)
	}
	first, ok := reviewWait(events, 5*time.Second)
	if !ok {
		t.Fatal("no notification")
	}
	if first != "recvtx" {
		t.Fatalf("first notification %s; btcd sends the block's recvtx before blockconnected", first)
	}
}

// slowChain is the test chain with BlockByHash slowed down and counted, so
// that a rescan takes long enough to watch.
type slowChain struct {
	*blockchain.BlockChain
	calls atomic.Int64
}

// BlockByHash implements Chain.
func (c *slowChain) BlockByHash(h *chainhash.Hash) (*btcutil.Block, error) {
	c.calls.Add(1)
	time.Sleep(20 * time.Millisecond)
	return c.BlockChain.BlockByHash(h)
}

// 11. btcd's rescan stops once its client disconnects: the client's reader
// goroutine sees the close and closes wsc.quit, which the scan checks each
// block (rpcwebsocket.go:1273-1282, :2711). The server runs the rescan
// on the reader goroutine itself, so nothing notices the disconnect: the
// scan goes on to the tip (and keeps the websocket slot), a cost a limited
// user can start any number of times by reconnecting.
func TestRescanStopsWhenClientDisconnects(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(150, nil); err != nil {
		t.Fatal(err)
	}
	chain := &slowChain{BlockChain: node.chain}
	ts := startServer(t, node, func(c *Config) { c.Chain = chain })
	watched, _ := newAddress(t, node)
	conn := reviewWSDial(t, ts, testUser, testPass)
	req := fmt.Sprintf(`{"jsonrpc":"1.0","method":"rescan","params":["%s",["%s"],[]],"id":1}`,
		node.params.GenesisHash, watched.EncodeAddress())
	if err := conn.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	conn.Close()
	time.Sleep(500 * time.Millisecond)
	before := chain.calls.Load()
	time.Sleep(time.Second)
	after := chain.calls.Load()
	if after != before {
		t.Fatalf("rescan read %d more blocks in the second after its client left (btcd stops at the next block)",
			after-before)
	}
}

// gbtNode is the test node with a minimal block template generator, for
// getblocktemplate.
type gbtNode struct{ *testNode }

// NewBlockTemplate implements TemplateBackend with an empty block on the
// tip.
func (n gbtNode) NewBlockTemplate(address.Address) (*mining.BlockTemplate, error) {
	tip, err := n.tipBlock()
	if err != nil {
		return nil, err
	}
	b, err := rpctest.CreateBlock(tip, nil, 4, time.Now().Truncate(time.Second), n.minerTo, nil, n.params)
	if err != nil {
		return nil, err
	}
	return &mining.BlockTemplate{Block: b.MsgBlock(), Fees: []int64{0}, SigOpCosts: []int64{0},
		Height: tip.Height() + 1, ValidPayAddress: true}, nil
}

func (gbtNode) UpdateBlockTime(*wire.MsgBlock) error           { return nil }
func (n gbtNode) MiningAddress() address.Address               { return n.minerTo }
func (gbtNode) MempoolLastUpdated() time.Time                  { return time.Unix(1, 0) }
func (gbtNode) IsCurrent() bool                                { return true }
func (gbtNode) AdjustedTime() time.Time                        { return time.Now() }
func (gbtNode) CheckConnectBlockTemplate(*btcutil.Block) error { return nil }

// 12. btcd's getblocktemplate long poll returns when its HTTP client goes
// away (closeChan, rpcserver.go:4394-4400 and :1913-1920), releasing its
// place among --rpcmaxclients. The server's long poll waits only for a new
// template or shutdown (gbt.go:226-236), so a client that gave up keeps its
// slot: with MaxClients of them the server answers every request 503 until
// the next block.
func TestLongPollReleasedWhenClientLeaves(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, func(c *Config) {
		c.Backend = gbtNode{node}
		c.MaxClients = 1
	})
	r := ts.call(t, `{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"]}],"id":1}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var tmpl btcjson.GetBlockTemplateResult
	if err := json.Unmarshal(r.Result, &tmpl); err != nil || tmpl.LongPollID == "" {
		t.Fatalf("template %s %v", r.Result, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"],"longpollid":"` +
		tmpl.LongPollID + `"}],"id":1}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.baseURL()+"/", strings.NewReader(body))
	req.SetBasicAuth(testUser, testPass)
	done := make(chan struct{})
	go func() {
		defer close(done)
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ts.tlsConfig(t)}}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(500 * time.Millisecond)
	cancel()
	<-done

	var status int
	var b []byte
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		status, b = ts.post(t, `{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":1}`, true)
		if status == http.StatusOK {
			return
		}
	}
	t.Fatalf("getblockcount after the long poller left: %d %s; btcd released the long poll's client slot", status, b)
}

// 13. Over a websocket btcd's help covers the websocket methods
// (rpcwebsocket.go:1976-2020, handleWebsocketHelp searches wsHandlers too).
// The server's help only knows the HTTP table (methods.go:95) and
// answers -8 "Unknown command".
func TestWebsocketHelpCoversWebsocketMethods(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	c := ts.wsClient(t, nil)
	for _, m := range []string{"notifyblocks", "loadtxfilter", "rescanblocks"} {
		if _, err := c.RawRequest("help", []json.RawMessage{json.RawMessage(`"` + m + `"`)}); err != nil {
			t.Errorf("help %s over a websocket: %v; btcd describes it", m, err)
		}
	}
}

// reviewLimitedServer serves node with a limited user.
func reviewLimitedServer(t *testing.T, node *testNode) *testServer {
	return startServer(t, node, func(c *Config) { c.LimitUser, c.LimitPass = "limited", "lpass" })
}

// 14. Over a websocket btcd refuses a limited user's other methods with
// code -32602 (ErrRPCInvalidParams, rpcwebsocket.go:1393-1410); the server
// uses -32603 (limited.go:41), btcd's HTTP code, on both transports.
func TestLimitedWebsocketErrorCode(t *testing.T) {
	ts := reviewLimitedServer(t, newTestNode(t))
	conn := reviewWSDial(t, ts, "limited", "lpass")
	r := reviewWSCall(t, conn, `{"jsonrpc":"1.0","method":"getpeerinfo","params":[],"id":1}`)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCInvalidParams.Code ||
		r.Error.Message != "limited user not authorized for this method" {
		t.Fatalf("limited getpeerinfo over a websocket: %+v; btcd answers -32602", r.Error)
	}
}

// 15. stopnotifyblocks is not in btcd's rpcLimited (rpcserver.go:250-290),
// so btcd refuses it to the limited user (rpcwebsocket.go:1393-1410); the
// server's list adds it (limited.go:20).
func TestLimitedUserStopNotifyBlocks(t *testing.T) {
	ts := reviewLimitedServer(t, newTestNode(t))
	conn := reviewWSDial(t, ts, "limited", "lpass")
	r := reviewWSCall(t, conn, `{"jsonrpc":"1.0","method":"stopnotifyblocks","params":[],"id":1}`)
	if r.Error == nil || r.Error.Message != "limited user not authorized for this method" {
		t.Fatalf("limited stopnotifyblocks: %+v; btcd refuses it", r.Error)
	}
}

// 16. Over HTTP btcd checks the limited user's permission before anything
// else (rpcserver.go:4293-4299), so an unknown method gets "limited user
// not authorized for this method" (-32603). The server looks the method up
// first (request.go:126-136) and answers -32601.
func TestLimitedUserUnknownMethod(t *testing.T) {
	ts := reviewLimitedServer(t, newTestNode(t))
	req, _ := http.NewRequest(http.MethodPost, ts.baseURL()+"/",
		strings.NewReader(`{"jsonrpc":"1.0","method":"getbalance","params":[],"id":1}`))
	req.SetBasicAuth("limited", "lpass")
	status, b := ts.do(t, req)
	var r reply
	if err := json.Unmarshal(b, &r); err != nil || status != http.StatusOK {
		t.Fatalf("%d %s %v", status, b, err)
	}
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCInternal.Code ||
		r.Error.Message != "limited user not authorized for this method" {
		t.Fatalf("limited getbalance: %+v; btcd answers -32603 limited user not authorized", r.Error)
	}
}

// 17. btcd serves a websocket client's requests concurrently (up to
// --rpcmaxconcurrentreqs, rpcwebsocket.go:1417-1437 serviceRequestSem), so
// a quick request is answered while the client's rescan runs. The server
// runs each request on the reader goroutine (websocket.go:136-157): every
// later request of the client waits for the rescan (or a long poll).
func TestWebsocketRequestNotBlockedByRescan(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(150, nil); err != nil {
		t.Fatal(err)
	}
	chain := &slowChain{BlockChain: node.chain}
	ts := startServer(t, node, func(c *Config) { c.Chain = chain })
	watched, _ := newAddress(t, node)
	conn := reviewWSDial(t, ts, testUser, testPass)
	for _, req := range []string{
		fmt.Sprintf(`{"jsonrpc":"1.0","method":"rescan","params":["%s",["%s"],[]],"id":1}`,
			node.params.GenesisHash, watched.EncodeAddress()),
		`{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":2}`,
	} {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var r reply
		if err := json.Unmarshal(msg, &r); err != nil {
			t.Fatal(err)
		}
		switch string(r.ID) {
		case "2":
			return
		case "1":
			t.Fatal("getblockcount was answered only after the rescan sent before it; btcd answers it meanwhile")
		}
	}
}

// 18. btcd parses hash arguments with chainhash.NewHashFromStr, which takes
// fewer than 64 hex digits (zero-extended), e.g. getblockheader
// (rpcserver.go:1364-1375): an unknown short hash gets -5 "Block not
// found". The server demands exactly 64 digits (chain.go:27) and answers
// -22.
func TestShortHashArgument(t *testing.T) {
	s := newOfflineServer(t, newTestNode(t))
	r := reviewBody(t, s, `{"jsonrpc":"1.0","method":"getblockheader","params":["ab"],"id":1}`)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCBlockNotFound {
		t.Fatalf("getblockheader ab: %+v; btcd answers -5 Block not found", r.Error)
	}
}

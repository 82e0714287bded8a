package rpcext

// Behaviours of btcd v0.26.2's RPC server that its clients rely on, and
// bounds on what a client that leaves may cost.

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

// parityBody runs one request body through the server as an HTTP request
// of the full user and decodes the single reply.
func parityBody(t *testing.T, s *Server, body string) reply {
	t.Helper()
	out := s.processBody([]byte(body), nil)
	var r reply
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("reply %q to %s: %v", out, body, err)
	}
	return r
}

// parityWait waits up to d for a value on ch.
func parityWait[T any](ch chan T, d time.Duration) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	case <-time.After(d):
		var zero T
		return zero, false
	}
}

// parityWSDial opens a raw websocket to ts with basic auth user:pass.
func parityWSDial(t *testing.T, ts *testServer, user, pass string) *websocket.Conn {
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

// parityWSCall sends one request on a raw websocket and returns the reply
// with its id (notifications are skipped).
func parityWSCall(t *testing.T, conn *websocket.Conn, body string) reply {
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

// btcd answers wallet commands with ErrRPCNoWallet and the commands it
// leaves unimplemented with ErrRPCUnimplemented (both -1).
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
		r := parityBody(t, s, `{"jsonrpc":"1.0","method":"`+c.method+`","params":`+params+`,"id":1}`)
		if r.Error == nil || r.Error.Code != btcjson.ErrRPCNoWallet || r.Error.Message != c.msg {
			t.Errorf("%s: got %+v, want btcd's {%d %q}", c.method, r.Error, btcjson.ErrRPCNoWallet, c.msg)
		}
	}
}

// btcd's getblock answers any verbosity other than 0 and 1 with the decoded
// transactions.
func TestGetBlockVerbosityAboveTwo(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	s := newOfflineServer(t, node)
	tip := node.chain.BestSnapshot().Hash
	for _, v := range []int{3, -1} {
		r := parityBody(t, s, fmt.Sprintf(`{"jsonrpc":"1.0","method":"getblock","params":["%s",%d],"id":1}`, tip, v))
		if r.Error != nil {
			t.Errorf("getblock verbosity %d: %+v, btcd answers with the decoded transactions", v, r.Error)
			continue
		}
		var res struct {
			RawTx []json.RawMessage `json:"rawtx"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil || len(res.RawTx) != 1 {
			t.Errorf("getblock verbosity %d: %s", v, r.Result)
		}
	}
}

// btcd's loadtxfilter skips addresses that do not decode and answers null.
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

// btcd's rescan does not decode the addresses; it looks them up as given and
// so scans on with one that does not decode.
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
	if _, ok := parityWait(finished, 5*time.Second); !ok {
		t.Fatal("no rescanfinished")
	}
}

// btcd's rescan scans [beginblock, endblock): chain.HeightRange is exclusive
// of its end, so the end block is not scanned and rescanfinished names the
// block before it.
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
	last, ok := parityWait(finished, 5*time.Second)
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

// After a rescan through the tip, btcd registers the client for the rescanned
// addresses and the unspent outpoints found, so later payments send recvtx.
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
	d, ok := parityWait(recvs, 5*time.Second)
	if !ok {
		t.Fatal("no recvtx for a block paying an address rescanned to the tip; btcd registers it")
	}
	if d == nil || d.Hash != hashes[0].String() {
		t.Fatalf("recvtx details %+v", d)
	}
}

// btcd's notifyspent looks for a mempool transaction already spending the
// outpoints and sends redeemingtx at once.
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
	h, ok := parityWait(redeems, 5*time.Second)
	if !ok {
		t.Fatal("no redeemingtx for the mempool spend of a newly watched outpoint; btcd sends it at once")
	}
	if h != spendTx.TxHash() {
		t.Fatalf("redeemingtx %v, want %v", h, spendTx.TxHash())
	}
}

// For a connected block btcd queues recvtx/redeemingtx of its transactions
// before blockconnected and filteredblockconnected.
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
	first, ok := parityWait(events, 5*time.Second)
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

// btcd's rescan stops once its client disconnects: the client's reader
// goroutine sees the close and closes wsc.quit, which the scan checks each
// block.
func TestRescanStopsWhenClientDisconnects(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(150, nil); err != nil {
		t.Fatal(err)
	}
	chain := &slowChain{BlockChain: node.chain}
	ts := startServer(t, node, func(c *Config) { c.Chain = chain })
	watched, _ := newAddress(t, node)
	conn := parityWSDial(t, ts, testUser, testPass)
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

// btcd's getblocktemplate long poll returns when its HTTP client goes away,
// releasing its place among --rpcmaxclients.
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
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		status, b = ts.post(t, `{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":1}`, true)
		if status == http.StatusOK {
			return
		}
	}
	t.Fatalf("getblockcount after the long poller left: %d %s; btcd released the long poll's client slot", status, b)
}

// Over a websocket btcd's help covers the websocket methods.
func TestWebsocketHelpCoversWebsocketMethods(t *testing.T) {
	ts := startServer(t, newTestNode(t), nil)
	c := ts.wsClient(t, nil)
	for _, m := range []string{"notifyblocks", "loadtxfilter", "rescanblocks"} {
		if _, err := c.RawRequest("help", []json.RawMessage{json.RawMessage(`"` + m + `"`)}); err != nil {
			t.Errorf("help %s over a websocket: %v; btcd describes it", m, err)
		}
	}
}

// parityLimitedServer serves node with a limited user.
func parityLimitedServer(t *testing.T, node *testNode) *testServer {
	return startServer(t, node, func(c *Config) { c.LimitUser, c.LimitPass = "limited", "lpass" })
}

// Over a websocket btcd refuses a limited user's other methods with code
// -32602 (over HTTP -32603).
func TestLimitedWebsocketErrorCode(t *testing.T) {
	ts := parityLimitedServer(t, newTestNode(t))
	conn := parityWSDial(t, ts, "limited", "lpass")
	r := parityWSCall(t, conn, `{"jsonrpc":"1.0","method":"getpeerinfo","params":[],"id":1}`)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCInvalidParams.Code ||
		r.Error.Message != "limited user not authorized for this method" {
		t.Fatalf("limited getpeerinfo over a websocket: %+v; btcd answers -32602", r.Error)
	}
}

// stopnotifyblocks is not in btcd's rpcLimited, so btcd refuses it to the
// limited user.
func TestLimitedUserStopNotifyBlocks(t *testing.T) {
	ts := parityLimitedServer(t, newTestNode(t))
	conn := parityWSDial(t, ts, "limited", "lpass")
	r := parityWSCall(t, conn, `{"jsonrpc":"1.0","method":"stopnotifyblocks","params":[],"id":1}`)
	if r.Error == nil || r.Error.Message != "limited user not authorized for this method" {
		t.Fatalf("limited stopnotifyblocks: %+v; btcd refuses it", r.Error)
	}
}

// Over HTTP btcd checks the limited user's permission before anything else,
// so an unknown method gets "limited user not authorized for this method"
// (-32603).
func TestLimitedUserUnknownMethod(t *testing.T) {
	ts := parityLimitedServer(t, newTestNode(t))
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

// btcd serves a websocket client's requests concurrently, so a quick request
// is answered while the client's rescan runs.
func TestWebsocketRequestNotBlockedByRescan(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(150, nil); err != nil {
		t.Fatal(err)
	}
	chain := &slowChain{BlockChain: node.chain}
	ts := startServer(t, node, func(c *Config) { c.Chain = chain })
	watched, _ := newAddress(t, node)
	conn := parityWSDial(t, ts, testUser, testPass)
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

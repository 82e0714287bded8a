package rpcext

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/gorilla/websocket"
)

// newOfflineServer returns a server over node that is not listening, for
// driving processBody directly.
func newOfflineServer(t testing.TB, node *testNode) *Server {
	s, err := New(&Config{DisableTLS: true, Params: node.params, Chain: node.chain,
		Mempool: node.pool, Backend: node})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkReply asserts a reply is well-formed JSON-RPC and not the trace of
// a recovered panic.
func checkReply(t *testing.T, in, out []byte) {
	t.Helper()
	if out == nil {
		return
	}
	if !json.Valid(out) {
		t.Fatalf("input %q: invalid JSON reply %q", in, out)
	}
	if bytes.Contains(out, []byte("internal error handling")) {
		t.Fatalf("input %q: handler panicked: %s", in, out)
	}
	var replies []reply
	if out[0] == '[' {
		if err := json.Unmarshal(out, &replies); err != nil {
			t.Fatalf("input %q: %v", in, err)
		}
	} else {
		var r reply
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("input %q: %v", in, err)
		}
		replies = append(replies, r)
	}
	for _, r := range replies {
		if r.Error == nil && r.Result == nil {
			t.Fatalf("input %q: reply with neither result nor error: %s", in, out)
		}
	}
}

// hostileInputs are request bodies a client could send.
var hostileInputs = []string{
	``, ` `, `null`, `true`, `1`, `"x"`, `{}`, `[]`, `[[]]`, `[null]`, `[1,2,3]`,
	`{"method":null,"id":1}`, `{"method":1,"id":1}`, `{"method":"getblock","params":[null],"id":1}`,
	`{"method":"getblock","params":["","x"],"id":1}`, `{"method":"getblock","params":[{}],"id":1}`,
	`{"method":"getblockhash","params":[1e300],"id":1}`, `{"method":"getblockhash","params":[-9223372036854775808],"id":1}`,
	`{"method":"getblockheader","params":["` + strings.Repeat("f", 64) + `"],"id":1}`,
	`{"method":"getrawtransaction","params":["` + strings.Repeat("0", 64) + `",-1],"id":1}`,
	`{"method":"sendrawtransaction","params":[""],"id":1}`,
	`{"method":"sendrawtransaction","params":["` + strings.Repeat("ff", 100) + `",{"a":1}],"id":1}`,
	`{"method":"submitblock","params":["","{}"],"id":1}`, `{"method":"submitblock","params":["` + strings.Repeat("00", 80) + `"],"id":1}`,
	`{"method":"generate","params":[4294967295],"id":1}`, `{"method":"generatetoaddress","params":[1,""],"id":1}`,
	`{"method":"generatetoaddress","params":[-5,"x"],"id":1}`, `{"method":"estimatefee","params":[-1],"id":1}`,
	`{"method":"addnode","params":["","add"],"id":1}`, `{"method":"addnode","params":["[::1","onetry"],"id":1}`,
	`{"method":"help","params":[""],"id":1}`, `{"method":"help","params":[null],"id":1}`,
	`{"method":"loadtxfilter","params":[true,[],[]],"id":1}`, `{"method":"authenticate","params":["a","b"],"id":1}`,
	`{"method":"getblockcount","params":[],"id":[1]}`, `{"method":"getblockcount","params":"x","id":1}`,
	`{"method":"getblockcount","params":[],"id":1,"jsonrpc":3}`, `{"method":"getblockcount","id":1e400}`,
	`[{"method":"getblockcount","id":1},{"method":"nosuch","id":2},"junk",{"jsonrpc":"2.0","method":"uptime"}]`,
	`{"method":"getblockcount","id":1}{"method":"getblockcount","id":2}`,
	"\xff\xfe{\"method\":\"getblockcount\"}",
	`[` + strings.Repeat(`{"method":"getblockcount","id":1},`, DefaultMaxBatchRequests) + `{"method":"getblockcount","id":1}]`,
	strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000),
}

func TestHostileRequestsGetProtocolErrors(t *testing.T) {
	node := newTestNode(t)
	s := newOfflineServer(t, node)
	for _, in := range hostileInputs {
		checkReply(t, []byte(in), s.processBody([]byte(in), nil))
	}
	// The oversize batch is refused as a whole.
	big := hostileInputs[len(hostileInputs)-2]
	var r reply
	if err := json.Unmarshal(s.processBody([]byte(big), nil), &r); err != nil || r.Error == nil ||
		r.Error.Code != btcjson.ErrRPCInvalidRequest.Code {
		t.Fatalf("oversize batch: %+v %v", r, err)
	}
	if got := node.chain.BestSnapshot().Height; got != 0 {
		t.Fatalf("hostile requests mined %d blocks", got)
	}
}

// fuzzBackend is the test node with mining refused, so that the inputs of
// FuzzProcessBody share one node whose chain stays small: generate's
// parameter checks run, its mining does not.
type fuzzBackend struct{ *testNode }

// Generate implements Backend by refusing.
func (fuzzBackend) Generate(uint32, address.Address) ([]*chainhash.Hash, error) {
	return nil, errors.New("mining is off while fuzzing")
}

// FuzzProcessBody hands arbitrary bodies to the JSON-RPC server's request
// processing, as the HTTP handler does after authentication and as the
// websocket reader does for an authenticated client, for the full user and
// the limited user: every reply is well-formed JSON-RPC and no handler
// panics. One node (three blocks mined) and one server serve every
// input of a fuzzing process.
func FuzzProcessBody(f *testing.F) {
	for _, in := range hostileInputs[:len(hostileInputs)-1] {
		f.Add([]byte(in), false)
	}
	f.Add([]byte(`{"method":"getblock","params":["`+strings.Repeat("0", 64)+`",2],"id":1}`), true)
	f.Add([]byte(`[{"method":"notifyblocks","id":1},{"method":"loadtxfilter","params":[true,["mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn"],[{"hash":"`+strings.Repeat("0", 64)+`","index":0}]],"id":2},{"method":"rescanblocks","params":[["`+strings.Repeat("0", 64)+`"]],"id":3}]`), false)
	n := newTestNode(f)
	if _, err := n.Generate(3, nil); err != nil {
		f.Fatal(err)
	}
	s, err := New(&Config{DisableTLS: true, Params: n.params, Chain: n.chain,
		Mempool: n.pool, Backend: fuzzBackend{n}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte, limited bool) {
		checkReply(t, in, s.processBodyAs(in, nil, limited, nil))
		// The same body as a websocket message, where the websocket-only
		// methods (notifyblocks, loadtxfilter, authenticate, ...) answer.
		wsc := &wsClient{s: s, authenticated: true, limited: limited,
			signal: make(chan struct{}, 1), quit: make(chan struct{})}
		checkReply(t, in, s.processBody(in, wsc))
	})
}

// TestConcurrentClients runs HTTP readers, a websocket subscriber and
// block production at once (meaningful under -race) and checks the
// subscriber sees every block in order.
func TestConcurrentClients(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	notes, handlers := newNotifications()
	ws := ts.wsClient(t, handlers)
	if err := ws.NotifyBlocks(); err != nil {
		t.Fatal(err)
	}

	const blocks = 20
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ts.httpClient(t, testUser, testPass)
			for j := 0; j < blocks; j++ {
				h, _, err := c.GetBestBlock()
				if err != nil {
					t.Error(err)
					return
				}
				// Without invalidation the tip stays in the main chain.
				if _, err := c.GetBlockVerboseTx(h); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	miner := ts.httpClient(t, testUser, testPass)
	for i := 0; i < blocks; i++ {
		if _, err := miner.Generate(1); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for h := int32(1); h <= blocks; h++ {
		f := receive(t, notes.connected, "filteredblockconnected")
		if f.height != h {
			t.Fatalf("notification for height %d, want %d", f.height, h)
		}
	}
}

// TestSilentUnauthenticatedWebsocketsClosed: a websocket opened without
// credentials waits among the unauthenticated clients, at most
// wsMaxPendingPerIP from one address and MaxWebsockets in all, apart from
// the slots of MaxWebsockets; it must authenticate within the read timeout
// or is closed, and takes a slot only once it has authenticated.
func TestSilentUnauthenticatedWebsocketsClosed(t *testing.T) {
	t.Parallel()
	const slots = 6
	ts := startServer(t, newTestNode(t), func(c *Config) { c.MaxWebsockets = slots })
	refused := func(what string, conn *websocket.Conn, resp *http.Response, err error) {
		t.Helper()
		if err == nil {
			conn.Close()
		}
		if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s: %v, want 503", what, err)
		}
	}
	var silent []*websocket.Conn
	for i := 0; i < wsMaxPendingPerIP-1; i++ {
		conn, _, err := wsDial(t, ts, false)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		silent = append(silent, conn)
	}
	// Another authenticates in-band in time, and then may stay idle.
	authed, _, err := wsDial(t, ts, false)
	if err != nil {
		t.Fatal(err)
	}
	defer authed.Close()
	call := func(conn *websocket.Conn, req string) []byte {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		if err := conn.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("%s: %v", req, err)
		}
		return msg
	}
	authenticate := `{"method":"authenticate","params":["` + testUser + `","` + testPass + `"],"id":1}`
	if msg := call(authed, authenticate); !bytes.Contains(msg, []byte(`"error":null`)) {
		t.Fatalf("authenticate: %s", msg)
	}
	// It left the unauthenticated clients: one more of this address may
	// wait among them, and no more.
	conn, _, err := wsDial(t, ts, false)
	if err != nil {
		t.Fatalf("an unauthenticated websocket after another authenticated: %v", err)
	}
	defer conn.Close()
	silent = append(silent, conn)
	conn, resp, err := wsDial(t, ts, false)
	refused(fmt.Sprintf("unauthenticated websocket %d of one address", wsMaxPendingPerIP+1), conn, resp, err)

	// Those waiting hold no slot of MaxWebsockets: the authenticated
	// upgrades take the slots left, and the next is refused.
	for i := 1; i < slots; i++ {
		conn, _, err := wsDial(t, ts, true)
		if err != nil {
			t.Fatalf("authenticated websocket %d while %d unauthenticated ones wait: %v", i+1, len(silent), err)
		}
		defer conn.Close()
	}
	conn, resp, err = wsDial(t, ts, true)
	refused(fmt.Sprintf("authenticated websocket %d", slots+1), conn, resp, err)
	// An unauthenticated one that authenticates now finds no slot.
	msg := call(silent[0], authenticate)
	if !bytes.Contains(msg, []byte(`Too many websocket clients`)) {
		t.Fatalf("authenticate with every slot taken: %s", msg)
	}
	silent[0].SetReadDeadline(time.Now().Add(time.Minute))
	if _, _, err := silent[0].ReadMessage(); err == nil {
		t.Fatal("a websocket refused a slot stays open")
	}

	// The silent ones are closed once their time to authenticate is up.
	for i, conn := range silent[1:] {
		conn.SetReadDeadline(time.Now().Add(requestReadTimeout + 20*time.Second)) // a hang guard
		if _, _, err := conn.ReadMessage(); err == nil {
			t.Fatalf("silent websocket %d was answered", i)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("silent websocket %d still open after %v", i, requestReadTimeout+20*time.Second)
		}
	}
	// Their places are free again, and the authenticated one is served.
	deadline := time.Now().Add(time.Minute) // a hang guard
	for {
		conn, _, err := wsDial(t, ts, false)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the places of closed unauthenticated websockets are not free: %v", err)
		}
		// The server forgets a closed client just after closing it.
		time.Sleep(10 * time.Millisecond)
	}
	if msg := call(authed, `{"method":"getblockcount","id":2}`); !bytes.Contains(msg, []byte(`"error":null`)) {
		t.Fatalf("getblockcount: %s", msg)
	}
}

// TestUnauthenticatedWebsocketsBoundedInAll: the unauthenticated clients of
// all addresses together are at most MaxWebsockets.
func TestUnauthenticatedWebsocketsBoundedInAll(t *testing.T) {
	t.Parallel()
	const slots = wsMaxPendingPerIP + 2
	ts := startServer(t, newTestNode(t), func(c *Config) { c.MaxWebsockets = slots })
	dial := func(local string) (*websocket.Conn, *http.Response, error) {
		d := websocket.Dialer{TLSClientConfig: ts.tlsConfig(t),
			NetDial: func(network, addr string) (net.Conn, error) {
				nd := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
				return nd.Dial(network, addr)
			}}
		return d.Dial("wss://"+ts.addr+"/ws", nil)
	}
	for i := 0; i < wsMaxPendingPerIP; i++ {
		conn, _, err := dial("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	for i := wsMaxPendingPerIP; i < slots; i++ {
		conn, resp, err := dial("127.0.0.2")
		if err != nil && resp == nil {
			t.Skipf("no second loopback address: %v", err)
		}
		if err != nil {
			t.Fatalf("unauthenticated websocket %d, from another address: %v", i+1, err)
		}
		defer conn.Close()
	}
	conn, resp, err := dial("127.0.0.3")
	if err == nil {
		conn.Close()
	}
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("unauthenticated websocket %d: %v, want 503", slots+1, err)
	}
	// The slots of MaxWebsockets are all free.
	conn, _, err = wsDial(t, ts, true)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// TestUnauthenticatedWebsocketReadLimit: before authenticating a client may
// send a message of wsPendingReadLimit bytes at most.
func TestUnauthenticatedWebsocketReadLimit(t *testing.T) {
	t.Parallel()
	ts := startServer(t, newTestNode(t), nil)
	conn, _, err := wsDial(t, ts, false)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	big := `{"method":"authenticate","params":["` + testUser + `","` + strings.Repeat("x", wsPendingReadLimit) + `"],"id":1}`
	conn.WriteMessage(websocket.TextMessage, []byte(big))
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	_, msg, err := conn.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("a message over the limit before authenticating: %s %v, want closed with 1009", msg, err)
	}
	// After authenticating, messages up to MaxRequestBytes are read.
	conn, _, err = wsDial(t, ts, false)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, req := range []string{
		`{"method":"authenticate","params":["` + testUser + `","` + testPass + `"],"id":1}`,
		`{"method":"help","params":["` + strings.Repeat("x", 2*wsPendingReadLimit) + `"],"id":2}`,
	} {
		conn.WriteMessage(websocket.TextMessage, []byte(req))
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		if _, msg, err := conn.ReadMessage(); err != nil {
			t.Fatalf("request %d: %v", i, err)
		} else if i == 0 && !bytes.Contains(msg, []byte(`"error":null`)) {
			t.Fatalf("authenticate: %s", msg)
		}
	}
}

// TestSlowRequestBodyDoesNotHoldSlots: a request whose body never arrives
// is cut off by the read timeout instead of holding a slot of MaxClients.
func TestSlowRequestBodyDoesNotHoldSlots(t *testing.T) {
	t.Parallel()
	ts := startServer(t, newTestNode(t), func(c *Config) {
		c.LimitUser, c.LimitPass = "lim", "limpass"
		c.MaxClients = 2
	})
	for i := 0; i < 2; i++ {
		conn, err := tls.Dial("tcp", ts.addr, ts.tlsConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		req, _ := http.NewRequest(http.MethodPost, ts.baseURL()+"/", nil)
		req.SetBasicAuth("lim", "limpass")
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: 1000\r\n\r\n{",
			req.Header.Get("Authorization"))
	}
	time.Sleep(requestReadTimeout + 2*time.Second)
	if status, body := ts.post(t, `{"method":"getblockcount","id":1}`, true); status != http.StatusOK {
		t.Fatalf("a request after two stalled bodies: %d %s", status, body)
	}
}

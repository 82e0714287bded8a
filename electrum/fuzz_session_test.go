package electrum

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/gorilla/websocket"
	"golang.org/x/sync/semaphore"
)

// The session-level fuzz targets share one started server over the fixture
// chain per fuzzing process: an input costs a session (or a request), not a
// server and a chain, so each target runs thousands of inputs a second.
// Throttling and the per-IP limit are off so that inputs do not slow or
// refuse the ones after them; every other limit is the default.

// fuzzServer is a started server over the fixture chain with a WebSocket
// and a TCP listener that hand out in-memory connections.
type fuzzServer struct {
	fx  *fixture
	s   *Server
	ws  *pipeListener
	tcp *pipeListener
}

// newFuzzServer starts the shared server of a fuzz target.
func newFuzzServer(f *testing.F) *fuzzServer {
	fs := &fuzzServer{fx: newFixtureChain(f), ws: newPipeListener(), tcp: newPipeListener()}
	fs.s = New(Config{
		Listeners:        []Listener{{Transport: WS, Listener: fs.ws}, {Transport: TCP, Listener: fs.tcp}},
		CostHardLimit:    -1,
		MaxSessionsPerIP: -1,
	}, fs.fx.f)
	if err := fs.s.Start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fs.s.Shutdown(ctx)
	})
	return fs
}

// pipeAddr is the address of both ends of an in-memory connection.
type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "192.0.2.1:1" }

// pipeListener is a net.Listener whose connections are net.Pipe pairs made
// by dial.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial connects to the listener: the client's end and the server's.
func (l *pipeListener) dial() (net.Conn, *watchedConn) {
	c, s := net.Pipe()
	w := &watchedConn{Conn: s}
	l.conns <- w
	return c, w
}

// watchedConn is the server's end of an in-memory connection; it tells the
// client when the server has read everything sent and waits for more, and
// when the server has closed it.
type watchedConn struct {
	net.Conn
	consumed atomic.Int64
	waiting  atomic.Bool
	closed   atomic.Bool
}

// Read implements net.Conn.
func (w *watchedConn) Read(p []byte) (int, error) {
	w.waiting.Store(true)
	n, err := w.Conn.Read(p)
	w.consumed.Add(int64(n))
	w.waiting.Store(false)
	return n, err
}

// Close implements net.Conn.
func (w *watchedConn) Close() error {
	w.closed.Store(true)
	return w.Conn.Close()
}

// RemoteAddr implements net.Conn.
func (w *watchedConn) RemoteAddr() net.Addr { return pipeAddr{} }

// settle waits until the server has read all sent bytes, waits for more
// and has answered everything it read (its session has no request running
// and nothing queued), or until it has closed the connection. It is
// bounded, so that a stuck server shows up as a slow input, not a hang.
func (fs *fuzzServer) settle(w *watchedConn, sent int64) {
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		if w.closed.Load() || (w.consumed.Load() >= sent && fs.idle() && w.waiting.Load()) {
			return
		}
		pause(i)
	}
}

// pause yields to the server's goroutines while waiting for them: at
// first only the processor (most waits end within a few yields), then
// sleeping.
func pause(i int) {
	if i < 1000 {
		runtime.Gosched()
		return
	}
	time.Sleep(10 * time.Microsecond)
}

// idle reports whether the server has a session and none of its sessions
// has a request running or an answer waiting to be written.
func (fs *fuzzServer) idle() bool {
	fs.s.mu.Lock()
	defer fs.s.mu.Unlock()
	if len(fs.s.sessions) == 0 {
		return false
	}
	for ss := range fs.s.sessions {
		ss.sendMu.Lock()
		busy := len(ss.sem) > 0 || ss.queued > 0
		ss.sendMu.Unlock()
		if busy {
			return false
		}
	}
	return true
}

// session runs one connection over transport t: the client sends head
// (the WebSocket upgrade, read back before the rest) and then body, the
// server's output is read and checked by check, and the call returns once
// the session is over.
func (fs *fuzzServer) session(t *testing.T, tr Transport, body []byte, check func([]byte) error) {
	l := fs.tcp
	if tr == WS {
		l = fs.ws
	}
	c, sc := l.dial()
	defer func() {
		c.Close()
		deadline := time.Now().Add(time.Minute)
		for i := 0; !sc.closed.Load() && time.Now().Before(deadline); i++ {
			pause(i)
		}
		if !sc.closed.Load() {
			t.Fatal("the server did not close its end of a closed connection")
		}
	}()
	c.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(c)
	var sent int64
	if tr == WS {
		go c.Write([]byte(wsUpgrade))
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade: %v %v", resp, err)
		}
		sent = int64(len(wsUpgrade))
	}
	out := make(chan error, 1)
	go func() {
		data, _ := io.ReadAll(br)
		out <- check(data)
	}()
	if n, err := c.Write(body); err == nil {
		sent += int64(n)
		fs.settle(sc, sent)
	}
	c.Close()
	if err := <-out; err != nil {
		t.Fatal(err)
	}
}

// wsUpgrade is a client's WebSocket opening handshake.
const wsUpgrade = "GET / HTTP/1.1\r\nHost: electrum\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

// wsFrame encodes one masked client frame.
func wsFrame(fin bool, op byte, payload []byte) []byte {
	b := []byte{op}
	if fin {
		b[0] |= 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	mask := []byte{1, 2, 3, 4}
	b = append(b, mask...)
	for i, c := range payload {
		b = append(b, c^mask[i%4])
	}
	return b
}

// checkLines checks a TCP session's output: newline-terminated JSON values,
// none of them an empty batch answer.
func checkLines(data []byte) error {
	lines := bytes.Split(data, []byte("\n"))
	for i, line := range lines {
		if len(line) == 0 && i < len(lines)-1 {
			return fmt.Errorf("empty line from the server in %q", data)
		}
		if len(line) > 0 && (!json.Valid(line) || string(line) == "[]") {
			return fmt.Errorf("invalid JSON line from the server: %q", line)
		}
	}
	return nil
}

// checkWSFrames checks a WebSocket session's output: unmasked server
// frames, text frames holding JSON (not an empty batch answer).
func checkWSFrames(data []byte) error {
	all := data
	for len(data) > 0 {
		if len(data) < 2 {
			return nil // cut off by the client's close
		}
		op, masked, n := data[0]&0x0f, data[1]&0x80 != 0, int(data[1]&0x7f)
		h := 2
		switch n {
		case 126:
			if len(data) < 4 {
				return nil
			}
			n, h = int(binary.BigEndian.Uint16(data[2:])), 4
		case 127:
			if len(data) < 10 {
				return nil
			}
			n, h = int(binary.BigEndian.Uint64(data[2:])), 10
		}
		if masked {
			return fmt.Errorf("masked frame from the server")
		}
		if n < 0 || len(data) < h+n {
			return nil
		}
		payload := data[h : h+n]
		if op == websocket.TextMessage && data[0]&0x80 != 0 && (!json.Valid(payload) || string(payload) == "[]") {
			return fmt.Errorf("invalid JSON frame from the server: %q in %q", payload, all)
		}
		data = data[h+n:]
	}
	return nil
}

// FuzzWebSocketFrames sends arbitrary bytes after a WebSocket upgrade to
// the server's WS transport (HTTP upgrade, gorilla/websocket's frame
// reader, the session's message handling): the server must never panic,
// must answer only with well-formed frames holding JSON, and must close its
// end when the client goes away.
func FuzzWebSocketFrames(f *testing.F) {
	fs := newFuzzServer(f)
	version := []byte(`{"id":0,"method":"server.version","params":["fuzz","1.4"]}`)
	balance := []byte(`{"id":1,"method":"blockchain.scripthash.get_balance","params":["` + fs.fx.shA.String() + `"]}`)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, seed := range [][]byte{
		wsFrame(true, websocket.TextMessage, version),
		cat(wsFrame(true, websocket.TextMessage, version), wsFrame(true, websocket.TextMessage, balance)),
		cat(wsFrame(true, websocket.BinaryMessage, version), wsFrame(true, websocket.PingMessage, []byte("p")),
			wsFrame(false, websocket.TextMessage, balance[:10]), wsFrame(true, 0, balance[10:])),
		cat(wsFrame(true, websocket.TextMessage, version), wsFrame(true, websocket.CloseMessage, []byte{3, 232})),
		cat(wsFrame(true, websocket.TextMessage, version), wsFrame(true, websocket.TextMessage, []byte(`[{"id":1,"method":"server.ping"},{"id":2,"method":"server.features"}]`))),
		wsFrame(true, websocket.TextMessage, []byte("\xff\xfe")),
		{0x81, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4},
		{0x81, 0x05, 'h', 'e', 'l', 'l', 'o'},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, frames []byte) {
		fs.session(t, WS, frames, checkWSFrames)
	})
}

// FuzzTCPSession sends arbitrary bytes to the server's TCP transport
// (newline framing, the JSON-RPC decoder, batches, version negotiation,
// every method): the server must never panic, must answer only with JSON
// lines and must close its end when the client goes away.
func FuzzTCPSession(f *testing.F) {
	fs := newFuzzServer(f)
	sh := fs.fx.shA.String()
	for _, seed := range []string{
		`{"id":0,"method":"server.version","params":["fuzz","1.4"]}` + "\n" +
			`{"id":1,"method":"blockchain.scripthash.get_history","params":["` + sh + `"]}` + "\n",
		`[{"id":0,"method":"server.version","params":["fuzz",["1.4","1.6"]]},{"id":1,"method":"server.ping"}]` + "\n",
		`{"id":0,"method":"server.version"}` + "\n" + `[{"id":1,"method":"blockchain.headers.subscribe"},{"method":"server.ping"},{"id":2,"result":1}]` + "\n",
		`{"id":0,"method":"server.version","params":["fuzz","1.6"]}` + "\n" + `{"id":1,"method":"blockchain.scripthash.subscribe","params":["` + sh + `"]}` + "\r\n" +
			`{"id":2,"method":"blockchain.scripthash.unsubscribe","params":["` + sh + `"]}`,
		`{"id":1,"method":"server.ping"}` + "\n",
		"\n\n\xff\n[]\n{\n",
		// A server.version notification without a common version is
		// not answered (it once got an empty line), alone or opening a
		// batch.
		`{"method":"server.version","params":["fuzz","9.9"]}` + "\n",
		`[{"method":"server.version","params":["fuzz","9.9"]},{"id":1,"method":"server.ping"}]` + "\n",
		`[{"method":"server.version","params":["fuzz","1.4"]},{"id":1,"method":"server.ping"}]` + "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs.session(t, TCP, data, checkLines)
	})
}

// operatorMethods are the node's operator RPCs (rpcext, the node's admin
// commands and btcd's RPCs that change the node): none is an Electrum
// method.
var operatorMethods = []string{
	"getelectrumsessions", "disconnectelectrumsession", "getscripthashinfo", "reloadelectrumtls",
	"verifyelectrumindex", "getelectruminfo", "dropelectrumindex", "stop", "generate", "generatetoaddress",
	"setgenerate", "submitblock", "addnode", "node", "disconnectnode", "invalidateblock", "reconsiderblock",
	"faucet", "sendrawtransaction", "debuglevel", "getpeerinfo", "help", "authenticate",
}

// fuzzMethodNames are the names FuzzMethodParams picks from: every
// Electrum method, the operator methods and a few near misses.
func fuzzMethodNames() []string {
	var names []string
	for name := range methodTable() {
		names = append(names, name)
	}
	sort.Strings(names)
	names = append(names, operatorMethods...)
	return append(names, "", "server.Version", "blockchain.scripthash", "server.version ")
}

// newDirectSession returns a negotiated session of s at version v that is
// driven by calling its methods, without a connection: what it sends stays
// in its queue.
func newDirectSession(s *Server, v protoVersion) *session {
	now := time.Now()
	ss := &session{
		srv: s, conn: nopConn{}, ipKey: "192.0.2.1", ip: net.IPv4(192, 0, 2, 1), remote: "192.0.2.1:1",
		started: now, sem: make(chan struct{}, s.cfg.Concurrency), wake: make(chan struct{}, 1),
		subs: make(map[indexers.ScriptHash]*subState), costStamp: now,
	}
	ss.ctx, ss.cancel = context.WithCancel(s.ctx)
	s.admit(ss)
	ss.version = v
	ss.negotiated.Store(true)
	return ss
}

// nopConn is the connection of a session driven directly.
type nopConn struct{}

func (nopConn) ReadMessage() ([]byte, error)     { return nil, io.EOF }
func (nopConn) ReleaseMessage()                  {}
func (nopConn) WriteMessage([]byte) error        { return nil }
func (nopConn) WriteMessages([]outMsg) error     { return nil }
func (nopConn) SetReadDeadline(time.Time) error  { return nil }
func (nopConn) SetWriteDeadline(time.Time) error { return nil }
func (nopConn) Close() error                     { return nil }
func (nopConn) RemoteAddr() net.Addr             { return pipeAddr{} }

func (nopConn) account(func(int) error, *semaphore.Weighted) {}

// fuzzVersions are the protocol versions the direct targets negotiate.
var fuzzVersions = []protoVersion{version14, version142, {1, 5, 0}, version16}

// answerError returns the error code of an answer, 0 for a result.
func answerError(t *testing.T, resp []byte) int {
	t.Helper()
	var a struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(resp, &a); err != nil {
		t.Fatalf("answer %q: %v", resp, err)
	}
	if a.Error == nil {
		if a.Result == nil {
			t.Fatalf("answer %q has neither result nor error", resp)
		}
		return 0
	}
	return a.Error.Code
}

// FuzzMethodParams calls a method picked from the Electrum methods (and the
// operator methods, which must be unknown) with arbitrary parameters at a
// negotiated protocol version, through the session's request path but
// without a connection: parameter parsing and each handler's checks run
// against the fixture chain. No input may make a handler panic or fail with
// an internal error, every answer is JSON, and an operator method is
// "method not found".
func FuzzMethodParams(f *testing.F) {
	fs := newFuzzServer(f)
	names := fuzzMethodNames()
	index := map[string]uint8{}
	for i, n := range names {
		index[n] = uint8(i)
	}
	sh := `"` + fs.fx.shA.String() + `"`
	tx1 := `"` + fs.fx.tx1.TxHash().String() + `"`
	for _, seed := range []struct {
		method, params string
	}{
		{"server.version", `["fuzz", ["1.4", "1.6"]]`},
		{"blockchain.block.header", `[4, 4]`},
		{"blockchain.block.headers", `{"start_height": 0, "count": 5, "cp_height": 4}`},
		{"blockchain.estimatefee", `[2, "economical"]`},
		{"blockchain.scripthash.get_balance", `[` + sh + `]`},
		{"blockchain.scripthash.get_history", `{"scripthash": ` + sh + `}`},
		{"blockchain.scripthash.get_mempool", `[` + sh + `]`},
		{"blockchain.scripthash.listunspent", `[` + sh + `]`},
		{"blockchain.scripthash.subscribe", `[` + sh + `]`},
		{"blockchain.scripthash.unsubscribe", `[` + sh + `]`},
		{"blockchain.transaction.broadcast", `["` + txHex(fs.fx.tx2) + `"]`},
		{"blockchain.transaction.broadcast_package", `[["` + txHex(fs.fx.tx2) + `"], true]`},
		{"blockchain.transaction.get", `[` + tx1 + `, true]`},
		{"blockchain.transaction.get_merkle", `[` + tx1 + `, 4]`},
		{"blockchain.transaction.id_from_pos", `[4, 1, true]`},
		{"server.add_peer", `[{"hosts": {}}]`},
		{"server.features", ``},
		{"stop", `[]`},
	} {
		f.Add(index[seed.method], []byte(seed.params), uint8(3))
	}
	f.Fuzz(func(t *testing.T, which uint8, params []byte, ver uint8) {
		name := names[int(which)%len(names)]
		// What decodeRequest lets through as params: nothing, an array
		// or an object.
		params = bytes.TrimSpace(params)
		if len(params) > 0 && (!json.Valid(params) || (params[0] != '[' && params[0] != '{')) {
			return
		}
		ss := newDirectSession(fs.s, fuzzVersions[int(ver)%len(fuzzVersions)])
		defer ss.close()
		if name == "server.version" {
			// Negotiation itself: the session's first request.
			ss.negotiated.Store(false)
		}
		resp, ok, after := ss.execute(&request{v2: true, id: json.RawMessage(`1`), method: name, params: params})
		if after != nil {
			after()
		}
		if !ok {
			t.Fatalf("%s %s: no answer", name, params)
		}
		code := answerError(t, resp)
		if code == codeInternalError {
			t.Fatalf("%s %s: %s", name, params, resp)
		}
		if _, electrum := fs.s.methods[name]; !electrum && code != codeMethodNotFound {
			t.Fatalf("%s is not an Electrum method but was answered %s", name, resp)
		}
	})
}

// FuzzDispatch hands arbitrary frames (the lines of the input) to a
// negotiated session's dispatcher, as its read loop does after framing:
// requests run concurrently and batches as batches. Every frame gets exactly
// the answers the protocol says (one per request with an id, one array per
// batch holding one answer per such member, one error per undecodable frame
// or over-limit batch, none for notifications and client responses), every
// answer is JSON, and nothing panics or fails with an internal error.
func FuzzDispatch(f *testing.F) {
	fs := newFuzzServer(f)
	sh := fs.fx.shB.String()
	for _, seed := range []string{
		`{"id":1,"method":"server.ping"}`,
		`[{"id":1,"method":"server.ping"},{"method":"server.ping"},{"id":2,"result":null},{"id":"x","method":"blockchain.scripthash.get_balance","params":["` + sh + `"]}]`,
		`{"id":1,"method":"blockchain.scripthash.subscribe","params":["` + sh + `"]}` + "\n" + `{"id":2,"method":"blockchain.headers.subscribe"}`,
		`[]` + "\n" + `[1,"a",null]` + "\n" + `{"id":[],"method":"server.ping"}` + "\n" + `{"jsonrpc":"3.0","id":1,"method":"x"}`,
		`{"id":1,"method":"blockchain.block.headers","params":[0,2016]}`,
		`[` + string(bytes.Repeat([]byte(`{"id":1,"method":"server.ping"},`), 20)) + `{"method":"server.ping"}]`,
	} {
		f.Add([]byte(seed), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, ver uint8) {
		ss := newDirectSession(fs.s, fuzzVersions[int(ver)%len(fuzzVersions)])
		defer ss.close()
		var wantBatches []int // answers in each answered batch
		want := 0
		for _, frame := range bytes.Split(data, []byte("\n")) {
			m := decodeMessage(frame)
			switch {
			case m.err != nil || (m.batch && len(m.requests) > fs.s.cfg.MaxBatch):
				want++
			case m.batch:
				n := 0
				for _, r := range m.requests {
					if !r.isResponse && !r.isNotification() {
						n++
					}
				}
				if n > 0 {
					want++
					wantBatches = append(wantBatches, n)
				}
			case !m.requests[0].isResponse && !m.requests[0].isNotification():
				want++
			}
			if !ss.dispatch(m) {
				t.Fatalf("frame %q stopped the session", frame)
			}
		}
		// Every request slot free again: every dispatched request is done.
		for i := 0; i < cap(ss.sem); i++ {
			ss.sem <- struct{}{}
		}
		ss.sendMu.Lock()
		var queue [][]byte
		for _, m := range ss.queue {
			queue = append(queue, m.join())
		}
		ss.sendMu.Unlock()
		if len(queue) != want {
			t.Fatalf("%d answers, want %d: %q", len(queue), want, queue)
		}
		var gotBatches []int
		for _, msg := range queue {
			if len(msg) > 0 && msg[0] == '[' {
				var items []json.RawMessage
				if err := json.Unmarshal(msg, &items); err != nil {
					t.Fatalf("batch answer %q: %v", msg, err)
				}
				for _, it := range items {
					if answerError(t, it) == codeInternalError {
						t.Fatalf("internal error: %s", it)
					}
				}
				gotBatches = append(gotBatches, len(items))
				continue
			}
			if answerError(t, msg) == codeInternalError {
				t.Fatalf("internal error: %s", msg)
			}
		}
		sort.Ints(gotBatches)
		sort.Ints(wantBatches)
		if fmt.Sprint(gotBatches) != fmt.Sprint(wantBatches) {
			t.Fatalf("batch answers of %v members, want %v: %q", gotBatches, wantBatches, queue)
		}
	})
}

// TestFuzzHarnessAnswers checks that the in-memory sessions of the fuzz
// targets are served: a version and a balance request over each transport
// get their two answers before the client goes away.
func TestFuzzHarnessAnswers(t *testing.T) {
	fx := newFixtureChain(t)
	fs := &fuzzServer{fx: fx, ws: newPipeListener(), tcp: newPipeListener()}
	fs.s, _ = startServer(t, fx.f, func(c *Config) {
		c.Listeners = []Listener{{Transport: WS, Listener: fs.ws}, {Transport: TCP, Listener: fs.tcp}}
	})
	version := `{"id":0,"method":"server.version","params":["fuzz","1.4"]}`
	balance := `{"id":1,"method":"blockchain.scripthash.get_balance","params":["` + fx.shA.String() + `"]}`
	count := func(n *int, sep []byte) func([]byte) error {
		return func(data []byte) error {
			*n = bytes.Count(data, sep)
			return nil
		}
	}
	var lines, frames int
	fs.session(t, TCP, []byte(version+"\n"+balance+"\n"), count(&lines, []byte(`"id":`)))
	fs.session(t, WS, append(wsFrame(true, websocket.TextMessage, []byte(version)),
		wsFrame(true, websocket.TextMessage, []byte(balance))...), count(&frames, []byte(`"id":`)))
	if lines != 2 || frames != 2 {
		t.Fatalf("%d answers over TCP, %d over WS; want 2 each", lines, frames)
	}
}

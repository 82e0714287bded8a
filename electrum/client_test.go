package electrum

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// startServer starts a server on loopback TCP (plus any extra listeners)
// and stops it when the test ends.
func startServer(t testing.TB, b Backend, mod func(*Config)) (*Server, string) {
	t.Helper()
	return startServerMetrics(t, b, mod, nil)
}

// startServerMetrics is startServer with the server's metrics registered
// with reg (none when nil).
func startServerMetrics(t testing.TB, b Backend, mod func(*Config), reg prometheus.Registerer) (*Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Listeners: []Listener{{Transport: TCP, Listener: l}}}
	if mod != nil {
		mod(&cfg)
	}
	s := New(cfg, b)
	if reg != nil {
		if err := s.RegisterMetrics(reg); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s, l.Addr().String()
}

// rpcResponse is a decoded response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *RPCError       `json:"error"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// testClient is a minimal newline JSON-RPC client that matches responses
// by id and collects notifications.
type testClient struct {
	t      testing.TB
	conn   net.Conn
	mu     sync.Mutex
	nextID int
	wait   map[string]chan rpcResponse
	// batches receives whole batch answers.
	batches chan []rpcResponse
	// notes receives server notifications.
	notes chan rpcResponse
	// raw receives every line that is not valid JSON-RPC.
	done chan struct{}
}

// dial connects a test client.
func dial(t testing.TB, addr string) *testClient {
	t.Helper()
	return dialFrom(t, addr, nil)
}

// dialFrom connects a test client from a local IP address (any when nil),
// so that tests can be many clients on loopback (127.0.0.0/8).
func dialFrom(t testing.TB, addr string, local net.IP) *testClient {
	t.Helper()
	d := net.Dialer{}
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return newTestClient(t, c)
}

// newTestClient runs a test client on an open connection.
func newTestClient(t testing.TB, c net.Conn) *testClient {
	t.Helper()
	tc := &testClient{t: t, conn: c, wait: map[string]chan rpcResponse{},
		batches: make(chan []rpcResponse, 16), notes: make(chan rpcResponse, 1024), done: make(chan struct{})}
	go tc.readLoop()
	t.Cleanup(func() { c.Close() })
	return tc
}

// readLoop routes incoming lines.
func (c *testClient) readLoop() {
	defer close(c.done)
	r := bufio.NewReaderSize(c.conn, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		line = []byte(strings.TrimSpace(string(line)))
		if len(line) > 0 && line[0] == '[' {
			var rs []rpcResponse
			if json.Unmarshal(line, &rs) == nil {
				c.batches <- rs
			}
			continue
		}
		var resp rpcResponse
		if err := json.Unmarshal(line, &resp); err != nil {
			continue
		}
		if resp.Method != "" {
			c.notes <- resp
			continue
		}
		c.mu.Lock()
		ch := c.wait[string(resp.ID)]
		delete(c.wait, string(resp.ID))
		if ch == nil {
			ch = c.wait["null"]
			delete(c.wait, "null")
		}
		c.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
}

// expectNullID registers interest in the next response with id null.
func (c *testClient) expectNullID() chan rpcResponse {
	ch := make(chan rpcResponse, 1)
	c.mu.Lock()
	c.wait["null"] = ch
	c.mu.Unlock()
	return ch
}

// sendExpect registers interest in the answer with the given raw id and
// then writes line.
func (c *testClient) sendExpect(id, line string) chan rpcResponse {
	ch := make(chan rpcResponse, 1)
	c.mu.Lock()
	c.wait[id] = ch
	c.mu.Unlock()
	c.send(line)
	return ch
}

// send writes a raw line.
func (c *testClient) send(line string) {
	if _, err := c.conn.Write([]byte(line + "\n")); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// start sends a request and returns the channel its answer arrives on.
func (c *testClient) start(method string, params ...any) chan rpcResponse {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan rpcResponse, 1)
	c.wait[fmt.Sprint(id)] = ch
	c.mu.Unlock()
	if params == nil {
		params = []any{}
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	c.send(string(b))
	return ch
}

// await waits for an answer.
func (c *testClient) await(ch chan rpcResponse) rpcResponse {
	c.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-c.done:
		// The answer may have been routed just before the close.
		select {
		case r := <-ch:
			return r
		default:
		}
		c.t.Fatalf("connection closed while waiting for an answer")
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no answer")
	}
	return rpcResponse{}
}

// call sends a request and returns its result or error.
func (c *testClient) call(method string, params ...any) (json.RawMessage, *RPCError) {
	c.t.Helper()
	r := c.await(c.start(method, params...))
	return r.Result, r.Error
}

// must calls and fails the test on an error, decoding into out.
func (c *testClient) must(out any, method string, params ...any) {
	c.t.Helper()
	res, rerr := c.call(method, params...)
	if rerr != nil {
		c.t.Fatalf("%s%v: %v", method, params, rerr)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			c.t.Fatalf("%s: decoding %s: %v", method, res, err)
		}
	}
}

// negotiate sends server.version.
func (c *testClient) negotiate(version any) {
	c.t.Helper()
	var res []string
	c.must(&res, "server.version", "test-client", version)
}

// note waits for the next notification.
func (c *testClient) note() rpcResponse {
	c.t.Helper()
	select {
	case n := <-c.notes:
		return n
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no notification")
	}
	return rpcResponse{}
}

// noNote asserts that no notification is pending after the server finished
// its notification passes.
func (c *testClient) noNote(s *Server) {
	c.t.Helper()
	if err := s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		c.t.Fatal(err)
	}
	// A round trip orders everything the server sent before it.
	c.call("server.ping")
	select {
	case n := <-c.notes:
		c.t.Fatalf("unexpected notification %s %s", n.Method, n.Params)
	default:
	}
}

// closedByServer waits until the server closes the connection.
func (c *testClient) closedByServer() bool {
	select {
	case <-c.done:
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}

// drain returns every notification the server sent so far.
func (c *testClient) drain(s *Server) []rpcResponse {
	c.t.Helper()
	if err := s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		c.t.Fatal(err)
	}
	c.call("server.ping")
	var out []rpcResponse
	for {
		select {
		case n := <-c.notes:
			out = append(out, n)
		default:
			return out
		}
	}
}

// decodeInto unmarshals JSON or fails the test.
func decodeInto(t testing.TB, raw json.RawMessage, out any) {
	t.Helper()
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
}

// lineClient is a bare newline connection that hands out whole answer
// lines, for tests that measure what the server wrote.
type lineClient struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

// dialLines connects a lineClient.
func dialLines(t testing.TB, addr string) *lineClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lineClient{t: t, conn: c, r: bufio.NewReaderSize(c, 1<<20)}
}

// send writes one line.
func (lc *lineClient) send(line string) {
	lc.t.Helper()
	if _, err := lc.conn.Write([]byte(line + "\n")); err != nil {
		lc.t.Fatalf("write: %v", err)
	}
}

// line reads the next line, without its newline.
func (lc *lineClient) line() []byte {
	lc.t.Helper()
	lc.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := lc.r.ReadBytes('\n')
	if err != nil {
		lc.t.Fatalf("read: %v", err)
	}
	return b[:len(b)-1]
}

// negotiate sends server.version and reads its answer.
func (lc *lineClient) negotiate() {
	lc.t.Helper()
	lc.send(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["lines","1.4.2"]}`)
	if l := lc.line(); !strings.Contains(string(l), `"result"`) {
		lc.t.Fatalf("server.version: %s", l)
	}
}

package electrum

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestTransports serves all four transports from addresses given in the
// config (two for TCP) and runs the same exchange over each.
func TestTransports(t *testing.T) {
	fx := newFixture(t, nil)
	dir := t.TempDir()
	cfg := Config{
		TCPListen: []string{"127.0.0.1:0", "127.0.0.1:0"},
		TLSListen: []string{"127.0.0.1:0"},
		WSListen:  []string{"127.0.0.1:0"},
		WSSListen: []string{"127.0.0.1:0"},
		CertDir:   dir,
		// An answer large enough to be sent in parts (outMsg).
		Banner: strings.Repeat("a banner of some length, ", 4000),
	}
	s := New(cfg, fx.f)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	addrs := s.Addrs()
	if len(addrs[TCP]) != 2 || len(addrs[TLS]) != 1 || len(addrs[WS]) != 1 || len(addrs[WSS]) != 1 {
		t.Fatalf("listeners %v", addrs)
	}
	cert, err := os.ReadFile(filepath.Join(dir, "electrum.cert"))
	if err != nil {
		t.Fatalf("self-signed certificate not written: %v", err)
	}
	tlsCfg := &tls.Config{InsecureSkipVerify: true}

	exchange := func(t *testing.T, send func([]byte) error, recv func() ([]byte, error)) {
		t.Helper()
		msgs := []string{
			`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["t","1.4"]}`,
			`{"jsonrpc":"2.0","id":2,"method":"blockchain.block.header","params":[1]}`,
			`{"jsonrpc":"2.0","id":3,"method":"server.banner"}`,
		}
		for i, m := range msgs {
			if err := send([]byte(m)); err != nil {
				t.Fatal(err)
			}
			b, err := recv()
			if err != nil {
				t.Fatal(err)
			}
			var r rpcResponse
			if err := json.Unmarshal(b, &r); err != nil || r.Error != nil || string(r.ID) != []string{"1", "2", "3"}[i] {
				t.Fatalf("answer %.200s (%v)", b, err)
			}
			var banner string
			if i == 2 && (json.Unmarshal(r.Result, &banner) != nil || banner != cfg.Banner) {
				t.Fatalf("banner of %d bytes answered as %.100s", len(cfg.Banner), r.Result)
			}
		}
	}
	stream := func(t *testing.T, c net.Conn) {
		r := bufio.NewReader(c)
		exchange(t, func(b []byte) error { _, err := c.Write(append(b, '\n')); return err },
			func() ([]byte, error) {
				line, err := r.ReadBytes('\n')
				if err == nil && bytes.Count(line, []byte("\n")) != 1 {
					t.Fatalf("answer not newline-framed: %q", line)
				}
				return line, err
			})
	}
	for _, a := range addrs[TCP] {
		c, err := net.Dial("tcp", a.String())
		if err != nil {
			t.Fatal(err)
		}
		stream(t, c)
		c.Close()
	}
	c, err := tls.Dial("tcp", addrs[TLS][0].String(), tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	stream(t, c)
	c.Close()
	for _, u := range []string{"ws://" + addrs[WS][0].String() + "/", "wss://" + addrs[WSS][0].String() + "/"} {
		d := websocket.Dialer{TLSClientConfig: tlsCfg, HandshakeTimeout: 10 * time.Second}
		ws, _, err := d.Dial(u, nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		exchange(t, func(b []byte) error { return ws.WriteMessage(websocket.TextMessage, b) },
			func() ([]byte, error) {
				_, b, err := ws.ReadMessage()
				if err == nil && strings.HasSuffix(string(b), "\n") {
					t.Fatalf("websocket answer carries a newline")
				}
				return b, err
			})
		// Over the request limit a WebSocket is closed (1009).
		ws.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("x"), DefaultMaxRecv+1))
		if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("oversized frame: %v", err)
		}
		ws.Close()
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A second start reuses the certificate.
	s2 := New(Config{TLSListen: []string{"127.0.0.1:0"}, CertDir: dir}, fx.f)
	if err := s2.Start(); err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown(context.Background())
	again, _ := os.ReadFile(filepath.Join(dir, "electrum.cert"))
	if !bytes.Equal(cert, again) {
		t.Fatal("certificate regenerated instead of reused")
	}
	c, err = tls.Dial("tcp", s2.Addrs()[TLS][0].String(), tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.ConnectionState().PeerCertificates[0].Raw, mustPEM(t, cert)) {
		t.Fatal("server does not present the stored certificate")
	}
	c.Close()
}

// mustPEM decodes the first PEM block.
func mustPEM(t *testing.T, b []byte) []byte {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	return blk.Bytes
}

// TestWebSocketPings checks the answers to pings: a ping gets a pong with
// its payload, and a flood of pings written at once gets at least one pong
// and at most one per ping, the last with the last ping's payload, while
// the requests around it are answered in order.
func TestWebSocketPings(t *testing.T) {
	fx := newFixture(t, nil)
	s := New(Config{WSListen: []string{"127.0.0.1:0"}}, fx.f)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+s.Addrs()[WS][0].String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// Pongs are handled while the connection is read: one goroutine
	// reads it throughout.
	pongs := make(chan string, 1000)
	ws.SetPongHandler(func(p string) error { pongs <- p; return nil })
	answers := make(chan []byte, 10)
	go func() {
		defer close(answers)
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			answers <- b
		}
	}()
	answer := func(id int) {
		t.Helper()
		select {
		case b := <-answers:
			var r rpcResponse
			if json.Unmarshal(b, &r) != nil || r.Error != nil || string(r.ID) != strconv.Itoa(id) {
				t.Fatalf("answer %s to request %d", b, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to request %d", id)
		}
	}
	request := func(id int) []byte {
		return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"server.ping"}`, id))
	}
	waitPong := func(want string) (n int) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case p := <-pongs:
				n++
				if p == want {
					return n
				}
			case <-deadline:
				t.Fatalf("no pong %q after %d pongs", want, n)
			}
		}
	}
	ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["t","1.4"]}`))
	answer(1)
	if err := ws.WriteControl(websocket.PingMessage, []byte("one"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := waitPong("one"); n != 1 {
		t.Fatalf("%d pongs for one ping", n)
	}

	// 500 pings in one write, then a request.
	var flood []byte
	for i := 0; i < 500; i++ {
		flood = append(flood, clientFrame(0x9, []byte("p"+strconv.Itoa(i)))...)
	}
	flood = append(flood, clientFrame(0x1, request(2))...)
	if _, err := ws.NetConn().Write(flood); err != nil {
		t.Fatal(err)
	}
	answer(2)
	n := waitPong("p499")
	if n < 1 || n > 500 {
		t.Fatalf("%d pongs for 500 pings", n)
	}
	t.Logf("500 pings answered by %d pongs", n)
	ws.WriteMessage(websocket.TextMessage, request(3))
	answer(3)
	select {
	case p := <-pongs:
		t.Fatalf("a pong %q after the last ping was answered", p)
	default:
	}
}

// TestWebSocketPingFloodPaced checks that a flood of pings, one frame per
// write as the hostile benchmark sends them, is paced: beyond
// controlFramesFree a second each costs controlFrameCost of reading time,
// slept off in pauses during which the flood gathers, so it is answered by
// a few dozen pongs rather than one each, and the request behind it still
// is answered. Unsolicited pongs are paced the same way.
func TestWebSocketPingFloodPaced(t *testing.T) {
	fx := newFixture(t, nil)
	s := New(Config{WSListen: []string{"127.0.0.1:0"}}, fx.f)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	for _, op := range []byte{0x9, 0xa} {
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+s.Addrs()[WS][0].String()+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		var pongs atomic.Int64
		last := make(chan struct{})
		ws.SetPongHandler(func(p string) error {
			pongs.Add(1)
			if p == "p499" {
				close(last)
			}
			return nil
		})
		// Pongs are handled while the connection is read: one
		// goroutine reads it throughout.
		answered := make(chan []byte, 10)
		go func() {
			for {
				_, b, err := ws.ReadMessage()
				if err != nil {
					return
				}
				answered <- b
			}
		}()
		const n = 500
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, err := ws.NetConn().Write(clientFrame(op, []byte("p"+strconv.Itoa(i)))); err != nil {
				t.Fatal(err)
			}
		}
		ws.NetConn().Write(clientFrame(0x1, []byte(`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["t","1.4"]}`)))
		select {
		case b := <-answered:
			if !strings.Contains(string(b), `"result":[`) {
				t.Fatalf("answer %s", b)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer after the flood")
		}
		// Every frame beyond the free ones owed its cost before the
		// request behind them was read, but for what was left under
		// one pause.
		owed := time.Duration(n-controlFramesFree)*controlFrameCost - controlFramePause
		if took := time.Since(start); took < owed {
			t.Errorf("opcode %#x: %d frames read in %v, want at least %v", op, n, took, owed)
		}
		if op == 0x9 {
			select {
			case <-last:
			case <-time.After(10 * time.Second):
				t.Fatal("the last ping was not answered")
			}
			// One pong for each pause, for the free pings and for
			// those a pong write was under way for.
			max := int64(controlFramesFree + 2*n*int(controlFrameCost)/int(controlFramePause) + 10)
			if got := pongs.Load(); got < 1 || got > max {
				t.Errorf("%d pings answered by %d pongs, want 1 to %d", n, got, max)
			}
			t.Logf("%d pings, one per write, answered by %d pongs in %v", n, pongs.Load(), time.Since(start))
		} else if got := pongs.Load(); got != 0 {
			t.Errorf("%d pongs for the client's pongs", got)
		}
		ws.Close()
	}
}

// clientFrame is a masked WebSocket frame (payload under 126 bytes) as a
// client sends it.
func clientFrame(op byte, payload []byte) []byte {
	key := [4]byte{1, 2, 3, 4}
	f := []byte{0x80 | op, 0x80 | byte(len(payload)), key[0], key[1], key[2], key[3]}
	for i, c := range payload {
		f = append(f, c^key[i%4])
	}
	return f
}

// TestWSPortClosesIdlePlainHTTP: a connection to the WebSocket port that
// is never upgraded is not a session, so no session limit holds it; the
// HTTP server's idle timeout closes it.
func TestWSPortClosesIdlePlainHTTP(t *testing.T) {
	fx := newFixtureChain(t)
	s := New(Config{WSListen: []string{"127.0.0.1:0"}, IdleTimeout: time.Second, MaxSessionsPerIP: 1}, fx.f)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	addr := s.Addrs()[WS][0].String()
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.Contains(line, "400") {
			t.Fatalf("answer %q %v, want 400", line, err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		// Closed within a few idle timeouts: the read ends with EOF,
		// not with the deadline.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("connection %d: %v, want closed by the server", i, err)
		}
	}
}

// TestHalfClosedClientAnswered: a client that sends its requests and
// closes its sending side (a script piping into nc) gets every answer,
// the last line counting without its newline, and then the server closes.
func TestHalfClosedClientAnswered(t *testing.T) {
	fx := newFixture(t, nil)
	for _, tail := range []string{"\n", ""} {
		conn, err := net.Dial("tcp", fx.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		conn.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["x","1.4"]}` + "\n" +
			`{"jsonrpc":"2.0","id":1,"method":"blockchain.block.header","params":[1]}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.get_history","params":["` + fx.shA.String() + `"]}` + tail))
		conn.(*net.TCPConn).CloseWrite()
		b, err := io.ReadAll(conn)
		if err != nil {
			t.Fatalf("tail %q: %v, want the answers and a close", tail, err)
		}
		for _, id := range []string{`"id":0`, `"id":1`, `"id":2`} {
			if !strings.Contains(string(b), id) {
				t.Fatalf("tail %q: answers %q lack %s", tail, b, id)
			}
		}
	}
}

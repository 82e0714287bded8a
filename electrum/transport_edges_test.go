package electrum

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gorilla/websocket"
)

// ctxChildren returns how many contexts are registered as children of the
// server's context (context.cancelCtx.children), read under its lock.
func ctxChildren(t *testing.T, ctx context.Context) int {
	t.Helper()
	v := reflect.ValueOf(ctx)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		t.Skipf("context of type %T", ctx)
	}
	e := v.Elem()
	mu, ch := e.FieldByName("mu"), e.FieldByName("children")
	if !mu.IsValid() || !ch.IsValid() {
		t.Skipf("context of type %T has no mu/children", ctx)
	}
	m := (*sync.Mutex)(unsafe.Pointer(mu.UnsafeAddr()))
	m.Lock()
	defer m.Unlock()
	return ch.Len()
}

// TestRefusedConnectionsLeaveNoContext: a connection refused at admission
// (here: over MaxSessionsPerIP) leaves nothing behind in the server, in
// particular no session context registered under the server's.
func TestRefusedConnectionsLeaveNoContext(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.MaxSessionsPerIP = 1 })
	base := ctxChildren(t, fx.s.ctx)
	a := fx.client(t, "1.4")
	const refusals = 200
	for i := 0; i < refusals; i++ {
		r, closed := refusedConn(t, fx.addr)
		if r.Error == nil || r.Error.Code != codeExcessiveUsage || !closed {
			t.Fatalf("connection %d over the per-IP limit: %+v closed %v", i, r, closed)
		}
	}
	a.must(nil, "server.ping")
	a.conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for fx.s.SessionCount() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := fx.s.SessionCount(); n != 0 {
		t.Fatalf("%d sessions open", n)
	}
	if n := ctxChildren(t, fx.s.ctx); n > base {
		t.Fatalf("after %d refused connections and no session open, the server's context holds %d child contexts (%d before)", refusals, n, base)
	}
}

// TestWebSocketProtocolErrorNotClientClosed: a WebSocket client that
// breaks the framing (a reserved opcode, an unmasked frame, a continuation
// frame with no message begun) is closed by the server with 1002, and the
// session is counted as a protocol error, as TestWebSocketOversizeNotClientClosed
// has it for 1009, not as closed by the client.
func TestWebSocketProtocolErrorNotClientClosed(t *testing.T) {
	cases := []struct {
		name  string
		frame []byte
	}{
		{"reserved opcode", clientFrame(0x3, []byte("x"))},
		{"unmasked frame", []byte{0x81, 0x02, '{', '}'}},
		{"continuation without a message", clientFrame(0x0, []byte("x"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixtureChain(t)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s, _ := startServer(t, fx.f, func(c *Config) {
				c.Listeners = append(c.Listeners, Listener{Transport: WS, Listener: l})
			})
			ws, _, err := websocket.DefaultDialer.Dial("ws://"+l.Addr().String()+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["t","1.4"]}`)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ws.ReadMessage(); err != nil {
				t.Fatal(err)
			}
			if _, err := ws.NetConn().Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _, err = ws.ReadMessage()
			if !websocket.IsCloseError(err, websocket.CloseProtocolError) {
				t.Fatalf("after the bad frame the client read %v, want the server's close 1002", err)
			}
			for deadline := time.Now().Add(10 * time.Second); s.SessionCount() != 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("session not closed")
				}
			}
			st := s.Stats()
			if st.Disconnected[DisconnectClient.String()] != 0 || st.Disconnected[DisconnectProtocol.String()] != 1 {
				t.Fatalf("session the server closed with 1002 counted as %v", st.Disconnected)
			}
		})
	}
}

// TestWSSHandshakeFailuresNotLogged: a connection to the WSS port that
// fails its TLS handshake is the client's doing, and writes no line to the
// process's standard logger (net/http's default for its own messages), as
// the TLS port writes none: a client must not write to the operator's log
// at will.
func TestWSSHandshakeFailuresNotLogged(t *testing.T) {
	fx := newFixtureChain(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged []string
	startServer(t, fx.f, func(c *Config) {
		c.Listeners = append(c.Listeners, Listener{Transport: WSS, Listener: l})
		c.CertDir = t.TempDir()
		c.Logf = func(f string, a ...any) { mu.Lock(); logged = append(logged, fmt.Sprintf(f, a...)); mu.Unlock() }
	})
	var std bytes.Buffer
	var stdMu sync.Mutex
	log.SetOutput(lockedWriter{&stdMu, &std})
	defer log.SetOutput(os.Stderr)
	const n = 20
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		// Not a TLS record: the handshake fails at once.
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, c)
		c.Close()
	}
	time.Sleep(100 * time.Millisecond)
	stdMu.Lock()
	lines := strings.Count(std.String(), "\n")
	sample := std.String()
	stdMu.Unlock()
	if lines > 1 {
		t.Fatalf("%d failed WSS handshakes wrote %d lines to the standard logger, e.g. %q", n, lines, strings.SplitN(sample, "\n", 2)[0])
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// TestStartRefusedAfterShutdown checks that a server, started or not, does
// not start again once shut down: its context is cancelled, so a listener
// it opened would accept connections it cannot serve.
func TestStartRefusedAfterShutdown(t *testing.T) {
	for _, startedBefore := range []bool{false, true} {
		s := New(Config{TCPListen: []string{"127.0.0.1:0"}}, nil)
		if startedBefore {
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			if err := s.Start(); err == nil {
				t.Errorf("a second Start succeeded")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err == nil {
			t.Errorf("started before: %v: Start after Shutdown succeeded, listening on %v", startedBefore, s.Addrs()[TCP])
			_ = s.Shutdown(ctx)
		}
		cancel()
	}
}

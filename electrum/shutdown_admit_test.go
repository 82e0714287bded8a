package electrum

import (
	"bytes"
	"context"
	"github.com/gorilla/websocket"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSessionRefusedOnceShutdownBegan: a connection accepted before
// Shutdown closed the listeners but admitted after it listed the sessions
// to close (before it cancels the server's context) is refused. Admitted,
// it was never closed, stayed open until its idle timeout (600 s), and kept
// Shutdown waiting for it until its context ended.
func TestSessionRefusedOnceShutdownBegan(t *testing.T) {
	n := newRealNode(t, 0, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Listeners: []Listener{{Transport: TCP, Listener: l}}}, n.backend)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	// Shutdown's first step, with the listener left open for the test.
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	c := dial(t, l.Addr().String())
	if !c.closedByServer() || s.SessionCount() != 0 {
		t.Errorf("a session was admitted after Shutdown listed the sessions to close (%d open)", s.SessionCount())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownClosesSessionsAdmittedMeanwhile shuts servers down while
// clients keep connecting: Shutdown closes every session and returns.
func TestShutdownClosesSessionsAdmittedMeanwhile(t *testing.T) {
	n := newRealNode(t, 0, nil)
	for round := 0; round < 20; round++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		s := New(Config{Listeners: []Listener{{Transport: TCP, Listener: l}}, MaxSessionsPerIP: -1}, n.backend)
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		var (
			stop  atomic.Bool
			wg    sync.WaitGroup
			mu    sync.Mutex
			conns []net.Conn
		)
		for i := 0; i < 32; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						return
					}
					mu.Lock()
					conns = append(conns, c)
					mu.Unlock()
				}
			}()
		}
		deadline := time.Now().Add(60 * time.Second) // a hang guard
		for s.SessionCount() < 200 {
			if time.Now().After(deadline) {
				t.Fatalf("only %d sessions", s.SessionCount())
			}
			time.Sleep(time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
		err = s.Shutdown(ctx)
		cancel()
		stop.Store(true)
		wg.Wait()
		left := s.SessionCount()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		if err != nil || left != 0 {
			t.Fatalf("round %d: Shutdown: %v; %d sessions still open after it", round, err, left)
		}
	}
}

// TestShutdownWaitsForRunningRequests: Shutdown returns only once the
// requests running are done, over TCP and WebSocket alike: the node closes
// the index after it, and a request still reading it would read a closed
// store.
func TestShutdownWaitsForRunningRequests(t *testing.T) {
	for _, ws := range []bool{false, true} {
		var sb *hashStall
		n := newRealNodeServing(t, 0, nil, func(b *IndexBackend) Backend {
			sb = &hashStall{IndexBackend: b, stalled: make(chan struct{}, 1), resume: make(chan struct{})}
			return sb
		})
		sb.mu.Lock()
		sb.at, sb.armed = 3, true
		sb.mu.Unlock()
		req := []byte(`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["t","1.4"]}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"blockchain.block.header","params":[3,5]}` + "\n")
		if ws {
			c, _, err := websocket.DefaultDialer.Dial("ws://"+n.wsAddr+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, line := range bytes.SplitAfter(req[:len(req)-1], []byte("\n")) {
				if err := c.WriteMessage(websocket.TextMessage, line); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			c := dial(t, n.addr)
			c.send(string(req[:len(req)-1]))
		}
		select {
		case <-sb.stalled:
		case <-time.After(60 * time.Second): // a hang guard
			t.Fatal("the request never read the header")
		}
		shut := make(chan error, 1)
		go func() { shut <- n.srv.Shutdown(contextWithTimeout(60 * time.Second)) }()
		select {
		case err := <-shut:
			t.Errorf("websocket %v: Shutdown returned (%v) while a request was still reading the index", ws, err)
			close(sb.resume)
			continue
		case <-time.After(2 * time.Second):
		}
		close(sb.resume)
		if err := <-shut; err != nil {
			t.Fatal(err)
		}
	}
}

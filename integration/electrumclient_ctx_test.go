package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"sync"
	"testing"
)

// echoServer answers every request it reads with result "ok".
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var req struct{ ID int }
			if json.Unmarshal(line, &req) != nil {
				return
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": "ok"})
			if _, err := conn.Write(append(b, '\n')); err != nil {
				return
			}
		}
	}()
	return l.Addr().String()
}

// cancelAfterWriteConn cancels a context once a write has gone through in
// full: the context of a call ends just after its request was sent.
type cancelAfterWriteConn struct {
	net.Conn
	mu     sync.Mutex
	cancel func()
}

func (c *cancelAfterWriteConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	cancel := c.cancel
	c.cancel = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return n, err
}

// TestCompletedWriteThenContextEndKeepsClient: a call whose request was
// written in full, and whose context ends only afterwards (a deadline that
// expires while the answer is awaited), leaves the client open: nothing
// torn is on the connection.
func TestCompletedWriteThenContextEndKeepsClient(t *testing.T) {
	raw, err := net.Dial("tcp", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	conn := &cancelAfterWriteConn{Conn: raw}
	c := newElectrumClient(conn)
	t.Cleanup(func() { _ = c.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	conn.mu.Lock()
	conn.cancel = cancel
	conn.mu.Unlock()
	_, _ = c.Call(ctx, "server.ping") // its context ends once its request is sent

	if err := c.Err(); err != nil {
		t.Errorf("after a call whose request was written in full, the client ended: %v", err)
	}
	if _, err := c.Call(testContext(t), "server.ping"); err != nil {
		t.Fatalf("the next call on the client failed: %v", err)
	}
}

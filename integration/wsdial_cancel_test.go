package integration_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/integration"
)

// DialElectrumWS returns once its context is cancelled, also while a
// server that took the connection and the upgrade request never answers
// (a frozen node): every wait is bounded by the caller's context, not only
// by StartTimeout, the handshake's bound.
func TestDialElectrumWSHonoursCancel(t *testing.T) {
	old := integration.StartTimeout
	integration.StartTimeout = 10 * time.Minute // the handshake bound the dial falls back to
	t.Cleanup(func() { integration.StartTimeout = old })

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	requested := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		// Read the whole upgrade request, then answer nothing.
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			c.Close()
			return
		}
		requested <- c
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		c, err := integration.DialElectrumWS(ctx, "ws://"+l.Addr().String()+"/", nil)
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	var conn net.Conn
	select {
	case conn = <-requested:
	case <-time.After(time.Minute):
		t.Fatal("the client sent no upgrade request (hang guard)")
	}
	// The unanswered connection is closed when the test ends, which
	// releases a dial still waiting.
	t.Cleanup(func() { conn.Close() })
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("DialElectrumWS succeeded against a server that never answered")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("DialElectrumWS still waiting 30 s after its context was cancelled (hang guard); " +
			"it returns only at StartTimeout, the WebSocket handshake timeout")
	}
}

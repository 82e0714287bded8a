package electrum

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestWSSPlainHTTPToldToUseTLS: a client that speaks plain HTTP (ws://) to
// the WSS port is answered "400 Bad Request ... Client sent an HTTP request
// to an HTTPS server.", as any HTTPS server answers it, not closed without a
// word.
func TestWSSPlainHTTPToldToUseTLS(t *testing.T) {
	fx := newFixtureChain(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, fx.f, func(c *Config) {
		c.Listeners = append(c.Listeners, Listener{Transport: WSS, Listener: l})
		c.CertDir = t.TempDir()
	})
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(got), "HTTP/1.0 400 Bad Request") {
		t.Fatalf("a ws:// request to the WSS port got %q, want net/http's 400 \"Client sent an HTTP request to an HTTPS server.\"", got)
	}
}

package electrum

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestWSPortRefusedUpgradeClosed: a connection to the Electrum WebSocket
// port whose request is not an upgrade can never become a session, and no
// per-IP or global limit counts it, so it is closed after its 400 rather
// than kept alive for more requests (one address could otherwise hold any
// number of them, each a goroutine, buffers and a descriptor).
func TestWSPortRefusedUpgradeClosed(t *testing.T) {
	fx := newFixtureChain(t)
	s := New(Config{WSListen: []string{"127.0.0.1:0"}, MaxSessionsPerIP: 1}, fx.f) // default IdleTimeout (10m), loopback not exempt
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	addr := s.Addrs()[WS][0].String()
	const conns = 5
	kept := 0
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second)) // hang guard
		br := bufio.NewReader(c)
		answered := 0
		for j := 0; j < 2; j++ {
			if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
				break
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("connection %d request %d: status %d, want 400", i, j, resp.StatusCode)
			}
			answered++
		}
		if answered == 2 {
			kept++
		}
	}
	if kept > 0 {
		t.Fatalf("%d of %d connections from one address (MaxSessionsPerIP 1) to the WS port were answered 400 and kept "+
			"open for another request; want each closed after its refused upgrade", kept, conns)
	}
}

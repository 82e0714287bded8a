package electrum

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestWebSocketForwardedFor: a WebSocket session through a reverse proxy of
// an exempt network (loopback) that forwards its client's address in
// X-Forwarded-For is that client's session, named by its address and not
// exempt (docs/OPERATIONS.md, "WSS behind nginx or Caddy"); a client that
// connects directly cannot name another address with the header.
func TestWebSocketForwardedFor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		exempt     bool
		wantAddr   string
		wantExempt bool
	}{
		{"through an exempt proxy", true, "203.0.113.7", false},
		{"from a client that is not exempt", false, "127.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixtureChain(t)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s, _ := startServer(t, fx.f, func(c *Config) {
				c.Listeners = append(c.Listeners, Listener{Transport: WS, Listener: l})
				c.ExemptNets = nil
				if tc.exempt {
					c.ExemptNets = loopbackNets(t)
				}
			})
			h := http.Header{}
			h.Add("X-Forwarded-For", "198.51.100.1, 203.0.113.7")
			ws, _, err := websocket.DefaultDialer.Dial("ws://"+l.Addr().String()+"/electrum", h)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["t","1.4"]}`)); err != nil {
				t.Fatal(err)
			}
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, _, err := ws.ReadMessage(); err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, si := range s.Sessions() {
				if si.Transport != "ws" {
					continue
				}
				found = true
				if si.Exempt != tc.wantExempt || !strings.HasPrefix(si.Address, tc.wantAddr+":") {
					t.Fatalf("session with X-Forwarded-For \"198.51.100.1, 203.0.113.7\": address %q, exempt %v; want %s, exempt %v",
						si.Address, si.Exempt, tc.wantAddr, tc.wantExempt)
				}
			}
			if !found {
				t.Fatalf("no ws session among %+v", s.Sessions())
			}
		})
	}
}

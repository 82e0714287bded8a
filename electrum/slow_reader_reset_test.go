package electrum

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A client that never reads its answers is cut off, and its connection
// closed abortively (SO_LINGER 0, a reset), on every transport: the kernel
// drops the answers it left queued instead of holding and delivering them.
func TestNotReadingClientReset(t *testing.T) {
	fx := newFixtureChain(t)
	s := New(Config{
		TCPListen:      []string{"127.0.0.1:0"},
		WSListen:       []string{"127.0.0.1:0"},
		MaxSendBacklog: 1 << 20,
		WriteTimeout:   time.Second,
		Banner:         strings.Repeat("b", 100_000),
		CostHardLimit:  -1,
	}, fx.f)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	version := `{"jsonrpc":"2.0","id":0,"method":"server.version","params":["slow","1.4"]}`
	banner := `{"jsonrpc":"2.0","id":1,"method":"server.banner"}`

	// cut waits until the server has dropped the session, then reads what
	// the kernel still delivers, and returns how the reading ended.
	cut := func(t *testing.T, c net.Conn) error {
		deadline := time.Now().Add(30 * time.Second)
		for s.SessionCount() != 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := s.SessionCount(); n != 0 {
			t.Fatalf("the client that does not read is still connected (%d sessions)", n)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := io.Copy(io.Discard, c)
		t.Logf("read %d bytes after the cut, then %v", n, err)
		return err
	}

	for _, tr := range []string{"tcp", "ws"} {
		t.Run(tr, func(t *testing.T) {
			var raw net.Conn
			switch tr {
			case "tcp":
				c, err := net.Dial("tcp", s.Addrs()[TCP][0].String())
				if err != nil {
					t.Fatal(err)
				}
				c.(*net.TCPConn).SetReadBuffer(4096)
				c.Write([]byte(version + "\n"))
				var req strings.Builder
				for i := 0; i < 15; i++ {
					req.WriteString(banner + "\n")
				}
				go c.Write([]byte(req.String()))
				raw = c
			case "ws":
				d := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
					c, err := net.Dial(network, addr)
					if err == nil {
						c.(*net.TCPConn).SetReadBuffer(4096)
					}
					return c, err
				}}
				ws, _, err := d.Dial("ws://"+s.Addrs()[WS][0].String()+"/", nil)
				if err != nil {
					t.Fatal(err)
				}
				ws.WriteMessage(websocket.TextMessage, []byte(version))
				go func() {
					for i := 0; i < 15; i++ {
						if ws.WriteMessage(websocket.TextMessage, []byte(banner)) != nil {
							return
						}
					}
				}()
				raw = ws.NetConn()
			}
			defer raw.Close()
			err := cut(t, raw)
			if err == nil || !strings.Contains(err.Error(), "reset") {
				t.Errorf("%s: the cut connection ended with %v, want a reset (abortive close): "+
					"the kernel kept and delivered the answers the server dropped", tr, fmt.Sprint(err))
			}
		})
	}
}

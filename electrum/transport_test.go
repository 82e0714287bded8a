package electrum

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
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

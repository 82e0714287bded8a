package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// DialElectrumTLS connects to an Electrum TLS listener at addr (host:port)
// with cfg (Node.ElectrumTLSConfig trusts a harness node's certificate).
func DialElectrumTLS(ctx context.Context, addr string, cfg *tls.Config) (*ElectrumClient, error) {
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return newElectrumClient(conn), nil
}

// DialElectrumWS connects to an Electrum WebSocket listener: url is
// ws://host:port/ or wss://host:port/ (cfg is used for wss). Each
// protocol message travels as one WebSocket text message.
func DialElectrumWS(ctx context.Context, url string, cfg *tls.Config) (*ElectrumClient, error) {
	// gorilla/websocket watches only a context's deadline, not its
	// cancellation, once connected: the connection is closed when ctx ends
	// during the handshake.
	var (
		mu  sync.Mutex
		raw *writeCutConn
	)
	outer := ctx
	d := websocket.Dialer{TLSClientConfig: cfg, HandshakeTimeout: StartTimeout,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var nd net.Dialer
			conn, err := nd.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			if err := outer.Err(); err != nil {
				conn.Close()
				return nil, err
			}
			raw = &writeCutConn{Conn: conn}
			return raw, nil
		}}
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if raw != nil {
			raw.Conn.Close()
		}
	})
	ws, _, err := d.DialContext(ctx, url, nil)
	if !stop() {
		if err == nil {
			ws.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(maxElectrumLine)
	return newElectrumClient(&wsStream{ws: ws, raw: raw}), nil
}

// wsStream presents a WebSocket as the newline-delimited stream the client
// reads and writes: every message read ends in a newline, and every write
// (one request and its newline) is sent as one message.
type wsStream struct {
	ws      *websocket.Conn
	raw     *writeCutConn // the TCP connection under ws (and its TLS)
	readBuf []byte
	closeMu sync.Once
}

// writeCutConn is the TCP connection under a WebSocket. The WebSocket's own
// write deadline applies only from the next frame it writes, and before
// each frame it sets the connection's deadline to that one; the client's
// deadline (cut), set on this connection, holds over it, so a deadline
// set while a message is being written cuts the write blocked now and
// every frame after it.
type writeCutConn struct {
	net.Conn
	mu  sync.Mutex
	cut time.Time // zero: none
}

// SetWriteDeadline sets t, or the client's deadline when that is earlier.
func (c *writeCutConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.cut.IsZero() && (t.IsZero() || c.cut.Before(t)) {
		t = c.cut
	}
	return c.Conn.SetWriteDeadline(t)
}

// setCut sets the client's write deadline (zero lifts it).
func (c *writeCutConn) setCut(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = t
	return c.Conn.SetWriteDeadline(t)
}

var _ net.Conn = (*wsStream)(nil)

// Read returns the rest of the current message, reading the next one when
// it is used up.
func (s *wsStream) Read(p []byte) (int, error) {
	for len(s.readBuf) == 0 {
		_, msg, err := s.ws.ReadMessage()
		if err != nil {
			return 0, err
		}
		if !strings.HasSuffix(string(msg), "\n") {
			msg = append(msg, '\n')
		}
		s.readBuf = msg
	}
	n := copy(p, s.readBuf)
	s.readBuf = s.readBuf[n:]
	return n, nil
}

// Write sends p, one request with its newline, as a text message.
func (s *wsStream) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	if err := s.ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close closes the WebSocket.
func (s *wsStream) Close() error {
	var err error
	s.closeMu.Do(func() { err = s.ws.Close() })
	return err
}

func (s *wsStream) LocalAddr() net.Addr  { return s.ws.LocalAddr() }
func (s *wsStream) RemoteAddr() net.Addr { return s.ws.RemoteAddr() }
func (s *wsStream) SetDeadline(t time.Time) error {
	return errors.Join(s.SetReadDeadline(t), s.SetWriteDeadline(t))
}
func (s *wsStream) SetReadDeadline(t time.Time) error { return s.ws.SetReadDeadline(t) }

// SetWriteDeadline sets the deadline on the connection under the
// WebSocket, so that it also cuts a write in progress.
func (s *wsStream) SetWriteDeadline(t time.Time) error { return s.raw.setCut(t) }

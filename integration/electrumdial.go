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
	d := websocket.Dialer{TLSClientConfig: cfg, HandshakeTimeout: StartTimeout}
	ws, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(maxElectrumLine)
	return newElectrumClient(&wsStream{ws: ws}), nil
}

// wsStream presents a WebSocket as the newline-delimited stream the client
// reads and writes: every message read ends in a newline, and every write
// (one request and its newline) is sent as one message.
type wsStream struct {
	ws      *websocket.Conn
	readBuf []byte
	closeMu sync.Once
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
func (s *wsStream) SetReadDeadline(t time.Time) error  { return s.ws.SetReadDeadline(t) }
func (s *wsStream) SetWriteDeadline(t time.Time) error { return s.ws.SetWriteDeadline(t) }

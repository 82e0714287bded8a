package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// socks5 connects through a SOCKS5 proxy (RFC 1928) with optional
// username/password authentication (RFC 1929), for --proxy (a Tor daemon,
// typically). The proxy resolves host names itself.
type socks5 struct {
	addr, user, pass string
	dialer           *net.Dialer
}

// dialContext opens a connection to addr through the proxy.
func (p socks5) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", portStr, err)
	}
	if len(host) > 255 || (p.user != "" && (len(p.user) > 255 || len(p.pass) > 255)) {
		return nil, errors.New("socks5: host name or credentials too long")
	}
	c, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to the proxy %s: %w", p.addr, err)
	}
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	if err := p.handshake(c, host, uint16(port)); err != nil {
		c.Close()
		return nil, fmt.Errorf("proxy %s: %w", p.addr, err)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// handshake negotiates authentication and asks for a connection to
// host:port.
func (p socks5) handshake(c net.Conn, host string, port uint16) error {
	method := byte(0x00) // no authentication
	if p.user != "" {
		method = 0x02 // username/password
	}
	if _, err := c.Write([]byte{5, 1, method}); err != nil {
		return err
	}
	var reply [2]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return err
	}
	if reply[0] != 5 || reply[1] != method {
		return errors.New("socks5: authentication method refused")
	}
	if method == 0x02 {
		msg := append([]byte{1, byte(len(p.user))}, p.user...)
		msg = append(append(msg, byte(len(p.pass))), p.pass...)
		if _, err := c.Write(msg); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, reply[:]); err != nil {
			return err
		}
		if reply[1] != 0 {
			return errors.New("socks5: username or password refused")
		}
	}
	req := []byte{5, 1, 0}
	if ip := net.ParseIP(host); ip != nil && ip.To4() != nil {
		req = append(append(req, 1), ip.To4()...)
	} else if ip != nil {
		req = append(append(req, 4), ip.To16()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, port)
	if _, err := c.Write(req); err != nil {
		return err
	}
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return err
	}
	if head[1] != 0 {
		return fmt.Errorf("socks5: connection refused by the proxy (code %d)", head[1])
	}
	var skip int
	switch head[3] {
	case 1:
		skip = 4
	case 4:
		skip = 16
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return err
		}
		skip = int(n[0])
	default:
		return errors.New("socks5: bad reply")
	}
	_, err := io.ReadFull(c, make([]byte, skip+2))
	return err
}

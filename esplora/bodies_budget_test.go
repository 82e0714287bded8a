package esplora

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Request bodies being read take their bytes from one budget for all
// clients, four bodies of MaxBody: clients leaving bodies one byte short
// until the read timeout cannot make the server hold MaxBody for each of
// its connections. Past the budget a body is refused 503, and the bytes
// come back when the bodies' requests end.
func TestBodiesBeingReadBoundedInTotal(t *testing.T) {
	const maxBody = 100_000
	s, addr := startBare(t, Config{MaxBody: maxBody, CostHardLimit: -1, MaxRequestsPerIP: -1})
	body := strings.Repeat("0", maxBody-1) // one byte short of the declared length
	send := func(from byte) net.Conn {
		d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 3, from)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(60 * time.Second)) // hang guard
		fmt.Fprintf(c, "POST /tx HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", maxBody, body)
		return c
	}
	var held []net.Conn
	for i := 0; i < 4; i++ {
		held = append(held, send(byte(i+1)))
	}
	waitHeld := func(cond func(int64) bool) int64 {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			s.bodies.mu.Lock()
			n := s.bodies.held
			s.bodies.mu.Unlock()
			if cond(n) {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("bodies held: %d", n)
			}
		}
	}
	waitHeld(func(n int64) bool { return n >= 4*(maxBody-1) })

	c := send(9)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a body past the budget: no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a body past the budget of bodies being read: %d, want 503", resp.StatusCode)
	}
	for _, c := range held {
		c.Close()
	}
	waitHeld(func(n int64) bool { return n == 0 })
}

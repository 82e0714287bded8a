package rpcext

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// refusedRequest sends raw on a new connection, checks the status of the
// answer and returns the connection, its reader positioned after the
// answer.
func refusedRequest(t *testing.T, addr, raw string, want int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(c, 512)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("status %d, want %d", resp.StatusCode, want)
	}
	if !resp.Close {
		t.Fatalf("answer %d without Connection: close", want)
	}
	return c, br
}

// closedByServer reports whether the server closes c (after its answer):
// reading reaches EOF. The deadline only bounds the wait for a server that
// keeps the connection open (its idle timeout is 2 minutes).
func closedByServer(c net.Conn, br *bufio.Reader) bool {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := br.ReadByte()
	return errors.Is(err, io.EOF)
}

// A request answered 401, 413 or 503 has its connection closed after the
// answer, as btcd answers every request with "Connection: close": nothing
// counts idle connections (MaxClients counts requests in flight), so a
// client without credentials could otherwise keep as many open as it
// likes, each holding a goroutine and buffers of the server.
func TestRefusedConnectionsClosed(t *testing.T) {
	const limit = 2
	ts := startServer(t, newTestNode(t), func(c *Config) {
		c.DisableTLS = true
		c.MaxClients = limit
		c.MaxRequestBytes = 1000
	})

	const conns = 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for i := 0; i < conns; i++ {
		c, br := refusedRequest(t, ts.addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", http.StatusUnauthorized)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !closedByServer(c, br) {
				mu.Lock()
				open++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if open > 0 {
		t.Fatalf("%d of %d connections answered 401 left open by the server", open, conns)
	}

	auth := "Authorization: Basic dXNlcjpwYXNz\r\n"
	big := strings.Repeat(" ", 2000)
	c, br := refusedRequest(t, ts.addr, fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s",
		auth, len(big), big), http.StatusRequestEntityTooLarge)
	if !closedByServer(c, br) {
		t.Fatal("connection answered 413 left open by the server")
	}

	// Hold every place of MaxClients with requests whose bodies never
	// come, then one more is answered 503.
	for i := 0; i < limit; i++ {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\n%sContent-Length: 100\r\n\r\n{", auth)
	}
	for deadline := time.Now().Add(time.Minute); ts.srv.clients.Load() != limit; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want %d", ts.srv.clients.Load(), limit)
		}
	}
	c, br = refusedRequest(t, ts.addr, "POST / HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Length: 2\r\n\r\n{}",
		http.StatusServiceUnavailable)
	if !closedByServer(c, br) {
		t.Fatal("connection answered 503 left open by the server")
	}
}

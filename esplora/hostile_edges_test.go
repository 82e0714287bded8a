package esplora

import (
	"net"
	"sync"
	"testing"
	"time"
)

// maxOpenConnections is a bound on the connections the server holds open
// for all clients together: the Electrum server's --electrummaxsessions
// default, which bounds its listener the same way.
const maxOpenConnections = 1000

// TestOpenConnectionsBoundedAcrossAddresses: clients from many addresses,
// each within its own bound of connections (twice MaxRequestsPerIP), hold
// no more connections open together than a bound for the whole server.
// Every held connection costs a goroutine, buffers and a file descriptor
// until the 30 s read timeout (or the 2 minute idle timeout), and the
// descriptors are those the Electrum listeners, the peer-to-peer server and
// the index's store need too; an attacker with a few IPv6 /64s (or a
// botnet) otherwise opens as many as the process may.
func TestOpenConnectionsBoundedAcrossAddresses(t *testing.T) {
	const addrs, perAddr = 64, 2 * DefaultMaxRequestsPerIP // 2,048 connections in all
	_, addr := startBare(t, Config{})                      // no exempt networks: loopback counts
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	var wg sync.WaitGroup
	for a := 0; a < addrs; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			d := net.Dialer{Timeout: 10 * time.Second,
				LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(a+1))}}
			for i := 0; i < perAddr; i++ {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					t.Errorf("dial from 127.0.1.%d: %v", a+1, err)
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}(a)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// A connection the server closed reads EOF at once; a held one reaches
	// the deadline (a hang guard, not a measure of speed).
	open := 0
	deadline := time.Now().Add(2 * time.Second)
	for _, c := range conns {
		c.SetReadDeadline(deadline)
	}
	var omu sync.Mutex
	for _, c := range conns {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			if _, err := c.Read(make([]byte, 1)); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					omu.Lock()
					open++
					omu.Unlock()
				}
			}
		}(c)
	}
	wg.Wait()
	t.Logf("%d addresses x %d connections: %d held open by the server", addrs, perAddr, open)
	if open > maxOpenConnections {
		t.Fatalf("%d connections held open from %d addresses (each within its own %d): nothing bounds them all, want at most %d",
			open, addrs, perAddr, maxOpenConnections)
	}
}

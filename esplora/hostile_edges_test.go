package esplora

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
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

// TestAnswersHeldForSlowClientsBoundedInTotal: answers of a 64th of
// MaxAnswerBytes or less are never refused, so clients from many addresses
// that take their answers' headers and then stop reading hold any number of
// them until the write timeout (60 s): the bytes held for slow clients
// together pass MaxAnswerBytes without limit. With the default bound,
// 16 requests from each of N addresses for answers just under 1,000,000
// bytes (a raw block, the pool's txids) hold 16 MB per address.
func TestAnswersHeldForSlowClientsBoundedInTotal(t *testing.T) {
	n := newTestNode(t, "")
	raw, size := n.bigRawBlock()
	// The answer is exactly a 64th of the bound, as an answer of 1,000,000
	// bytes is of the default 64,000,000.
	max := int64(64 * size)
	s := New(Config{MaxAnswerBytes: max, CostHardLimit: -1}, n.backend, n.h.Chain)
	const clients = 128 // 8 addresses' worth of DefaultMaxRequestsPerIP
	var held []*stalledWriter
	t.Cleanup(func() {
		for _, w := range held {
			w.free()
		}
	})
	for i := 0; i < clients; i++ {
		w := newStalledWriter()
		held = append(held, w)
		done := make(chan struct{})
		go func(i int) {
			defer close(done)
			r := httptest.NewRequest(http.MethodGet, raw, nil)
			r.RemoteAddr = fmt.Sprintf("198.51.100.%d:1234", i/DefaultMaxRequestsPerIP+1)
			s.ServeHTTP(w, r)
		}(i)
		select {
		case <-w.writing:
		case <-done:
			if w.code == http.StatusServiceUnavailable {
				t.Logf("answer %d refused with 503 at %d bytes held", i, s.answers.held)
				return
			}
			t.Fatalf("answer %d: %d", i, w.code)
		}
	}
	s.answers.mu.Lock()
	total := s.answers.held
	s.answers.mu.Unlock()
	t.Logf("%d slow clients on %d addresses hold %d bytes of answers (MaxAnswerBytes %d)",
		clients, clients/DefaultMaxRequestsPerIP, total, max)
	if total > max {
		t.Fatalf("answers held for clients that do not read: %d bytes, %.1f times MaxAnswerBytes (%d)",
			total, float64(total)/float64(max), max)
	}
}

// historyReads is the test node's Index counting the confirmed histories
// read at once. Each read waits (up to a second, a pacing guard) for the
// others to start, so that reads the server lets run together are seen
// together.
type historyReads struct {
	Index
	mu      sync.Mutex
	now     int
	most    int
	arrived chan struct{}
}

func (h *historyReads) History(sh indexers.ScriptHash, limit int) ([]indexers.HistoryEntry, indexers.Tip, error) {
	h.mu.Lock()
	h.now++
	h.most = max(h.most, h.now)
	h.mu.Unlock()
	select {
	case h.arrived <- struct{}{}:
	default:
	}
	deadline := time.After(time.Second)
wait:
	for {
		h.mu.Lock()
		all := h.now >= cap(h.arrived)
		h.mu.Unlock()
		if all {
			break
		}
		select {
		case <-deadline:
			break wait
		case <-time.After(5 * time.Millisecond):
		}
	}
	defer func() {
		h.mu.Lock()
		h.now--
		h.mu.Unlock()
	}()
	return h.Index.History(sh, limit)
}

// TestLongHistoryReadsBoundedAcrossAddresses: the stats of a script
// (/scripthash/:hash, /address/:address) read its whole confirmed history,
// up to MaxHistory entries (1,000,000 by default, 36 MB), into memory.
// Only the reading of the history's transactions afterwards takes one of
// the server's reader places (2 per processor); the history itself is read
// by every request at once, and requests for the same script that arrive
// together each read it again. Clients on many addresses, each within its
// 16 requests, make the server hold as many copies as they send requests.
func TestLongHistoryReadsBoundedAcrossAddresses(t *testing.T) {
	n := newTestNode(t, "")
	var script []byte
	for _, c := range n.h.Coins() {
		script = c.Script.PkScript
		break
	}
	sh := indexers.ScriptHashFromScript(script)
	const requests = 64 // four addresses' worth of DefaultMaxRequestsPerIP
	idx := &historyReads{Index: n.backend, arrived: make(chan struct{}, requests)}
	s := New(Config{CostHardLimit: -1}, idx, n.h.Chain)
	path := "/scripthash/" + hex.EncodeToString(sh[:])
	var wg sync.WaitGroup
	codes := make([]int, requests)
	for i := 0; i < requests; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.RemoteAddr = fmt.Sprintf("198.51.100.%d:1234", i/DefaultMaxRequestsPerIP+1)
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			codes[i] = w.Code
		}(i)
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Fatalf("request %d: %d", i, c)
		}
	}
	t.Logf("%d requests for the stats of one script from %d addresses: %d histories read at once (reader places %d)",
		requests, requests/DefaultMaxRequestsPerIP, idx.most, cap(s.readers))
	if idx.most > cap(s.readers) {
		t.Fatalf("%d copies of one script's history read at once, from %d addresses; want at most %d (the server's reader places)",
			idx.most, requests/DefaultMaxRequestsPerIP, cap(s.readers))
	}
}

package electrum

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pipeSession runs a session of s over net.Pipe from the address ip. A
// write to the returned end returns once the session has read all of it,
// so a test knows what the server holds without sleeping.
func pipeSession(t *testing.T, s *Server, ip string) net.Conn {
	t.Helper()
	cli, srv := net.Pipe()
	t.Cleanup(func() { cli.Close() })
	remote := &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}
	go s.runSession(newLineConn(srv, s.cfg.MaxRecv), remote, TCP)
	return cli
}

// pipeNegotiate sends server.version over a pipe session and reads its
// answer.
func pipeNegotiate(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["x","1.4"]}` + "\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil || !bytes.Contains(buf[:n], []byte(`"result"`)) {
		t.Fatalf("server.version: %q %v", buf[:n], err)
	}
	c.SetDeadline(time.Time{})
}

// openSessionFrom returns the open session whose client address is ip.
func openSessionFrom(s *Server, ip string) *SessionInfo {
	for _, info := range s.Sessions() {
		if strings.HasPrefix(info.Address, ip+":") {
			return &info
		}
	}
	return nil
}

// unfinishedLine is a request line of almost MaxRecv bytes (the default
// limit) that has not reached its newline yet.
func unfinishedLine() []byte {
	return append([]byte(`{"jsonrpc":"2.0","id":1,"method":"server.ping","params":["`), bytes.Repeat([]byte("a"), 900_000)...)
}

// TestUnfinishedLineChargedToSession: the bytes of a request line the
// server has read and holds, its newline not yet arrived, are charged to
// the session as received bytes (BandwidthUnit), as the bytes of a whole
// line are. A client that holds 900 KB of a line in the server's memory
// has spent 180 of cost on it, as it would have sending the line whole.
func TestUnfinishedLineChargedToSession(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, nil)
	const ip = "10.20.0.1"
	c := pipeSession(t, s, ip)
	pipeNegotiate(t, c)
	before := openSessionFrom(s, ip)
	line := unfinishedLine()
	if _, err := c.Write(line); err != nil { // returns once the server read it all
		t.Fatal(err)
	}
	want := float64(len(line)) / float64(s.cfg.BandwidthUnit)
	var info *SessionInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if info = openSessionFrom(s, ip); info != nil && info.Cost-before.Cost >= want*0.9 {
			return
		}
	}
	t.Fatalf("the session holds %d bytes of an unfinished line; its cost went from %.2f to %.2f (bytes in %d), want at least %.0f more",
		len(line), before.Cost, info.Cost, info.BytesIn, want*0.9)
}

// TestUnfinishedLineChargedAtIdleTimeout: a line that never ends is read
// by the server until the session's idle timeout closes it. The bytes read
// are charged to the client's subnet, which keeps its cost after the
// session closes, and counted in the server's bytes received: otherwise a
// client streams MaxRecv bytes per session into the server, reconnects and
// does it again, for nothing.
func TestUnfinishedLineChargedAtIdleTimeout(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, func(c *Config) { c.IdleTimeout = time.Second })
	const ip = "10.21.0.1"
	c := pipeSession(t, s, ip)
	pipeNegotiate(t, c)
	inBefore := s.counters.bytesIn[TCP].Load()
	line := unfinishedLine()
	if _, err := c.Write(line); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); openSessionFrom(s, ip) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session never reached its idle timeout")
		}
	}
	s.groups.mu.Lock()
	g := s.groups.groups[subnetKey(net.ParseIP(ip), ip)]
	s.groups.mu.Unlock()
	groupCost := 0.0
	if g != nil {
		groupCost = g.current(time.Now(), s.cfg.groupDecay())
	}
	in := s.counters.bytesIn[TCP].Load() - inBefore
	want := float64(len(line)) / float64(s.cfg.BandwidthUnit)
	if groupCost < want*0.9 || in < uint64(len(line)) {
		t.Fatalf("%d bytes of a line read until the idle timeout: the subnet's cost is %.2f (want at least %.0f), bytes received counted %d",
			len(line), groupCost, want*0.9, in)
	}
}

// TestUnfinishedLinesMemoryBounded: sessions within the per-IP and subnet
// limits that each send most of a MaxRecv line and never finish it make the
// server hold a buffer of about 1 MiB each, until their idle timeouts (10
// minutes). At the default MaxSessions that is a gigabyte no limit counts.
// The bytes held for unfinished lines of all sessions together stay within
// a server-wide bound of the size of the others (4 × MaxSendBacklog, 64 MB
// by default): 100 such sessions do not make the heap grow by 100 MB.
func TestUnfinishedLinesMemoryBounded(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, nil)
	const sessions = 100
	line := append(unfinishedLine(), bytes.Repeat([]byte("a"), 99_000)...) // 999,059 bytes
	base := heapInUse()
	for i := 0; i < sessions; i++ {
		// One address per /24: every client is within every per-IP
		// and per-subnet limit.
		c := pipeSession(t, s, fmt.Sprintf("10.22.%d.1", i))
		pipeNegotiate(t, c)
		if _, err := c.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	grown := int64(heapInUse()) - int64(base)
	bound := s.cfg.maxBacklogTotal()
	var cost float64
	for _, info := range s.Sessions() {
		cost = max(cost, info.Cost)
	}
	if grown > bound {
		t.Fatalf("%d sessions hold unfinished lines of %d bytes: the heap grew by %d bytes, over the server-wide bound %d (highest session cost %.1f)",
			sessions, len(line), grown, bound, cost)
	}
	runtime.KeepAlive(s)
}

// batchCharges runs one batch of n copies of call on a new pipe session
// from ip and returns what the session was charged beyond its bytes in and
// out: the methods' own costs.
func batchCharges(t *testing.T, s *Server, ip, call string, n int) float64 {
	t.Helper()
	c := pipeSession(t, s, ip)
	pipeNegotiate(t, c)
	var sb strings.Builder
	sb.WriteString("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"jsonrpc":"2.0","id":%d,%s}`, i+1, call)
	}
	sb.WriteString("]\n")
	c.SetDeadline(time.Now().Add(30 * time.Second))
	go c.Write([]byte(sb.String()))
	r := bufioReader(c)
	answer, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(answer, []byte(`"error"`)) {
		t.Fatalf("%s: %.300s", call, answer)
	}
	// The session was charged its bytes out when the answer was queued,
	// before it was written: the cost is complete once it is read.
	// The count of bytes written follows the write: wait for it.
	var info *SessionInfo
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if info = openSessionFrom(s, ip); info == nil {
			t.Fatal("session gone")
		}
		if info.BytesOut >= uint64(len(answer)) || time.Now().After(deadline) {
			break
		}
	}
	return info.Cost - float64(info.BytesIn+info.BytesOut)/float64(s.cfg.BandwidthUnit)
}

// TestHeaderProofChargedAsItsWork: a cp_height proof reads every block
// hash of the proved header's 1024-block chunk and of the checkpoint's
// partial chunk and hashes them, on every request (about 0.8 ms at
// mainnet's height, hundreds of times a plain header's work), and the
// last hash of every other chunk. ElectrumX charges 1.0 more for a header
// with a proof than without (block_header: 1.25 against 0.25;
// block_headers: 1.0 more). A proof costs the session at least 1.0 more
// than the same header without one.
func TestHeaderProofChargedAsItsWork(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, nil)
	_, tip := fx.f.tip()
	const n = 50
	cases := []struct{ name, plain, proof string }{
		{"blockchain.block.header",
			`"method":"blockchain.block.header","params":[1]`,
			fmt.Sprintf(`"method":"blockchain.block.header","params":[1,%d]`, tip)},
		{"blockchain.block.headers",
			`"method":"blockchain.block.headers","params":[1,1]`,
			fmt.Sprintf(`"method":"blockchain.block.headers","params":[1,1,%d]`, tip)},
	}
	for i, tc := range cases {
		plain := batchCharges(t, s, fmt.Sprintf("10.30.%d.1", 2*i), tc.plain, n)
		proof := batchCharges(t, s, fmt.Sprintf("10.30.%d.1", 2*i+1), tc.proof, n)
		if proof-plain < 0.9*n {
			t.Errorf("%s: %d calls charged %.2f without a proof and %.2f with one, want at least %d more",
				tc.name, n, plain, proof, n)
		}
	}
}

// bufioReader reads a pipe session's answers.
func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReaderSize(c, 1<<20) }

// sessionObject returns the session whose client address is ip.
func sessionObject(s *Server, ip string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.sessions {
		if strings.HasPrefix(ss.remote, ip+":") {
			return ss
		}
	}
	return nil
}

// TestBatchHeldAnswersWithinBacklogBound: a batch's answers are kept until
// its last member is answered, and a member of a session over the soft
// cost limit waits up to RequestSleep before it runs, so a batch whose
// first member has a large answer and whose other members are pings holds
// that answer for minutes. Three sessions, each under the hard limit and
// within every per-IP and subnet limit, with ten such batches each, would
// hold about 216 MB of answers. What batches keep counts in the server's
// backlog, and past twice its total (8 × MaxSendBacklog, 128 MB by
// default) against the sessions keeping it: what they hold stays within
// that bound.
func TestBatchHeldAnswersWithinBacklogBound(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, nil)
	// A history of 76,000 entries: an answer of 7.2 MB, under MaxSend
	// and the history limit (81,817).
	fx.f.setExtraHistory(fx.shA, 76_000)
	var sb strings.Builder
	sb.WriteString(`[{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_history","params":["` + fx.shA.String() + `"]}`)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&sb, `,{"jsonrpc":"2.0","id":%d,"method":"server.ping"}`, i+2)
	}
	sb.WriteString("]\n")
	batch := []byte(sb.String())

	const sessions, batches = 3, 10 // Concurrency: ten batches of a session run at once
	base := heapInUse()
	started := s.RequestCount()
	var held []*session
	for i := 0; i < sessions; i++ {
		ip := fmt.Sprintf("10.40.%d.1", i)
		c := pipeSession(t, s, ip)
		pipeNegotiate(t, c)
		ss := sessionObject(s, ip)
		if ss == nil {
			t.Fatal("no session")
		}
		// The session has spent 8,000 on earlier requests: under the
		// hard limit, over the soft one, so each member waits about 2 s
		// before it runs.
		ss.charge(8000)
		held = append(held, ss)
		c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		for b := 0; b < batches; b++ {
			if _, err := c.Write(batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every batch has answered its history once its second member has
	// started, or its session has been disconnected for what its batches
	// hold, as a session that does not read its answers is.
	want := started + sessions + sessions*batches*2
	ended := func() bool {
		for _, ss := range held {
			if !ss.closed() {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(60 * time.Second); s.RequestCount() < want && !ended(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests started", s.RequestCount()-started, want-started)
		}
	}
	for _, ss := range held {
		if ss.closed() && ss.reason() != DisconnectNotReading {
			t.Fatalf("session %d disconnected as %v, not for what it holds", ss.id, ss.reason())
		}
	}
	grown := int64(heapInUse()) - int64(base)
	_, cached := s.answers.stats()
	heldBytes := grown - cached
	costs := ""
	for _, ss := range held {
		costs += fmt.Sprintf(" %.0f", ss.currentCost())
	}
	if bound := 2 * s.cfg.maxBacklogTotal(); heldBytes > bound {
		t.Fatalf("%d sessions (costs%s, hard limit %.0f) with %d batches each hold %d bytes of answers beyond the %d the answer cache holds, over twice the backlog total %d",
			sessions, costs, s.cfg.CostHardLimit, batches, heldBytes, cached, bound)
	}
}

// TestEmptyLinesCharged: empty lines are skipped (docs/PROTOCOL.md §2.1),
// but reading them is the server's work like reading any bytes: a client
// that sends nothing but newlines is charged its bytes in (BandwidthUnit)
// and they are counted as received. Uncharged, one connection streams
// hundreds of megabytes of newlines a minute into the server, each a pass
// of the read loop, at no cost, while the same bytes as requests would
// take it past the hard limit many times over.
func TestEmptyLinesCharged(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, nil)
	const ip = "10.50.0.1"
	c := pipeSession(t, s, ip)
	pipeNegotiate(t, c)
	before := openSessionFrom(s, ip)
	empty := bytes.Repeat([]byte("\r\n"), 500_000) // 1,000,000 bytes
	if _, err := c.Write(empty); err != nil {      // returns once the server read it all
		t.Fatal(err)
	}
	want := float64(len(empty)) / float64(s.cfg.BandwidthUnit)
	var info *SessionInfo
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if info = openSessionFrom(s, ip); info != nil && info.Cost-before.Cost >= want*0.9 {
			return
		}
	}
	t.Fatalf("%d bytes of empty lines read: the session's cost went from %.2f to %.2f and its bytes in from %d to %d, want at least %.0f more cost",
		len(empty), before.Cost, info.Cost, before.BytesIn, info.BytesIn, want*0.9)
}

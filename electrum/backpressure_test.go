package electrum

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestPipelinedNonReader checks the read pause: a client that pipelines
// requests with large answers and reads none is no longer read once
// readPauseBytes of answers wait for it, so the server holds a bounded
// backlog for it (not MaxSendBacklog), serves another client meanwhile,
// and cuts it off when a write does not finish within WriteTimeout.
func TestPipelinedNonReader(t *testing.T) {
	const banner = 100_000
	fx := newFixture(t, func(c *Config) {
		c.Banner = strings.Repeat("b", banner)
		c.WriteTimeout = 2 * time.Second
		c.CostHardLimit = -1
	})
	good := fx.client(t, "1.4")
	conn, err := net.Dial("tcp", fx.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	conn.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["slow","1.4"]}` + "\n"))
	// 500 banners (50 MB of answers) asked for, none read.
	var req strings.Builder
	for i := 0; i < 500; i++ {
		req.WriteString(`{"jsonrpc":"2.0","id":1,"method":"server.banner"}` + "\n")
	}
	go func() {
		conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		conn.Write([]byte(req.String()))
	}()
	var slow *session
	for deadline := time.Now().Add(10 * time.Second); slow == nil && time.Now().Before(deadline); {
		fx.s.mu.Lock()
		for ss := range fx.s.sessions {
			if ss.remote == conn.LocalAddr().String() {
				slow = ss
			}
		}
		fx.s.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	if slow == nil {
		t.Fatal("the slow session never appeared")
	}
	// The backlog never goes over the pause plus the answers of the
	// requests already running and of the one read just before the
	// pause (its slot freed by one of them).
	bound := readPauseBytes + (fx.s.cfg.Concurrency+2)*(banner+100)
	most := 0
	for !slow.closed() {
		slow.sendMu.Lock()
		most = max(most, slow.queued)
		slow.sendMu.Unlock()
		good.must(nil, "server.ping")
		time.Sleep(5 * time.Millisecond)
	}
	if most > bound {
		t.Fatalf("%d bytes queued for a client that reads nothing, want at most %d", most, bound)
	}
	if r := slow.reason(); r != DisconnectWriteFailed {
		t.Fatalf("the non-reader was disconnected for %v, want %v", r, DisconnectWriteFailed)
	}
	good.must(nil, "server.ping")
}

// TestBatchOverLimitNotDecoded checks that a batch over MaxBatch is refused
// with code 4 whether or not it opens with server.version, and that the
// session goes on.
func TestBatchOverLimitNotDecoded(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.MaxBatch = 5 })
	conn, err := net.Dial("tcp", fx.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(conn)
	read := func() string {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	batch := func(first string, n int) string {
		items := []string{first}
		for i := 1; i < n; i++ {
			items = append(items, `{"jsonrpc":"2.0","id":9,"method":"server.ping"}`)
		}
		return "[" + strings.Join(items, ",") + "]\n"
	}
	// Opening with server.version: refused whole, nothing negotiated.
	conn.Write([]byte(batch(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["c","1.4"]}`, 10)))
	if line := read(); !strings.Contains(line, `"code":4`) || !strings.Contains(line, "more than 5 requests") {
		t.Fatalf("batch of 10 opening with server.version: %s", line)
	}
	conn.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["c","1.4"]}` + "\n"))
	if line := read(); !strings.Contains(line, `"result":[`) {
		t.Fatalf("server.version after the refused batch: %s", line)
	}
	// Negotiated: a batch of 6 is refused, one of 5 answered.
	conn.Write([]byte(batch(`{"jsonrpc":"2.0","id":9,"method":"server.ping"}`, 6)))
	if line := read(); !strings.Contains(line, `"code":4`) {
		t.Fatalf("batch of 6: %s", line)
	}
	conn.Write([]byte(batch(`{"jsonrpc":"2.0","id":9,"method":"server.ping"}`, 5)))
	var answers []rpcResponse
	if err := json.Unmarshal([]byte(read()), &answers); err != nil || len(answers) != 5 {
		t.Fatalf("batch of 5: %v %v", answers, err)
	}
}

// TestTotalBacklog checks the server-wide bound on answers waiting for
// clients: many non-readers, each under its own MaxSendBacklog, together
// over 4 times it, are disconnected as not reading (the ones with a
// backlog) while a reading client is served.
func TestTotalBacklog(t *testing.T) {
	const banner = 100_000
	fx := newFixture(t, func(c *Config) {
		c.Banner = strings.Repeat("b", banner)
		c.MaxSendBacklog = 1_000_000
		c.MaxSessionsPerIP = -1
		c.Concurrency = 1
		c.WriteTimeout = time.Minute
		c.CostHardLimit = -1
	})
	good := fx.client(t, "1.4")
	var req strings.Builder
	req.WriteString(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["slow","1.4"]}` + "\n")
	for i := 0; i < 100; i++ {
		req.WriteString(`{"jsonrpc":"2.0","id":1,"method":"server.banner"}` + "\n")
	}
	// 40 clients that read nothing: each could hold 612 KB (the read
	// pause and one running answer), 24 MB together.
	for i := 0; i < 40; i++ {
		c, err := net.Dial("tcp", fx.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.(*net.TCPConn).SetReadBuffer(4096)
		go func() {
			c.SetWriteDeadline(time.Now().Add(time.Minute))
			c.Write([]byte(req.String()))
		}()
	}
	cap := fx.s.cfg.maxBacklogTotal()
	bound := cap + 40*(totalBacklogMinOwn+banner+100)
	most := int64(0)
	deadline := time.Now().Add(30 * time.Second)
	for fx.s.counters.disconnected[DisconnectNotReading].Load() == 0 && time.Now().Before(deadline) {
		most = max(most, fx.s.backlog.Load())
		good.must(nil, "server.ping")
		time.Sleep(5 * time.Millisecond)
	}
	if fx.s.counters.disconnected[DisconnectNotReading].Load() == 0 {
		t.Fatalf("no non-reader disconnected; %d bytes waiting for all sessions (bound %d)", fx.s.backlog.Load(), cap)
	}
	for i := 0; i < 100; i++ {
		most = max(most, fx.s.backlog.Load())
		time.Sleep(time.Millisecond)
	}
	if most > bound {
		t.Fatalf("%d bytes waited for all sessions, want at most %d", most, bound)
	}
	good.must(nil, "server.ping")
}

// TestReadingWalletKeptPastTotalBacklog: clients that do not read hold the
// server's total backlog, each within its own MaxSendBacklog, when a block
// pays every one of a wallet's 1,000 addresses. The wallet reads its
// answers, so it gets all of its notifications, queued together, and is
// not disconnected as not reading for the others' backlog.
func TestReadingWalletKeptPastTotalBacklog(t *testing.T) {
	fx := newFixtureChain(t)
	s, addr := startServer(t, fx.f, func(c *Config) {
		c.MaxSendBacklog = 400_000 // total 1,600,000
		c.Banner = strings.Repeat("b", 60_000)
		c.MaxSessionsPerIP = -1
	})
	// Four clients that send requests and never read: each holds 360 KB,
	// under its own MaxSendBacklog.
	for i := 0; i < 4; i++ {
		cli, srv := net.Pipe()
		t.Cleanup(func() { cli.Close() })
		go s.runSession(newLineConn(srv, s.cfg.MaxRecv), &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("10.9.%d.1", i)), Port: 40000}, TCP)
		go func() {
			cli.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["x","1.4"]}` + "\n"))
			for j := 1; j <= 6; j++ {
				cli.Write([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"server.banner"}`+"\n", j)))
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for s.backlog.Load() < 4*360_000 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("non-readers hold %d bytes of backlog (total limit %d)", s.backlog.Load(), s.cfg.maxBacklogTotal())

	// A wallet of 1,000 addresses, reading everything.
	scripts, batch := thousandAddresses()
	w := dial(t, addr)
	w.negotiate("1.4")
	w.send(batch)
	select {
	case <-w.batches:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to the subscriptions")
	}
	// The writer writes in order: once the ping's answer is read, the
	// subscriptions' answer no longer counts as unread.
	w.must(nil, "server.ping")
	payAll(t, fx, s, scripts)
	got := 0
	for got < len(scripts) {
		select {
		case <-w.notes:
			got++
			continue
		case <-w.done:
		case <-time.After(10 * time.Second):
		}
		break
	}
	if got < len(scripts) {
		for end := time.Now().Add(5 * time.Second); s.Stats().Disconnected["not_reading"] == 0 && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("the reading wallet got %d of %d notifications; sessions disconnected as not reading: %d",
			got, len(scripts), s.Stats().Disconnected["not_reading"])
	}
}

// TestTotalBacklogBoundedPastTwice: a block's notifications for a session
// count against it past twice the total backlog, so the total stays
// bounded however many sessions a block notifies: 60 wallets of the same
// 1,000 addresses that stop reading once subscribed are sent 135 KB each,
// 8 MB in all, over twice the total of 1.6 MB.
func TestTotalBacklogBoundedPastTwice(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, func(c *Config) {
		c.MaxSendBacklog = 400_000 // total 1,600,000
		c.MaxSessionsPerIP = -1
		c.MaxSubsPerIP = 1000
		c.CostHardLimit = -1 // 60,000 subscriptions from one subnet
	})
	scripts, batch := thousandAddresses()
	for i := 0; i < 60; i++ {
		cli, srv := net.Pipe()
		t.Cleanup(func() { cli.Close() })
		go s.runSession(newLineConn(srv, s.cfg.MaxRecv), &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("10.8.%d.1", i)), Port: 40000}, TCP)
		r := bufio.NewReader(cli)
		go cli.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["x","1.4"]}` + "\n" + batch + "\n"))
		for _, what := range []string{"version", "subscriptions"} {
			line, err := r.ReadBytes('\n')
			if err != nil || bytes.Contains(line, []byte(`"error"`)) {
				t.Fatalf("session %d: the %s answer %.200s: %v", i, what, line, err)
			}
		}
	}
	payAll(t, fx, s, scripts)
	// The sessions cut give their queues back as they close.
	most := 2*s.cfg.maxBacklogTotal() + 200_000
	for end := time.Now().Add(10 * time.Second); s.backlog.Load() > most && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := s.backlog.Load(); n > most {
		t.Fatalf("%d bytes wait for all sessions, over twice the total and a block's notifications (%d); %d sessions disconnected as not reading",
			n, most, s.Stats().Disconnected["not_reading"])
	}
}

// thousandAddresses returns the scripts of a wallet of 1,000 addresses and
// the batch that subscribes to them.
func thousandAddresses() ([][]byte, string) {
	scripts := make([][]byte, 1000)
	var sb strings.Builder
	sb.WriteString("[")
	for i := range scripts {
		scripts[i] = append([]byte{0x00, 0x14, 0xab, byte(i >> 8), byte(i)}, make([]byte, 17)...)
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]}`,
			i+1, indexers.ScriptHashFromScript(scripts[i]))
	}
	sb.WriteString("]")
	return scripts, sb.String()
}

// payAll mines a block paying every one of scripts and has s notify it.
func payAll(t *testing.T, fx *fixture, s *Server, scripts [][]byte) {
	t.Helper()
	outs := make([]*wire.TxOut, len(scripts))
	for i, sc := range scripts {
		outs[i] = wire.NewTxOut(1000, sc)
	}
	tx := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, outs...)
	hdr, h, touched := fx.f.mine(fx.a, tx)
	s.NotifyScriptHashes(touched)
	s.NotifyTip(hdr, h)
	if err := s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
}

// failingListener fails its first Accept calls with EMFILE, as a process
// out of file descriptors does.
type failingListener struct {
	net.Listener
	fails int
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptErrorsPass checks that the TCP listener keeps serving after
// Accept fails for want of file descriptors (a connection flood): it used
// to stop accepting for good on any error but a timeout.
func TestAcceptErrorsPass(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, func(c *Config) {
		c.Listeners = []Listener{{Transport: TCP, Listener: &failingListener{Listener: l, fails: 3}}}
	})
	c := dialFrom(t, l.Addr().String(), nil)
	c.negotiate("1.4")
	c.must(nil, "server.ping")
	_ = fx
}

// TestSendBufferCapped checks that a client connection's kernel send and
// receive buffers are fixed at sessionSendBuffer and sessionRecvBuffer
// (Linux reports them doubled) instead of growing with autotuning, so
// clients that do not read cannot take the machine's TCP memory, nor a
// refused frame's megabytes be copied through the kernel.
func TestSendBufferCapped(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	c.must(nil, "server.ping")
	fx.s.mu.Lock()
	var conn net.Conn
	for ss := range fx.s.sessions {
		conn = ss.conn.(*lineConn).Conn
	}
	fx.s.mu.Unlock()
	rc, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size, rsize int
	var serr, rerr error
	rc.Control(func(fd uintptr) {
		size, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		rsize, rerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	})
	if serr != nil || rerr != nil {
		t.Fatal(serr, rerr)
	}
	// Linux doubles what is set, and reports what autotuning chose when
	// nothing was.
	if size != 2*sessionSendBuffer {
		t.Fatalf("send buffer of %d bytes, want %d (fixed)", size, 2*sessionSendBuffer)
	}
	if rsize != 2*sessionRecvBuffer {
		t.Fatalf("receive buffer of %d bytes, want %d (fixed)", rsize, 2*sessionRecvBuffer)
	}
}

// TestBatchHeldAnswersCounted: the answers a batch keeps until its last
// member is answered count as held for its session, and in the server's
// total, from the moment they are kept; once the batch is queued and read,
// nothing of them is left counted.
func TestBatchHeldAnswersCounted(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, func(c *Config) { c.RequestSleep = 2 * time.Second })
	fx.f.setExtraHistory(fx.shA, 20_000) // an answer of about 1.9 MB
	const ip = "10.62.0.1"
	c := pipeSession(t, s, ip)
	pipeNegotiate(t, c)
	ss := sessionObject(s, ip)
	// Over the soft limit: each member waits most of RequestSleep, and
	// the history is held while the pings after it wait.
	ss.charge(8000)
	started := s.RequestCount()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	go c.Write([]byte(`[{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_history","params":["` + fx.shA.String() + `"]},` +
		`{"jsonrpc":"2.0","id":2,"method":"server.ping"},{"jsonrpc":"2.0","id":3,"method":"server.ping"}]` + "\n"))
	held := func() int {
		ss.sendMu.Lock()
		defer ss.sendMu.Unlock()
		return ss.held
	}
	queued := func() int {
		ss.sendMu.Lock()
		defer ss.sendMu.Unlock()
		return ss.queued + ss.held
	}
	for deadline := time.Now().Add(30 * time.Second); held() < 1_000_000; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the history a batch holds is not counted as held")
		}
	}
	// Counted while it is held: the last ping waits more than a second
	// after the history is kept before it starts.
	if n := s.RequestCount() - started; n >= 3 {
		t.Fatalf("the history was counted as held once %d members had started, not when it was kept", n)
	}
	if total := s.backlog.Load(); total < 1_000_000 {
		t.Fatalf("a batch holds a history; the server's backlog counts %d bytes", total)
	}
	answer, err := bufioReader(c).ReadBytes('\n')
	if err != nil || !bytes.Contains(answer, []byte(`"id":3`)) {
		t.Fatalf("batch answer %.200q: %v", answer, err)
	}
	for deadline := time.Now().Add(30 * time.Second); queued() != 0 || s.backlog.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the batch's answer was read; %d bytes are still counted for the session, %d for all", queued(), s.backlog.Load())
		}
	}
	if ss.closed() {
		t.Fatal("session closed")
	}
}

// TestLoneBatchOverBacklogAnswered: as a session with nothing else waiting
// may always be queued one answer, a batch whose answers together exceed
// MaxSendBacklog is answered when nothing else waits for its session.
func TestLoneBatchOverBacklogAnswered(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, func(c *Config) { c.MaxSendBacklog = 1_000_000 })
	fx.f.setExtraHistory(fx.shA, 8_000) // an answer of about 770 KB
	const ip = "10.62.1.1"
	c := pipeSession(t, s, ip)
	pipeNegotiate(t, c)
	// Nothing else waits: the version's answer, read from the pipe, may
	// still count until its write has returned to the session's writer.
	ss := sessionObject(s, ip)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		ss.sendMu.Lock()
		queued := ss.queued
		ss.sendMu.Unlock()
		if queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the version's answer, read, still counts %d bytes", queued)
		}
	}
	get := `{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.get_history","params":["` + fx.shA.String() + `"]}`
	c.SetDeadline(time.Now().Add(30 * time.Second))
	go c.Write([]byte("[" + fmt.Sprintf(get, 1) + "," + fmt.Sprintf(get, 2) + "]\n"))
	answer, err := bufioReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var rs []rpcResponse
	if err := json.Unmarshal(answer, &rs); err != nil || len(rs) != 2 || rs[0].Error != nil || rs[1].Error != nil {
		t.Fatalf("a batch of two histories of %d bytes together: %.200q %v", len(answer), answer, err)
	}
}

package electrum

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// benchConfig turns off the limits that protect a public server from one
// busy client, so the benchmarks measure the server itself.
func benchConfig(c *Config) {
	c.CostHardLimit = -1
	c.MaxSessionsPerIP = -1
	c.MaxSessions = 1 << 20
}

// raiseFileLimit lifts the soft RLIMIT_NOFILE towards want (up to the hard
// limit) and skips the benchmark if fewer than need descriptors are allowed.
func raiseFileLimit(tb testing.TB, want, need uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatal(err)
	}
	if lim.Cur < want {
		lim.Cur = min(want, lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			tb.Fatal(err)
		}
	}
	if lim.Cur < need {
		tb.Skipf("only %d file descriptors allowed, %d needed", lim.Cur, need)
	}
}

// rawSession is a benchmark client: a negotiated connection that sends one
// request at a time.
type rawSession struct {
	c net.Conn
	r *bufio.Reader
}

// openRaw connects and negotiates.
func openRaw(tb testing.TB, addr string) *rawSession {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	s := &rawSession{c: c, r: bufio.NewReaderSize(c, 4<<10)}
	s.roundTrip(tb, []byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["bench","1.4"]}`+"\n"))
	return s
}

// roundTrip sends a request line and reads one answer line.
func (s *rawSession) roundTrip(tb testing.TB, req []byte) []byte {
	if _, err := s.c.Write(req); err != nil {
		tb.Fatal(err)
	}
	line, err := s.r.ReadBytes('\n')
	if err != nil {
		tb.Fatal(err)
	}
	if bytes.Contains(line, []byte(`"error"`)) {
		tb.Fatalf("error answer %s", line)
	}
	return line
}

// fanOut pays count fresh outputs to scripts(i) from one reserved coin in a
// block, and returns the change coin.
func (n *realNode) fanOut(tb testing.TB, count int, script func(i int) []byte, value int64) testchain.Coin {
	change := &n.h.Pool.Spendable[1]
	coin := n.coin()
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: coin.OutPoint, SignatureScript: coin.Script.SigScript, Witness: coin.Script.Witness, Sequence: wire.MaxTxInSequenceNum})
	for i := 0; i < count; i++ {
		tx.AddTxOut(wire.NewTxOut(value, script(i)))
	}
	tx.AddTxOut(wire.NewTxOut(coin.Value-int64(count)*value-100_000, change.PkScript))
	n.mine(nil, tx)
	return changeCoin(tx, uint32(count), change)
}

// historyScript is the script of the 100-entry history benchmark.
var historyScript = append([]byte{0x00, 0x14}, bytes.Repeat([]byte{0x77}, 20)...)

// benchNode is a real node whose historyScript has a 100-transaction
// history: one fan-out block, then 100 transactions paying it.
func benchNode(b testing.TB) *realNode {
	n := newRealNode(b, 0, benchConfig)
	change := &n.h.Pool.Spendable[1]
	fan := n.fanOut(b, 100, func(int) []byte { return change.PkScript }, 1_000_000)
	fanTx := fan.OutPoint.Hash
	var txs []*wire.MsgTx
	for i := 0; i < 100; i++ {
		c := testchain.Coin{OutPoint: wire.OutPoint{Hash: fanTx, Index: uint32(i)}, Value: 1_000_000, Script: change}
		txs = append(txs, testchain.SpendTx([]testchain.Coin{c}, wire.NewTxOut(900_000, historyScript)))
	}
	n.mine(nil, txs...)
	h, _, err := n.idx.History(indexers.ScriptHashFromScript(historyScript), 0)
	if err != nil || len(h) != 100 {
		b.Fatalf("history of %d entries: %v", len(h), err)
	}
	return n
}

// BenchmarkRequests measures requests per second from 100 concurrent
// sessions, each sending one request at a time, on the real index.
func BenchmarkRequests(b *testing.B) {
	n := benchNode(b)
	sh := indexers.ScriptHashFromScript(historyScript).String()
	cases := []struct{ name, req string }{
		{"get_balance", `{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_balance","params":["` + sh + `"]}`},
		{"get_history_100", `{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_history","params":["` + sh + `"]}`},
		{"block_header", `{"jsonrpc":"2.0","id":1,"method":"blockchain.block.header","params":[100]}`},
		// Every header of the chain, as a wallet syncing asks in chunks
		// of 2016.
		{"block_headers", `{"jsonrpc":"2.0","id":1,"method":"blockchain.block.headers","params":[0,2016]}`},
	}
	const sessions = 100
	clients := make([]*rawSession, sessions)
	for i := range clients {
		clients[i] = openRaw(b, n.addr)
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			req := []byte(tc.req + "\n")
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for _, c := range clients {
				wg.Add(1)
				go func(c *rawSession) {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						c.roundTrip(b, req)
					}
				}(c)
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

// BenchmarkIdleSessionMemory measures the heap and stack a negotiated idle
// session costs (both ends of the loopback connection are in this process;
// the client end is a bare net.Conn).
func BenchmarkIdleSessionMemory(b *testing.B) {
	raiseFileLimit(b, 50_000, 4500)
	n := newRealNode(b, 0, benchConfig)
	const count = 2000
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		clients := make([]*rawSession, count)
		for j := range clients {
			clients[j] = openRaw(b, n.addr)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		used := (after.HeapInuse + after.StackInuse) - (before.HeapInuse + before.StackInuse)
		b.ReportMetric(float64(used)/count, "bytes/session")
		for _, c := range clients {
			c.c.Close()
		}
		for n.srv.SessionCount() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// BenchmarkTenThousandSessions holds 10,000 negotiated sessions open and
// pings each once. The client ends live in a child process (this test binary
// running TestHoldSessions) so that each process needs about 10,000 file
// descriptors rather than one needing 20,000.
func BenchmarkTenThousandSessions(b *testing.B) {
	raiseFileLimit(b, 50_000, 10_500)
	n := newRealNode(b, 0, benchConfig)
	const count = 10_000
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHoldSessions$", "-test.v")
		cmd.Env = append(os.Environ(), holdAddrEnv+"="+n.addr, fmt.Sprintf("%s=%d", holdCountEnv, count))
		stdin, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		var opened time.Duration
		for lines.Scan() {
			f := strings.Fields(lines.Text())
			if len(f) == 0 {
				continue
			}
			if f[0] == "OPEN" {
				opened = time.Since(start)
				if got := n.srv.SessionCount(); got != count {
					b.Fatalf("%d sessions open, want %d", got, count)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse+ms.StackInuse)/(1<<20), "server-MiB")
				b.ReportMetric(opened.Seconds(), "s-to-open")
			}
			if f[0] == "PINGED" {
				secs, _ := strconv.ParseFloat(f[1], 64)
				b.ReportMetric(count/secs, "pings/s")
				break
			}
			if f[0] == "FAIL" {
				b.Fatal(lines.Text())
			}
		}
		if opened == 0 {
			b.Fatal("helper did not open its sessions")
		}
		stdin.Close()
		cmd.Wait()
		for n.srv.SessionCount() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// holdAddrEnv and holdCountEnv configure TestHoldSessions.
const (
	holdAddrEnv  = "ELECTRUM_HOLD_SESSIONS_ADDR"
	holdCountEnv = "ELECTRUM_HOLD_SESSIONS_COUNT"
)

// TestHoldSessions is the client side of BenchmarkTenThousandSessions; it
// does nothing unless the benchmark runs it: it opens and negotiates the
// sessions, prints OPEN, pings each once, prints PINGED <seconds>, and holds
// them until its standard input closes.
func TestHoldSessions(t *testing.T) {
	addr := os.Getenv(holdAddrEnv)
	if addr == "" {
		t.Skip("client helper of BenchmarkTenThousandSessions")
	}
	count, _ := strconv.Atoi(os.Getenv(holdCountEnv))
	raiseFileLimit(t, 50_000, uint64(count)+500)
	clients := make([]*rawSession, count)
	for j := range clients {
		clients[j] = openRaw(t, addr)
	}
	fmt.Println("OPEN")
	start := time.Now()
	for _, c := range clients {
		c.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"server.ping"}`+"\n"))
	}
	fmt.Printf("PINGED %f\n", time.Since(start).Seconds())
	io.Copy(io.Discard, os.Stdin)
	for _, c := range clients {
		c.c.Close()
	}
}

// BenchmarkNotifyLatency measures the time from a block being connected to
// the last notification arriving, with 1,000 sessions holding 10
// subscriptions each, every one of the 10,000 scripts paid by the block.
func BenchmarkNotifyLatency(b *testing.B) {
	raiseFileLimit(b, 50_000, 2500)
	n := newRealNode(b, 0, benchConfig)
	const sessions, perSession = 1000, 10
	script := func(iter, i int) []byte {
		s := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{0x33}, 20)...)
		s[2], s[3], s[4] = byte(i), byte(i>>8), byte(iter)
		return s
	}
	// Scripts are reused across iterations (each block pays them again);
	// the first block gives them a history so every iteration changes a
	// non-empty status.
	change := n.fanOut(b, sessions*perSession, func(i int) []byte { return script(0, i) }, 1000)

	var received atomic.Int64
	var lastAt atomic.Int64
	conns := make([]net.Conn, sessions)
	for s := 0; s < sessions; s++ {
		c, err := net.Dial("tcp", n.addr)
		if err != nil {
			b.Fatal(err)
		}
		conns[s] = c
		var req bytes.Buffer
		req.WriteString(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["bench","1.4"]}` + "\n")
		for k := 0; k < perSession; k++ {
			sh := indexers.ScriptHashFromScript(script(0, s*perSession+k))
			fmt.Fprintf(&req, `{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]}`+"\n", k+1, sh)
		}
		c.Write(req.Bytes())
		r := bufio.NewReader(c)
		for k := 0; k <= perSession; k++ {
			if _, err := r.ReadBytes('\n'); err != nil {
				b.Fatal(err)
			}
		}
		go func() {
			for {
				line, err := r.ReadBytes('\n')
				if err != nil {
					return
				}
				if bytes.Contains(line, []byte(`"method":"blockchain.scripthash.subscribe"`)) {
					received.Add(1)
					lastAt.Store(time.Now().UnixNano())
				}
			}
		}()
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	var connectedAt atomic.Int64
	n.h.Chain.Subscribe(func(note *blockchain.Notification) {
		if note.Type == blockchain.NTBlockConnected {
			connectedAt.Store(time.Now().UnixNano())
		}
	})
	var total, queued time.Duration
	for i := 0; i < b.N; i++ {
		want := received.Load() + sessions*perSession
		tx := wire.NewMsgTx(2)
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: change.OutPoint, SignatureScript: change.Script.SigScript, Witness: change.Script.Witness, Sequence: wire.MaxTxInSequenceNum})
		for k := 0; k < sessions*perSession; k++ {
			tx.AddTxOut(wire.NewTxOut(1000, script(0, k)))
		}
		tx.AddTxOut(wire.NewTxOut(change.Value-sessions*perSession*1000-100_000, change.Script.PkScript))
		change = changeCoin(tx, sessions*perSession, change.Script)
		b.StartTimer()
		n.mine(nil, tx)
		n.waitNotified()
		queuedAt := time.Now().UnixNano()
		for received.Load() < want {
			time.Sleep(100 * time.Microsecond)
		}
		b.StopTimer()
		total += time.Duration(lastAt.Load() - connectedAt.Load())
		queued += time.Duration(queuedAt - connectedAt.Load())
		if got := received.Load(); got != want {
			b.Fatalf("%d notifications, want %d (one per change per session)", got, want)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-connected-to-last")
	b.ReportMetric(float64(queued.Milliseconds())/float64(b.N), "ms-connected-to-queued")
	// The share of that spent reading statuses: the same 10,000 statuses
	// computed one after another.
	b.StopTimer()
	start := time.Now()
	for k := 0; k < sessions*perSession; k++ {
		if _, _, err := n.srv.status(indexers.ScriptHashFromScript(script(0, k))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(sessions*perSession), "µs/status-read")
}

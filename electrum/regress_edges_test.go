package electrum

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// gatedBackend is the fake chain with some scripts' history reads held
// until their gate is opened, so that a test decides when a batch member
// is answered.
type gatedBackend struct {
	*fakeBackend
	mu      sync.Mutex
	gates   map[indexers.ScriptHash]chan struct{}
	waiting map[indexers.ScriptHash]int
}

func newGatedBackend(f *fakeBackend) *gatedBackend {
	return &gatedBackend{fakeBackend: f, gates: make(map[indexers.ScriptHash]chan struct{}),
		waiting: make(map[indexers.ScriptHash]int)}
}

// gate makes the history reads of sh wait until open is called.
func (g *gatedBackend) gate(sh indexers.ScriptHash) (open func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.gates[sh] = ch
	g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// waiters is how many history reads of sh wait at its gate.
func (g *gatedBackend) waiters(sh indexers.ScriptHash) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting[sh]
}

func (g *gatedBackend) History(sh indexers.ScriptHash, limit int) ([]indexers.HistoryEntry, indexers.Tip, error) {
	g.mu.Lock()
	ch := g.gates[sh]
	if ch != nil {
		g.waiting[sh]++
	}
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return g.fakeBackend.History(sh, limit)
}

// TestConcurrentBatchesOfPromptReaderNotCutAsNotReading: a wallet that
// pipelines three batches, each a history of about 6.3 MB (within the
// default MaxSend of 8.1 MB) plus short members, and reads every answer as
// soon as it is written, never has more than one batch's answer waiting
// unread. It keeps its session: each batch is answered in turn.
func TestConcurrentBatchesOfPromptReaderNotCutAsNotReading(t *testing.T) {
	fx := newFixtureChain(t)
	g := newGatedBackend(fx.f)
	// Defaults (MaxSendBacklog 16,000,000, MaxSend 8,100,000), with places
	// for the members that wait at their gates.
	s, _ := startServer(t, g, func(c *Config) { c.Workers = 8 })
	fx.f.setExtraHistory(fx.shA, 70_000) // an answer of about 6.3 MB
	first := indexers.ScriptHash{0xf1}
	openFirst := g.gate(first)
	t.Cleanup(openFirst)
	var lasts [3]indexers.ScriptHash
	var openLast [3]func()
	for i := range lasts {
		lasts[i] = indexers.ScriptHash{0xe0, byte(i)}
		openLast[i] = g.gate(lasts[i])
		t.Cleanup(openLast[i])
	}
	const ip = "10.63.0.1"
	c := pipeSession(t, s, ip)
	pipeNegotiate(t, c)
	c.SetDeadline(time.Now().Add(60 * time.Second))
	get := `{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.get_history","params":["%s"]}`
	var lines []byte
	for i := range lasts {
		lines = fmt.Appendf(lines, "[%s,%s,%s]\n", fmt.Sprintf(get, 10*i+1, first.String()),
			fmt.Sprintf(get, 10*i+2, fx.shA.String()), fmt.Sprintf(get, 10*i+3, lasts[i].String()))
	}
	go c.Write(lines)
	// All three batches are read and wait at their first member: nothing
	// is queued for the session yet.
	for deadline := time.Now().Add(30 * time.Second); g.waiters(first) < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 batches started", g.waiters(first))
		}
	}
	// Each batch now keeps its history and waits at its last member.
	openFirst()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		n := 0
		for _, sh := range lasts {
			n += g.waiters(sh)
		}
		if n == 3 || time.Now().After(deadline) || sessionObject(s, ip) == nil {
			break
		}
	}
	r := bufioReader(c)
	for i := range lasts {
		openLast[i]()
		line, err := r.ReadBytes('\n')
		if err != nil {
			ss := sessionObject(s, ip)
			t.Fatalf("batch %d of a client reading every answer: %v (session open: %v, reason %v)", i, err,
				ss != nil && !ss.closed(), s.Stats().Disconnected)
		}
		var rs []rpcResponse
		if err := json.Unmarshal(line, &rs); err != nil || len(rs) != 3 {
			t.Fatalf("batch %d answered %.200q: %v", i, line, err)
		}
		for _, a := range rs {
			if a.Error != nil {
				t.Fatalf("batch %d: member answered %+v", i, a.Error)
			}
		}
	}
}

// TestMidSizedBatchNotRefusedWhileLongLinesHoldBudget: the budget for
// requests being read bounds what their buffers take past keptBuffer (64
// KiB; docs/PROTOCOL.md §2.1, docs/OPERATIONS.md). A batch of 5 KB, as a
// wallet sends for a hundred addresses, needs no buffer past 64 KiB, so it
// is answered however much of the budget long unfinished lines hold.
func TestMidSizedBatchNotRefusedWhileLongLinesHoldBudget(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, func(c *Config) {
		c.MaxRecv = 100_000
		c.MaxSendBacklog = 50_000 // the budget is 4 × MaxRecv, 400,000
	})
	// Three lines of 90 KB, unfinished, hold buffers past keptBuffer.
	head := []byte(`{"jsonrpc":"2.0","id":1,"method":"server.ping"` + strings.Repeat(" ", 90_000))
	for i := 0; i < 3; i++ {
		c := pipeSession(t, s, fmt.Sprintf("10.64.%d.1", i))
		pipeNegotiate(t, c)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write(head); err != nil { // returns once read
			t.Fatal(err)
		}
	}
	var batch []string
	for i := 0; len(strings.Join(batch, ",")) < 5_000; i++ {
		batch = append(batch, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"server.ping"}`, i))
	}
	line := "[" + strings.Join(batch, ",") + "]\n"
	c := pipeSession(t, s, "10.64.9.1")
	pipeNegotiate(t, c)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	go c.Write([]byte(line))
	answer, err := bufioReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var rs []rpcResponse
	if err := json.Unmarshal(answer, &rs); err != nil || len(rs) != len(batch) {
		t.Fatalf("a batch of %d bytes (%d pings), no buffer past 64 KiB needed, while long lines hold %d of the %d-byte budget: answered %.200q",
			len(line), len(batch), s.cfg.lineBudget()-available(s), s.cfg.lineBudget(), answer)
	}
}

// available is what the budget for requests being read has left.
func available(s *Server) int64 {
	var n int64
	for step := int64(1 << 20); step > 0; step /= 2 {
		for s.lines.TryAcquire(step) {
			n += step
		}
	}
	s.lines.Release(n)
	return n
}

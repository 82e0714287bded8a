package electrum

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/sync/semaphore"
)

// pings returns a batch of n server.ping requests, then tail before its
// closing bracket.
func pings(n int, tail string) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"server.ping"}`, i)
	}
	b.WriteString(tail)
	b.WriteByte(']')
	return b.Bytes()
}

// TestDecodeOverLimit checks how a batch over the limit is refused: from
// the members up to the one over the limit, whatever follows.
func TestDecodeOverLimit(t *testing.T) {
	const limit = 100
	for _, tc := range []struct {
		name  string
		frame []byte
		// want: "batch" with the number of requests decoded and the
		// count, or "parse" for a parse error.
		want          string
		decoded, size int
	}{
		{"at the limit", pings(limit, ""), "batch", limit, limit},
		{"one over", pings(limit+1, ""), "batch", 1, limit + 1},
		{"far over", pings(10_000, ""), "batch", 1, limit + 1},
		{"far over, invalid after the limit", pings(10_000, `,{"id":1,]`), "batch", 1, limit + 1},
		{"far over, not UTF-8 after the limit", pings(10_000, ",\"\xff\""), "batch", 1, limit + 1},
		{"not UTF-8 within the limit", append([]byte("[\"\xff\","), pings(10_000, "")[1:]...), "parse", 0, 0},
		{"invalid within the limit", append([]byte(`[{"id":1,}`), pings(10_000, "")[1:]...), "parse", 0, 0},
		{"at the limit, invalid after", pings(limit, `,{"id":1,]`), "parse", 0, 0},
		{"spaces between members", []byte("[ " + strings.Repeat(`{"id":1,"method":"server.ping"} , `, limit) + `{"id":2,"method":"server.ping"} ]`), "batch", 1, limit + 1},
		{"members of every kind", []byte(`[1,"a",[2,{"b":"]"}],null,true` + strings.Repeat(`,{}`, limit) + `]`), "batch", 1, limit + 1},
		// Found by FuzzTCPSession: a string left open at the end of the
		// frame took the member past it.
		{"a string left open", []byte(`[{""":["",["",""]]},{"",`), "parse", 0, 0},
		{"a backslash at the end", []byte(`["a","b\`), "parse", 0, 0},
		{"a string left open after the limit", append(pings(limit+1, ""), `,"abc`...), "batch", 1, limit + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := decodeMessageLimit(tc.frame, limit)
			switch tc.want {
			case "parse":
				if m.err == nil || m.err.Code != codeParseError {
					t.Fatalf("got %+v, want a parse error", m)
				}
			case "batch":
				if m.err != nil || !m.batch || len(m.requests) != tc.decoded || m.size != tc.size {
					t.Fatalf("got error %v, batch %v, %d decoded, size %d; want %d decoded, size %d", m.err, m.batch, len(m.requests), m.size, tc.decoded, tc.size)
				}
				if m.count() > limit != (tc.size > limit) {
					t.Fatalf("count %d against limit %d", m.count(), limit)
				}
			}
		})
	}
	// Without a limit, every member is decoded.
	if m := decodeMessageLimit(pings(10_000, ""), 0); len(m.requests) != 10_000 {
		t.Fatalf("no limit: %d requests decoded", len(m.requests))
	}
}

// TestDecodeOverLimitAllocates checks that refusing a 10,000-request batch
// allocates about what the members up to the limit take, not the batch.
func TestDecodeOverLimitAllocates(t *testing.T) {
	frame := pings(10_000, "")
	const limit = 100
	prefix := len(pings(limit+1, ""))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 20
	for i := 0; i < n; i++ {
		decodeMessageLimit(frame, limit)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > uint64(2*prefix) {
		t.Fatalf("refusing a %d-byte batch allocated %d bytes; the members up to the limit are %d bytes", len(frame), per, prefix)
	}
}

// socketReader hands out at most 64 KiB a read, as a socket with a full
// receive buffer does, and counts the reads.
type socketReader struct {
	r     io.Reader
	reads int
}

func (s *socketReader) Read(p []byte) (int, error) {
	s.reads++
	return s.r.Read(p[:min(len(p), 64<<10)])
}

// TestLongLinesReadInLargeReads checks that a line longer than the read
// buffer is read in reads as large as the socket gives, not lineReadBuffer
// at a time, and that what follows it in the last read is the next
// message, through a line over the limit too.
func TestLongLinesReadInLargeReads(t *testing.T) {
	long := pings(10_000, "") // about 500 KB
	over := []byte(`["` + strings.Repeat("x", DefaultMaxRecv) + `"]`)
	var in bytes.Buffer
	for _, l := range [][]byte{long, []byte("a"), over, []byte("b"), long, long} {
		in.Write(l)
		in.WriteString("\r\n")
	}
	src := &socketReader{r: &in}
	lc := newLineReader(src, lineReadBuffer, DefaultMaxRecv)
	for i, want := range [][]byte{long, []byte("a"), nil, []byte("b"), long, long} {
		got, err := lc.ReadMessage()
		if want == nil {
			if err != errFrameTooLarge {
				t.Fatalf("message %d: %v, want it too large", i, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("message %d: %d bytes (%.20q), %v; want %d bytes", i, len(got), got, err, len(want))
		}
	}
	if _, err := lc.ReadMessage(); err != io.EOF {
		t.Fatalf("after the last message: %v", err)
	}
	// 64 KiB reads would take 8 per long line and 17 for the one over
	// the limit; the buffer growing from lineReadBuffer adds a few. In
	// lineReadBuffer reads it took 125 per long line.
	total := 3*len(long) + len(over)
	if most := total/(64<<10) + 4*10; src.reads > most {
		t.Fatalf("%d bytes in %d reads, want at most %d", total, src.reads, most)
	}
	t.Logf("%d bytes in %d reads", total, src.reads)
}

// TestLongMessagesAllocate checks that a long message, read from a line
// or from a WebSocket frame's reader, is handed out in the pooled buffer
// it was read into: it leaves only the garbage of its buffer growing to
// keptBuffer, where a copy handed out left its own size, and a line over
// the limit little.
func TestLongMessagesAllocate(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's sync.Pool drops buffers at random")
	}
	const n = 10
	long := pings(10_000, "") // about 500 KB
	over := []byte(`["` + strings.Repeat("x", 2_000_000) + `"]`)
	// A collection empties the pool: what is measured is the garbage
	// between two collections, where the pool does its work, once the
	// first messages have filled it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	// TotalAlloc counts every goroutine's allocations, and those of an
	// earlier test winding down can fall into a measurement: the least of
	// three is the reader's own.
	least := uint64(math.MaxUint64)
	for try := 0; try < 3; try++ {
		var in bytes.Buffer
		for i := 0; i <= n; i++ {
			in.Write(long)
			in.WriteByte('\n')
			in.Write(over)
			in.WriteByte('\n')
		}
		lc := newLineReader(&in, lineReadBuffer, DefaultMaxRecv)
		for i := 0; i <= n; i++ {
			if i == 1 {
				runtime.ReadMemStats(&before)
			}
			got, err := lc.ReadMessage()
			if err != nil || !bytes.Equal(got, long) {
				t.Fatalf("line %d: %d bytes, %v", i, len(got), err)
			}
			lc.ReleaseMessage()
			if _, err := lc.ReadMessage(); err != errFrameTooLarge {
				t.Fatalf("line over the limit: %v", err)
			}
		}
		runtime.ReadMemStats(&after)
		least = min(least, (after.TotalAlloc-before.TotalAlloc)/n)
	}
	// A few small buffers, where a copy handed out left 1 MB and the
	// buffer growing as append grows it 8.5 MB.
	if least > uint64(len(long)/50) {
		t.Fatalf("a %d-byte line and one over the limit left %d bytes of garbage", len(long), least)
	}
	for i := 0; i <= n; i++ {
		if i == 1 {
			runtime.ReadMemStats(&before)
		}
		got, err := readAllLong(bytes.NewReader(long), nil)
		if err != nil || !bytes.Equal(got, long) {
			t.Fatalf("frame %d: %d bytes, %v", i, len(got), err)
		}
		putLong(got)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > uint64(len(long)/50) {
		t.Fatalf("a %d-byte frame left %d bytes of garbage", len(long), per)
	}
	// A frame cut at the request limit is dropped, not copied out of
	// the pooled buffer it was read into.
	cut := errors.New("read limit")
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		got, err := readAllLong(io.MultiReader(bytes.NewReader(long), iotest.ErrReader(cut)), nil)
		if err != cut || got != nil {
			t.Fatalf("frame %d cut at the limit: %d bytes, %v", i, len(got), err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > uint64(len(long)/2) {
		t.Fatalf("a %d-byte frame cut at the limit left %d bytes of garbage", len(long), per)
	}
	// Short messages are read as before.
	if got, err := readAllLong(strings.NewReader(`{"id":1}`), nil); err != nil || string(got) != `{"id":1}` {
		t.Fatalf("short frame: %q %v", got, err)
	}
}

// TestReadAllLongWithinBudget: a WebSocket message's buffer past
// keptBuffer is taken from the budget for long messages; a message that
// finds it spent is read to its end and dropped, and the budget is whole
// once the messages read are given back.
func TestReadAllLongWithinBudget(t *testing.T) {
	const whole = 1 << 20
	budget := semaphore.NewWeighted(whole)
	long := bytes.Repeat([]byte("x"), 300_000) // a 512 KiB buffer
	got, err := readAllLong(bytes.NewReader(long), budget)
	if err != nil || !bytes.Equal(got, long) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	if budget.TryAcquire(whole) {
		t.Fatal("a message's buffer took nothing from the budget")
	}
	longer := bytes.NewReader(bytes.Repeat([]byte("x"), 600_000)) // 1 MiB
	if got, err := readAllLong(longer, budget); err != errNoRoom || got != nil || longer.Len() != 0 {
		t.Fatalf("a message past the budget: %d bytes, %v, %d bytes left unread", len(got), err, longer.Len())
	}
	putHeld(got, budget)
	if !budget.TryAcquire(whole) {
		t.Fatal("the budget is not whole once the messages are given back")
	}
}

// TestDetachKeepsRequests checks that a detached message's requests keep
// their ids and params when the frame they were decoded from is reused,
// as the reader reuses its buffer for the next message.
func TestDetachKeepsRequests(t *testing.T) {
	frame := []byte(`[{"jsonrpc":"2.0","id":"a","method":"m1","params":["x",1]},` +
		`{"jsonrpc":"2.0","id":7,"method":"m2","params":{"k":"v"}},` +
		`{"jsonrpc":"2.0","method":"m3"},{"jsonrpc":"2.0","id":8,"method":"m4","params":[]}]`)
	m := decodeMessageLimit(frame, 0)
	m.detach()
	for i := range frame {
		frame[i] = '#'
	}
	want := []struct{ id, method, params string }{
		{`"a"`, "m1", `["x",1]`},
		{`7`, "m2", `{"k":"v"}`},
		{``, "m3", ``},
		{`8`, "m4", `[]`},
	}
	if m.err != nil || len(m.requests) != len(want) {
		t.Fatalf("decoded %+v", m)
	}
	for i, w := range want {
		r := m.requests[i]
		if string(r.id) != w.id || r.method != w.method || string(r.params) != w.params || r.err != nil {
			t.Fatalf("request %d: id %s method %s params %s err %v; want %+v", i, r.id, r.method, r.params, r.err, w)
		}
	}
	if !m.requests[2].isNotification() {
		t.Fatal("the request without an id is no longer a notification")
	}
}

// TestJoinedWritesInPooledBuffers writes long answers through a
// connection that is not TCP (as TLS is not), where messages are joined
// into one pooled buffer per write: each write arrives whole and intact,
// the buffer of the one before reused for the next.
func TestJoinedWritesInPooledBuffers(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	w := newLineConn(a, DefaultMaxRecv)
	r := newLineReader(b, lineReadBuffer, DefaultMaxRecv)
	for i := 0; i < 4; i++ {
		body := bytes.Repeat([]byte{byte('a' + i)}, 100_000*(i+1))
		msgs := []outMsg{{head: []byte(`{"id":1}`)}, {head: []byte(`{"result":"`), body: body, tail: []byte(`"}`)}}
		done := make(chan error, 1)
		go func() { done <- w.WriteMessages(msgs) }()
		for j, m := range msgs {
			got, err := r.ReadMessage()
			if want := m.join(); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("write %d, message %d: %d bytes, %v; want %d bytes", i, j, len(got), err, len(want))
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestParamsArityCheckedWhileSplitting: a params array longer than its
// method takes is refused for its number of arguments as it is split, not
// after one slot is allocated for each of its elements: a 1 MB request to
// server.ping whose params hold 500,000 zeros allocated 65 MB, outside the
// work gate and every memory budget.
func TestParamsArityCheckedWhileSplitting(t *testing.T) {
	fx := newFixture(t, nil) // default limits: three such requests stay under the soft cost limit
	lc := dialLines(t, fx.addr)
	lc.negotiate()
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"server.ping","params":[` + strings.Repeat("0,", 499_000) + "0]}\n")
	// TotalAlloc counts every goroutine's allocations: the least of three
	// rounds is the request's own.
	least := uint64(math.MaxUint64)
	for try := 0; try < 3; try++ {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := lc.conn.Write(req); err != nil {
			t.Fatal(err)
		}
		ans := lc.line()
		runtime.ReadMemStats(&m1)
		if !strings.Contains(string(ans), `"expected at most 0 arguments, got 499001"`) {
			t.Fatalf("answer %s", ans)
		}
		least = min(least, m1.TotalAlloc-m0.TotalAlloc)
	}
	t.Logf("a %d-byte request made the process allocate %d bytes (%.1fx)", len(req), least, float64(least)/float64(len(req)))
	if least > uint64(10*len(req)) {
		t.Fatalf("a %d-byte request refused for its arity allocated %d bytes (%.0fx)", len(req), least, float64(least)/float64(len(req)))
	}
}

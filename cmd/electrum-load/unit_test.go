package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	// Buckets are contiguous, ordered, and a bucket's top maps to itself.
	prev := int64(-1)
	for b := 0; b < histBuckets; b++ {
		hi := bucketHigh(b)
		if hi <= prev {
			if b > bucketOf(1<<62) {
				break // past the largest value's bucket
			}
			t.Fatalf("bucket %d top %d not above %d", b, hi, prev)
		}
		if got := bucketOf(hi); got != b {
			t.Fatalf("bucketOf(bucketHigh(%d)=%d) = %d", b, hi, got)
		}
		if got := bucketOf(prev + 1); got != b {
			t.Fatalf("bucketOf(%d) = %d, want %d", prev+1, got, b)
		}
		prev = hi
	}
	// Width stays under 1/subBuckets of the values above 2*subBuckets.
	for _, v := range []int64{300, 12345, 1e6, 987654321, 1 << 40} {
		b := bucketOf(v)
		lo := bucketHigh(b-1) + 1
		if w := bucketHigh(b) - lo + 1; float64(w) > float64(lo)/subBuckets {
			t.Fatalf("bucket of %d is [%d, %d], too wide", v, lo, bucketHigh(b))
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	if h.Quantile(.5) != 0 || h.Count() != 0 {
		t.Fatal("empty histogram not zero")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	samples := make([]time.Duration, n)
	for i := range samples {
		// Log-uniform from 1 µs to 10 s.
		d := time.Duration(float64(time.Microsecond) * pow10(rng.Float64()*7))
		samples[i] = d
		h.Record(d)
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	if h.Count() != n || h.Max() != samples[n-1] || h.Min() != samples[0] {
		t.Fatalf("count %d max %v min %v, want %d %v %v", h.Count(), h.Max(), h.Min(), n, samples[n-1], samples[0])
	}
	last := time.Duration(0)
	for _, q := range []float64{0, .1, .5, .9, .99, .999, 1} {
		got := h.Quantile(q)
		rank := int(q * n)
		if rank > 0 {
			rank--
		}
		want := samples[rank]
		if got < want || float64(got) > float64(want)*(1+1.0/subBuckets)+1 {
			t.Errorf("q%.3f = %v, exact %v", q, got, want)
		}
		if got < last {
			t.Errorf("q%.3f = %v below the lower quantile's %v", q, got, last)
		}
		last = got
	}
	if h.Quantile(1) != h.Max() {
		t.Errorf("q1 %v != max %v", h.Quantile(1), h.Max())
	}
}

func pow10(x float64) float64 {
	r := 1.0
	for x >= 1 {
		r *= 10
		x--
	}
	// 10^x for x in [0,1) by exp(x ln 10), close enough for test data.
	return r * (1 + x*2.302585 + x*x*2.650949 + x*x*x*2.034678 + x*x*x*x*1.171255)
}

func scanAll(t *testing.T, msg string, keepResult bool, piece int) message {
	t.Helper()
	var s scanner
	s.reset(keepResult)
	b := []byte(msg)
	for len(b) > 0 {
		n := min(piece, len(b))
		s.feed(b[:n])
		b = b[n:]
	}
	return *s.finish()
}

func TestScanner(t *testing.T) {
	cases := []struct {
		msg                 string
		id, err, method     string
		hasResult           bool
		entries, resultSize int
		malformed           bool
	}{
		{msg: `{"jsonrpc":"2.0","id":7,"result":[{"tx_hash":"ab","height":1},{"tx_hash":"c\"d,]","height":2}]}`,
			id: "7", hasResult: true, entries: 2, resultSize: 61},
		{msg: `{"jsonrpc":"2.0","result":[],"id":12}`, id: "12", hasResult: true, entries: 0, resultSize: 2},
		{msg: `{"jsonrpc":"2.0","result":[ ],"id":12}`, id: "12", hasResult: true, entries: 0, resultSize: 3},
		{msg: `{"jsonrpc":"2.0","result":["a"],"id":1}`, id: "1", hasResult: true, entries: 1, resultSize: 5},
		{msg: `{"id": 3, "result": {"confirmed": 5, "unconfirmed": 0}}`, id: "3", hasResult: true, entries: -1, resultSize: 34},
		{msg: `{"id":4,"result":null}`, id: "4", hasResult: true, entries: -1, resultSize: 4},
		{msg: `{"jsonrpc":"2.0","error":{"code":1,"message":"history too large"},"id":5}`,
			id: "5", err: `{"code":1,"message":"history too large"}`, entries: -1},
		{msg: `{"jsonrpc":"2.0","method":"blockchain.headers.subscribe","params":[{"height":5,"hex":"00"}]}`,
			method: `"blockchain.headers.subscribe"`, entries: -1},
		{msg: `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"},"id":null}`,
			id: "null", err: `{"code":-32700,"message":"parse error"}`, entries: -1},
		{msg: `[{"id":1,"result":2}]`, malformed: true, entries: -1},
		{msg: `{"id":1,"result":[1,2`, malformed: true, id: "1", hasResult: true, entries: 2, resultSize: 4},
		{msg: `{"id":1,"result":"x\"}`, malformed: true, id: "1", hasResult: true, entries: -1, resultSize: 5},
	}
	for _, c := range cases {
		for _, piece := range []int{1, 3, 1 << 20} {
			m := scanAll(t, c.msg, false, piece)
			if string(m.ID) != c.id || string(m.Error) != c.err || string(m.Method) != c.method ||
				m.HasResult != c.hasResult || m.ResultEntries != c.entries || m.Malformed != c.malformed ||
				(c.hasResult && m.ResultBytes != c.resultSize) || m.Bytes != len(c.msg) {
				t.Errorf("%s (pieces of %d): id %q err %q method %q result %v entries %d size %d malformed %v",
					c.msg, piece, m.ID, m.Error, m.Method, m.HasResult, m.ResultEntries, m.ResultBytes, m.Malformed)
			}
		}
	}
	m := scanAll(t, `{"id":1,"result":{"height":800000,"hex":"00ff"}}`, true, 5)
	if string(m.Result) != `{"height":800000,"hex":"00ff"}` {
		t.Errorf("kept result %q", m.Result)
	}
	// A result over maxResultCapture is not kept, but measured.
	big := `{"id":1,"result":"` + strings.Repeat("a", maxResultCapture) + `"}`
	if m := scanAll(t, big, true, 4096); m.Result != nil || m.ResultBytes != maxResultCapture+2 || m.Malformed {
		t.Errorf("big result kept %d bytes, size %d", len(m.Result), m.ResultBytes)
	}
}

func TestReadHashesAndMix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scripts")
	h := strings.Repeat("ab", 32)
	content := "# heavy scripts\n" + h + " 12345 entries\n\n  " + strings.ToUpper(h) + "\t# upper case\nzz\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := readHashes(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Raw) != 3 || l.Raw[0] != h || l.Raw[2] != "zz" || l.Odd != 1 || l.Quoted[2] != `"zz"` {
		t.Fatalf("read %+v", l)
	}
	m, err := parseMix(defaultMix)
	if err != nil || m.String() != defaultMix {
		t.Fatalf("default mix %v %v", m, err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	counts := make([]int, len(m.Entries))
	for i := 0; i < 100000; i++ {
		counts[m.pick(rng)]++
	}
	for i, e := range m.Entries {
		want := 100000 * e.Weight / m.total
		if d := counts[i] - want; d < -want/10 || d > want/10 {
			t.Errorf("%s drawn %d times, want about %d", e.Spec.Name, counts[i], want)
		}
	}
	for _, bad := range []string{"nope=1", "get_balance=x", "get_balance=0", "ping,ping"} {
		if _, err := parseMix(bad); err == nil {
			t.Errorf("mix %q accepted", bad)
		}
	}
	if m, err := parseMix("blockchain.scripthash.subscribe=2,ping"); err != nil || m.String() != "subscribe=2,ping=1" {
		t.Errorf("mix by full name: %v %v", m, err)
	}
}

// BenchmarkScanHistory scans a get_history answer of 10,000 entries
// (about 0.9 MB), in the reader's 64 KiB pieces.
func BenchmarkScanHistory(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","result":[`)
	for i := 0; i < 10000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"tx_hash":"` + strings.Repeat("ab", 32) + `","height":` + strconv.Itoa(700000+i) + `}`)
	}
	sb.WriteString(`],"id":42}`)
	msg := []byte(sb.String())
	var s scanner
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		s.reset(false)
		for p := msg; len(p) > 0; {
			n := min(64<<10, len(p))
			s.feed(p[:n])
			p = p[n:]
		}
		if m := s.finish(); m.ResultEntries != 10000 || string(m.ID) != "42" {
			b.Fatalf("entries %d id %s", m.ResultEntries, m.ID)
		}
	}
}

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/hostile"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

const tipHash = "0a0451e3fc3ab1d52f51d023659842da762ffe36e03c7d13d48a6eeb9453f408"

func TestParseChainJSON(t *testing.T) {
	// The generator's chain.json (abridged; unknown fields are ignored).
	gen := `{"network":"simnet","seed":1,"transactions":300414,"non_coinbase_transactions":300000,
		"blocks":414,"tip_height":414,"tip_hash":"` + tipHash + `","checkpoint":"414:` + tipHash + `",
		"outputs_by_kind":{"p2tr":1},"top_scripts":[{"scripthash":"00","history":5}]}`
	ci, err := parseChainJSON([]byte(gen))
	if err != nil {
		t.Fatal(err)
	}
	want := chainInfo{Network: "simnet", Txs: 300414, Blocks: 414, TipHeight: 414, TipHash: tipHash, Checkpoint: "414:" + tipHash}
	if *ci != want {
		t.Errorf("got %+v, want %+v", *ci, want)
	}

	// Other spellings: the tip derived from the checkpoint, counts as
	// strings, a nested tip, regtest.
	ci, err = parseChainJSON([]byte(`{"net":"regtest","txs":"1200","checkpoint":"7:` + tipHash + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ci.Network != "regtest" || ci.Txs != 1200 || ci.TipHeight != 7 || ci.TipHash != tipHash || ci.Blocks != 7 {
		t.Errorf("from checkpoint: %+v", *ci)
	}
	ci, err = parseChainJSON([]byte(`{"tx_count":5,"tip":{"height":9,"hash":"` + tipHash + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ci.Network != "simnet" || ci.Checkpoint != "9:"+tipHash || ci.NetFlag() != "--simnet" {
		t.Errorf("nested tip: %+v", *ci)
	}

	for _, bad := range []struct{ json, want string }{
		{`{"network":"mainnet","transactions":1,"checkpoint":"1:` + tipHash + `"}`, "simnet or regtest"},
		{`{"transactions":1}`, "tip height"},
		{`{"transactions":1,"tip_height":3}`, "checkpoint"},
		{`{"checkpoint":"1:` + tipHash + `"}`, "transaction count"},
		{`{"transactions":1,"checkpoint":"x:` + tipHash + `"}`, "not <height>:<hash>"},
		{`{"transactions":1,"checkpoint":"1:abc"}`, "not <height>:<hash>"},
		{`[1]`, "cannot unmarshal"},
	} {
		if _, err := parseChainJSON([]byte(bad.json)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want %q", bad.json, err, bad.want)
		}
	}
}

func TestLoadChainChecksDatabase(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "chain.json"), []byte(`{"transactions":3,"checkpoint":"2:`+tipHash+`"}`), 0o644)
	if _, err := loadChain(dir); err == nil || !strings.Contains(err.Error(), "chain database") {
		t.Fatalf("no database: %v", err)
	}
	os.MkdirAll(filepath.Join(dir, "simnet", "blocks_ffldb"), 0o755)
	ci, err := loadChain(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ci.DBPath() != filepath.Join(dir, "simnet", "blocks_ffldb") || ci.BlocksFile() != filepath.Join(dir, "blocks.dat") {
		t.Errorf("paths %s %s", ci.DBPath(), ci.BlocksFile())
	}
}

// The log lines as the node and btcd write them, with the logger's prefix.
func TestLogParsers(t *testing.T) {
	const pre = "2026-12-01 15:17:00.123 [INF] ELEC: "
	h, rate, ok := parseElectrumProgress(pre + fmt.Sprintf("Electrum index: height %d/%d committed (%d tx), %.0f tx/s",
		120, 414, 90120, 51234.4))
	if !ok || h != 120 || rate != 51234 {
		t.Errorf("progress: %d %v %v", h, rate, ok)
	}
	// The lines of older versions: with the catch-up's target in
	// transactions, and before it reported committed work.
	h, rate, ok = parseElectrumProgress(pre + fmt.Sprintf("Electrum index: height %d/%d committed (%d/%d tx), %.0f tx/s, ETA %s; assembled to %d",
		120, 414, 90120, 300415, 51234.4, "7s", 131))
	if !ok || h != 120 || rate != 51234 {
		t.Errorf("older progress line: %d %v %v", h, rate, ok)
	}
	h, rate, ok = parseElectrumProgress(pre + fmt.Sprintf("Electrum index: height %d/%d, %.0f tx/s, ETA %s", 120, 414, 51234.4, "7s"))
	if !ok || h != 120 || rate != 51234 {
		t.Errorf("old progress line: %d %v %v", h, rate, ok)
	}
	if _, _, ok := parseElectrumProgress(pre + "Electrum index: caught up 3 blocks"); ok {
		t.Error("progress parser took another line")
	}
	txs, took, rate, ok := parseElectrumCaughtUp(pre + fmt.Sprintf("Electrum index: caught up to height %d (%d tx in %v)",
		414, 300415, 5234*time.Millisecond))
	if !ok || txs != 300415 || took != 5234*time.Millisecond || rate != 300415/5.234 {
		t.Errorf("caught up: %d %v %v %v", txs, took, rate, ok)
	}
	txs, took, rate, ok = parseElectrumCaughtUp(pre + fmt.Sprintf("Electrum index: caught up %d blocks (%d tx) in %v (%.0f tx/s)",
		414, 300415, 5234*time.Millisecond, 57397.2))
	if !ok || txs != 300415 || took != 5234*time.Millisecond || rate != 57397 {
		t.Errorf("older caught-up line: %d %v %v %v", txs, took, rate, ok)
	}

	hb, ok := parseBtcdCaughtUp("2026-12-01 15:17:00.123 [INF] INDX: Indexes caught up to height 414")
	if !ok || hb != 414 {
		t.Errorf("btcd caught up: %d %v", hb, ok)
	}
	h, rate, ok = parseBtcdProgress("2026-12-01 15:17:00.123 [INF] INDX: Indexed 120 blocks in the last 10s " +
		"(125000 transactions, height 300, 2026-12-01 15:00:00 +0000 UTC)")
	if !ok || h != 300 || rate != 12500 {
		t.Errorf("btcd progress: %d %v %v", h, rate, ok)
	}
	h, rate, ok = parseBtcdProgress("... Indexed 1 block in the last 10.5s (1 transaction, height 3, 2026-12-01 15:00:00 +0000 UTC)")
	if !ok || h != 3 || rate != 1/10.5 {
		t.Errorf("btcd progress, singular: %d %v %v", h, rate, ok)
	}

	for _, tc := range []struct {
		line string
		h    int32
		n    int
		d    time.Duration
	}{
		{pre + fmt.Sprintf("Indexed block %d (%d tx) in %v", 400, 3001, (12345*time.Microsecond).Round(100*time.Microsecond)), 400, 3001, 12300 * time.Microsecond},
		{pre + fmt.Sprintf("Indexed block %d (%d tx) in %v", 5, 1, time.Duration(0)), 5, 1, 0},
		{pre + "Indexed block 7 (3,001 tx) in 850µs", 7, 3001, 850 * time.Microsecond},
		{pre + "Indexed block 8 (1,234,567 tx) in 1.2s", 8, 1234567, 1200 * time.Millisecond},
		{pre + "Indexed block 9 (41 tx), committed in 1.11ms", 9, 41, 1110 * time.Microsecond}, // an intermediate version's
	} {
		h, n, d, ok := parseIndexedBlock(tc.line)
		if !ok || h != tc.h || n != tc.n || d != tc.d {
			t.Errorf("%q: %d %d %v %v", tc.line, h, n, d, ok)
		}
	}
	if _, _, _, ok := parseIndexedBlock(pre + "Indexed 12 blocks (3,000 tx) in 4ms"); ok {
		t.Error("a folded summary line parsed as one block")
	}
	if _, _, _, ok := parseIndexedBlock(pre + "Indexed blocks to 12 (3000 tx) in 4ms"); ok {
		t.Error("a batch of blocks parsed as one block")
	}
}

func TestPercentileAndMedian(t *testing.T) {
	v := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	for _, tc := range []struct{ p, want float64 }{{50, 5}, {90, 9}, {100, 10}, {10, 1}, {1, 1}, {91, 10}} {
		if got := percentile(v, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if v[0] != 9 {
		t.Error("percentile sorted its argument")
	}
	if percentile(nil, 50) != 0 || median(nil) != 0 {
		t.Error("empty input")
	}
	if got := percentile([]float64{3}, 90); got != 3 {
		t.Errorf("one value: %v", got)
	}
	if got := median([]float64{4, 1, 3}); got != 3 {
		t.Errorf("odd median %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("even median %v", got)
	}
	l := summarize([]float64{1, 2, 3, 4})
	if l != (latency{N: 4, P50Ms: 2, P90Ms: 4, MaxMs: 4}) {
		t.Errorf("summary %+v", l)
	}
}

// TestWriteChart checks the SVG is well-formed XML with a polyline per
// series and panel, each with every point of its series.
func TestWriteChart(t *testing.T) {
	mk := func(n int) []progressPoint {
		var ps []progressPoint
		for i := 1; i <= n; i++ {
			ps = append(ps, progressPoint{Seconds: float64(i), Height: int32(i * 10), TxPerSec: float64(1000 * i), RSSMiB: float64(100 + i)})
		}
		return ps
	}
	series := []chartSeries{
		{Name: "ours & <co>", Color: "#1f77b4", Points: mk(3)},
		{Name: "btcd", Color: "#d62728", Points: mk(5)},
		{Name: "empty", Color: "#2ca02c"},
	}
	var buf bytes.Buffer
	if err := writeChart(&buf, `catch-up "A" < B`, 50, series); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	points := map[string][]int{}
	circles := 0
	var root string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		switch se.Name.Local {
		case "polyline":
			var name, pts string
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "data-series":
					name = a.Value
				case "points":
					pts = a.Value
				}
			}
			points[name] = append(points[name], len(strings.Fields(pts)))
		case "circle":
			circles++
		}
	}
	if root != "svg" {
		t.Errorf("root element %q", root)
	}
	want := map[string][]int{"ours & <co>": {3, 3}, "btcd": {5, 5}, "empty": {0, 0}}
	if fmt.Sprint(points) != fmt.Sprint(want) {
		t.Errorf("points per polyline %v, want %v", points, want)
	}
	if circles != 2*(3+5) {
		t.Errorf("%d markers, want %d", circles, 2*(3+5))
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ v, want float64 }{{0, 1}, {0.3, 0.5}, {7, 10}, {12, 20}, {51234, 100000}, {2000, 2000}, {180, 200}} {
		if got := niceCeil(tc.v); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestBlocksFile(t *testing.T) {
	block := func(ntx []byte, prev byte) []byte {
		b := make([]byte, 80, 200)
		b[4] = prev
		b = append(b, ntx...)
		return append(b, 0xaa, 0xbb)
	}
	blocks := [][]byte{
		block([]byte{0x01}, 0),
		block([]byte{0xfd, 0xc4, 0x09}, 1),             // 2500
		block([]byte{0xfe, 0xa0, 0x86, 0x01, 0x00}, 1), // 100000
	}
	var buf bytes.Buffer
	for _, b := range blocks {
		binary.Write(&buf, binary.LittleEndian, uint32(len(b)))
		buf.Write(b)
	}
	path := filepath.Join(t.TempDir(), "blocks.dat")
	os.WriteFile(path, buf.Bytes(), 0o644)
	br, err := openBlocks(path)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	var counts []int
	var genesis []bool
	for {
		raw, err := br.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n, err := blockTxCount(raw)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, n)
		genesis = append(genesis, isGenesisHeader(raw))
	}
	if fmt.Sprint(counts) != "[1 2500 100000]" || fmt.Sprint(genesis) != "[true false false]" {
		t.Errorf("counts %v, genesis %v", counts, genesis)
	}
	if _, err := blockTxCount(make([]byte, 80)); err == nil {
		t.Error("header-only block accepted")
	}

	// A truncated file is an error, not a clean end.
	os.WriteFile(path, buf.Bytes()[:buf.Len()-1], 0o644)
	br2, _ := openBlocks(path)
	defer br2.Close()
	var last error
	for last == nil {
		_, last = br2.next()
	}
	if last == io.EOF {
		t.Error("truncated blocks.dat read as complete")
	}
}

func TestParseProcStatus(t *testing.T) {
	st := parseProcStatus("Name:\tbtcd\nVmPeak:\t 1234 kB\nVmHWM:\t  800 kB\nVmRSS:\t  700 kB\nThreads:\t9\n")
	if st["VmRSS"] != 700 || st["VmHWM"] != 800 || len(st) != 3 {
		t.Errorf("%v", st)
	}
}

// TestCopyTreeAndDiskUsage checks the copy is whole and leaves the source
// alone.
func TestCopyTreeAndDiskUsage(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(filepath.Join(src, "metadata"), 0o700)
	os.WriteFile(filepath.Join(src, "000000000.fdb"), bytes.Repeat([]byte{1}, 10000), 0o600)
	os.WriteFile(filepath.Join(src, "metadata", "CURRENT"), []byte("MANIFEST-000001\n"), 0o600)
	dst := filepath.Join(t.TempDir(), "dst", "blocks_ffldb")
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dst, "metadata", "CURRENT"))
	if err != nil || string(got) != "MANIFEST-000001\n" {
		t.Fatalf("copied file: %q %v", got, err)
	}
	a, err1 := diskUsage(src)
	b, err2 := diskUsage(dst)
	if err1 != nil || err2 != nil || a < 10000 || b < 10000 {
		t.Errorf("disk usage %d %d (%v %v)", a, b, err1, err2)
	}
	if err := copyTree(src, dst); err == nil {
		t.Error("copy over an existing tree succeeded")
	}
}

func TestCommas(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 35757.6: "35,758", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := commas(v); got != want {
			t.Errorf("commas(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestCompactedSize checks that rows deleted before compaction no longer
// count.
func TestCompactedSize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "blocks_ffldb")
	ldb, err := leveldb.OpenFile(filepath.Join(dir, "metadata"), &opt.Options{Compression: opt.NoCompression})
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte{7}, 1000)
	for i := range 4000 {
		ldb.Put([]byte(fmt.Sprintf("k%06d", i)), val, nil)
	}
	ldb.Close()
	full, err := compactedSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	if full < 4000*1000 {
		t.Fatalf("compacted size %d of 4 MB of rows", full)
	}
	ldb, _ = leveldb.OpenFile(filepath.Join(dir, "metadata"), nil)
	for i := range 3000 {
		ldb.Delete([]byte(fmt.Sprintf("k%06d", i)), nil)
	}
	ldb.Close()
	small, err := compactedSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	if small > full/2 {
		t.Errorf("after deleting 3/4 of the rows: %d bytes, before %d", small, full)
	}
	if _, err := compactedSize(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing database was created")
	}
}

// TestParseProcStatCPU reads utime and stime past a command name holding
// spaces and parentheses.
func TestParseProcStatCPU(t *testing.T) {
	line := "4242 (btcd (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 9 0 5 1000 10"
	if got := parseProcStatCPU(line); got != 18.01 {
		t.Fatalf("CPU %.2f s, want 18.01", got)
	}
	if got := parseProcStatCPU("garbage"); got != 0 {
		t.Fatalf("CPU of garbage %.2f", got)
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip(err)
	}
	if got := parseProcStatCPU(string(self)); got < 0 {
		t.Fatalf("own CPU %.2f", got)
	}
}

// TestHostileRounds checks how the hostile benchmark pools its rounds: the
// merged percentiles are of every request, and the ratio's median is of
// the rounds' p99.
func TestHostileRounds(t *testing.T) {
	ms := time.Millisecond
	round := func(lat ...time.Duration) hostile.Result {
		r := hostile.Merge(hostile.Result{Requests: len(lat), Latencies: lat})
		return r
	}
	// Three rounds of 100 requests: two quiet, one with a stall.
	var a, b, c []time.Duration
	for i := 0; i < 100; i++ {
		a = append(a, ms)
		b = append(b, 2*ms)
		c = append(c, 3*ms)
	}
	for i := 0; i < 5; i++ {
		c[i] = 100 * ms
	}
	ra, rb, rc := round(a...), round(b...), round(c...)
	if ra.P99 != ms || rb.P99 != 2*ms || rc.P99 != 100*ms || rc.P50 != 3*ms || rc.Max != 100*ms {
		t.Fatalf("per round: %v %v %v/%v/%v", ra.P99, rb.P99, rc.P50, rc.P99, rc.Max)
	}
	m := hostile.Merge(rc, ra, rb)
	if m.Requests != 300 || m.P50 != 2*ms || m.P99 != 100*ms || m.Max != 100*ms {
		t.Errorf("pooled: %d requests, p50 %v p99 %v max %v", m.Requests, m.P50, m.P99, m.Max)
	}
	if got := medianP99([]hostile.Result{rc, ra, rb}); got != 2*ms {
		t.Errorf("median p99 of three rounds: %v, want 2ms", got)
	}
	if got := medianP99([]hostile.Result{rc, ra}); got != 100*ms {
		t.Errorf("median p99 of two rounds: %v, want the upper one", got)
	}
	if got := medianP99(nil); got != 0 {
		t.Errorf("median p99 of none: %v", got)
	}
}

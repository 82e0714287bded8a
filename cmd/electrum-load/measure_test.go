package main

// Tests that the tool's figures measure what they are labelled with. Most
// use an in-process fake target (no server, no network), so they are light
// and run in about a second each.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTarget is a fake target whose sessions answer with do.
type fakeTarget struct {
	do    func(n int64) (answer, error) // n: 1 for the target's first request, 2 for the next...
	calls atomic.Int64
}

type fakeSession struct{ t *fakeTarget }

func (t *fakeTarget) open(context.Context) (session, string, error) {
	return &fakeSession{t: t}, `"fake"`, nil
}
func (t *fakeTarget) tip(context.Context) (int64, error) { return 10, nil }
func (t *fakeTarget) harvest(context.Context, *hashList, int) (*hashList, error) {
	return nil, errors.New("no")
}
func (t *fakeTarget) blocks(context.Context, int64, int64) (*hashList, error) {
	return nil, errors.New("no")
}
func (t *fakeTarget) wait() time.Duration { return 5 * time.Second }

func (s *fakeSession) do(methodSpec, []string) (answer, error) {
	return s.t.do(s.t.calls.Add(1))
}
func (s *fakeSession) Close() error { return nil }

func fakeArgs(t *testing.T) (*mix, requestArgs) {
	t.Helper()
	m, err := parseMix("ping=1")
	if err != nil {
		t.Fatal(err)
	}
	l := &hashList{}
	l.add("00")
	return m, requestArgs{scripts: l, tip: 10}
}

// TestFailuresAreNotAnswers: a server that drops every connection as soon
// as a request arrives answers nothing: the phase reports no answers and no
// request rate, and its failures apart. The README defines req/s as "the
// answers (results and errors) that arrived inside the measured window"; a
// failure is a request that "gets no answer".
func TestFailuresAreNotAnswers(t *testing.T) {
	tg := &fakeTarget{do: func(int64) (answer, error) {
		time.Sleep(time.Millisecond)
		return answer{}, io.EOF // the server closed the connection
	}}
	m, args := fakeArgs(t)
	res := runPhase(context.Background(), tg, m, args,
		phaseConfig{Sessions: 2, Duration: 500 * time.Millisecond, Seed: 1}, nil, nil)
	pr := &phaseReport{res: res}
	var failures uint64
	for _, s := range res.Stats {
		failures += s.Failures.Load()
	}
	js := phaseJSON(t, m, pr)
	t.Logf("failures %d, answered %d, %.1f req/s; JSON failed %v", failures, res.Answered, pr.reqPerS(), js["failed"])
	if failures == 0 {
		t.Fatal("the fake produced no failures")
	}
	if res.Answered != 0 || pr.reqPerS() != 0 {
		t.Errorf("no request was answered, but the phase reports %d answers, %.1f req/s (its %d failures counted as answers)",
			res.Answered, pr.reqPerS(), failures)
	}
	if f, _ := js["failed"].(float64); f == 0 {
		t.Errorf("the phase's JSON reports no failures: %v", js["failed"])
	}
}

// phaseJSON returns the JSON report's object of the phase pr of mix m.
func phaseJSON(t *testing.T, m *mix, pr *phaseReport) map[string]any {
	t.Helper()
	rep := &report{cfg: &config{Mix: m}, Phases: []*phaseReport{pr}}
	raw, err := json.Marshal(rep.toJSON())
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Phases []map[string]any `json:"phases"`
	}
	if err := json.Unmarshal(raw, &j); err != nil || len(j.Phases) != 1 {
		t.Fatalf("%v: %s", err, raw)
	}
	return j.Phases[0]
}

// TestFailuresAreNotAnswersByCount: the same with -requests: of the N
// requests, only those answered are answers.
func TestFailuresAreNotAnswersByCount(t *testing.T) {
	tg := &fakeTarget{do: func(n int64) (answer, error) {
		time.Sleep(time.Millisecond)
		if n%2 == 0 {
			return answer{}, io.EOF
		}
		return answer{entries: -1}, nil
	}}
	m, args := fakeArgs(t)
	res := runPhase(context.Background(), tg, m, args,
		phaseConfig{Sessions: 1, Duration: 10 * time.Second, Requests: 20, Seed: 1}, nil, nil)
	var ok, failures uint64
	for _, s := range res.Stats {
		ok += s.OK.Count() + s.Err.Count()
		failures += s.Failures.Load()
	}
	js := phaseJSON(t, m, &phaseReport{res: res})
	t.Logf("answers %d, failures %d; the phase's answered %d, failed %v", ok, failures, res.Answered, js["failed"])
	if failures == 0 {
		t.Fatal("the fake produced no failures")
	}
	if f, _ := js["failed"].(float64); res.Answered != ok || uint64(f) != failures || ok+failures != 20 {
		t.Errorf("the phase reports %d answered and %v failed, but %d of the 20 requests were answered and %d failed",
			res.Answered, js["failed"], ok, failures)
	}
}

// TestCPUWindowIsAnswerWindow: the server's CPU per answer is the CPU read
// at onStart and onEnd divided by the answers of the window, so the CPU must
// be read over that window too, not over the drain of the answers still in
// flight at its end: that would spread the CPU over the drain as well, and
// understate cores and CPU per answer by drain/(window+drain).
//
// The fake server spends exactly 2 ms of CPU per answer; the last requests
// of the window wait 800 ms (a slow answer in flight at the stop) and cost
// no CPU. The hooks below are run()'s, with the fake CPU counter in place
// of /proc/PID/stat.
func TestCPUWindowIsAnswerWindow(t *testing.T) {
	const perAnswer = 2 * time.Millisecond
	var (
		cpu      atomic.Int64 // fake server CPU, ns
		slowFrom atomic.Int64 // unix ns from which new requests are slow
	)
	tg := &fakeTarget{do: func(int64) (answer, error) {
		if sf := slowFrom.Load(); sf != 0 && time.Now().UnixNano() >= sf {
			time.Sleep(800 * time.Millisecond) // waits, spends no CPU
			return answer{entries: -1}, nil
		}
		time.Sleep(perAnswer)
		cpu.Add(int64(perAnswer))
		return answer{entries: -1}, nil
	}}
	m, args := fakeArgs(t)
	const window = time.Second

	// run()'s hooks, with cpu in place of processCPU.
	pr := &phaseReport{}
	var (
		cpuStart  time.Duration
		wallStart time.Time
		hookStart time.Time
		hookEnd   time.Time
	)
	onStart := func() {
		wallStart = time.Now()
		hookStart = wallStart
		cpuStart = time.Duration(cpu.Load())
		slowFrom.Store(wallStart.Add(window - 100*time.Millisecond).UnixNano())
	}
	onEnd := func() {
		hookEnd = time.Now()
		wall := time.Since(wallStart).Seconds()
		v := (time.Duration(cpu.Load()) - cpuStart).Seconds() / wall
		pr.ServerCPU = &v
	}
	pr.res = runPhase(context.Background(), tg, m, args,
		phaseConfig{Sessions: 4, Warmup: 100 * time.Millisecond, Duration: window, Seed: 1}, onStart, onEnd)

	span := hookEnd.Sub(hookStart)
	got := pr.cpuPerRequest()
	want := float64(perAnswer.Microseconds())
	t.Logf("window %v, CPU sampled over %v; %d answers, %.0f req/s, %.2f cores; CPU per answer %.0f µs, true %.0f µs",
		pr.res.Window, span, pr.res.Answered, pr.reqPerS(), *pr.ServerCPU, got, want)
	if d := span - pr.res.Window; d > 50*time.Millisecond || d < -50*time.Millisecond {
		t.Errorf("server CPU sampled over %v, answers counted over %v: the CPU window includes the %v drain",
			span, pr.res.Window, d)
	}
	if math.Abs(got-want)/want > 0.1 {
		t.Errorf("server CPU per answer %.0f µs, the fake spent exactly %.0f µs per answer (%.0f%% off)",
			got, want, 100*(got-want)/want)
	}
}

// TestSingleFailureNotATiming: a single-request repetition that got no
// answer (the connection dropped after 1 ms) is not a timing: its 1 ms is
// neither the script's "first" nor its "best" time, and the later answered
// repetitions do not clear its error. The cold first-request figures come
// from this column.
func TestSingleFailureNotATiming(t *testing.T) {
	var mu sync.Mutex
	tg := &fakeTarget{do: func(n int64) (answer, error) {
		mu.Lock()
		defer mu.Unlock()
		if n == 1 {
			time.Sleep(time.Millisecond)
			return answer{}, io.EOF
		}
		time.Sleep(30 * time.Millisecond)
		return answer{entries: 5, bytes: 100}, nil
	}}
	scripts := &hashList{}
	scripts.add("00")
	out, err := runSingle(context.Background(), tg, scripts, 1, 3, []string{"get_history"})
	if err != nil {
		t.Fatal(err)
	}
	r := out[0]
	t.Logf("times %v, first %v, best %v, error %q", r.Times, r.First(), r.Best(), r.Error)
	if r.First() < 20*time.Millisecond || r.Best() < 20*time.Millisecond || len(r.Times) != 2 {
		t.Errorf("times %v, first %v, best %v, but the only answers took 30 ms; the 1 ms is a dropped connection",
			r.Times, r.First(), r.Best())
	}
	if r.Error == "" {
		t.Errorf("the dropped connection's error is not reported")
	}
	if !r.Result || r.Entries != 5 || r.Bytes != 100 {
		t.Errorf("entries %d, bytes %d, result %v: the answered repetitions' result is not reported", r.Entries, r.Bytes, r.Result)
	}
}

// TestSingleTimingsMeetColdCaches: the README says "only a script's first
// method meets the server's caches cold for it", and the "heaviest scripts,
// a node just started" figures (first stats, first page of /txs/chain,
// /utxo) come from -single with the default Esplora mix. run() collects
// txids for the mix's transaction requests (esplora.tx.status in the default
// Esplora mix; transaction.get and get_merkle over Electrum) by requesting
// each heavy script's history: over Esplora its first page of /txs/chain,
// over Electrum its whole get_history, whose answer the node's answer cache
// then keeps. So it must do that after the single timings, or their "first"
// calls are not the server's first for those scripts.
func TestSingleTimingsMeetColdCaches(t *testing.T) {
	var (
		mu  sync.Mutex
		log []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.HasPrefix(p, "/scripthash/") {
			mu.Lock()
			log = append(log, p)
			mu.Unlock()
		}
		switch {
		case p == "/blocks/tip/height":
			fmt.Fprint(w, "2")
		case strings.HasPrefix(p, "/block-height/"):
			fmt.Fprint(w, strings.Repeat("0b", 32))
		case strings.HasSuffix(p, "/txs/chain"):
			fmt.Fprintf(w, `[{"txid":"%s","status":{"confirmed":true,"block_height":1}}]`, strings.Repeat("0a", 32))
		case strings.HasSuffix(p, "/utxo"):
			fmt.Fprint(w, "[]")
		case strings.HasPrefix(p, "/scripthash/"):
			fmt.Fprint(w, `{"chain_stats":{}}`)
		default:
			fmt.Fprint(w, "{}")
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	script := strings.Repeat("1f2e", 16)
	scripts := filepath.Join(dir, "scripts")
	if err := os.WriteFile(scripts, []byte(script+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The default Esplora mix, as `e2ebench load -esplora -single 6` runs it.
	cfg := mustParse(t, "-esplora", srv.URL, "-scripts", scripts, "-heavy", "1", "-single", "1",
		"-single-repeat", "1", "-sessions", "1", "-warmup", "0", "-duration", "50ms")
	if _, err := run(context.Background(), cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the server's first script requests: %q", log[:min(len(log), 4)])
	// The single timings' order is stats, txs, utxo: the first request the
	// server sees for the script should be the timed "first" stats.
	if len(log) == 0 {
		t.Fatal("no script requests")
	}
	if want := "/scripthash/" + reverseHex(script); log[0] != want {
		t.Errorf("the server's first request for the heavy script was %q, not the timed first call %q: "+
			"the single timings meet caches the tool warmed", log[0], want)
	}
}

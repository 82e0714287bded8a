package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/integration"
	"github.com/btcd-electrum/btcd-electrum/node"
)

func TestMain(m *testing.M) {
	// The in-process node logs to stdout unless NODE_TEST_LOG asks for it.
	if lvl := os.Getenv("NODE_TEST_LOG"); lvl != "" {
		_ = node.SetLogLevels(lvl)
	} else {
		node.SetLogStdout(false)
	}
	os.Exit(m.Run())
}

// blocks is how many blocks the test chain has; every one pays the mining
// script, so its history and unspent list have this many entries.
const blocks = 20

// TestAgainstNode runs the tool against a btcd-electrum node on regtest
// (in this process): a short load phase, the single-request timings, the
// JSON report, and error answers for malformed script hashes.
func TestAgainstNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Throttling and the per-IP session limit would shape the numbers;
	// benchmarks run without them, and so does the test.
	n := integration.StartNode(t, integration.NodeConfig{Esplora: true, Args: []string{
		"--electrumcosthardlimit=-1", "--electrummaxsessionsperip=-1"}})
	// Mine waits for the Electrum server to report the last block: the
	// index follows the chain in a writer of its own.
	if _, err := n.Mine(blocks); err != nil {
		t.Fatal(err)
	}
	mining := integration.ScriptHash(integration.MiningScript())
	dir := t.TempDir()

	t.Run("load", func(t *testing.T) {
		scripts := writeFile(t, dir, "scripts", "# heavy\n"+mining+" 20 history entries\n"+
			strings.Repeat("11", 32)+"\n"+strings.Repeat("2f", 32)+"  # never used\n")
		jsonPath := filepath.Join(dir, "out.json")
		cfg := mustParse(t, "-server", n.ElectrumAddr, "-scripts", scripts, "-heavy", "1",
			"-sessions", "2", "-duration", "1s", "-warmup", "200ms", "-seed", "3",
			"-mix", defaultMix+",subscribe=1,get_mempool=1,transaction.get=1,ping=1",
			"-single", "5", "-single-repeat", "2", "-pid", fmt.Sprint(os.Getpid()), "-settle", "100ms",
			"-json", jsonPath)
		rep, err := run(ctx, cfg, testLog{t})
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.writeJSONFile(jsonPath); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rep.writeTable(&out)
		t.Logf("report:\n%s", out.String())

		if rep.Tip != blocks || len(rep.Phases) != 1 {
			t.Fatalf("tip %d, %d phases", rep.Tip, len(rep.Phases))
		}
		p := rep.Phases[0]
		if p.res.Answered == 0 || p.reqPerS() <= 0 || p.res.Window < time.Second {
			t.Fatalf("phase: %d answers, %.0f req/s in %v", p.res.Answered, p.reqPerS(), p.res.Window)
		}
		if p.res.Connects != 2 || p.res.ConnectErrs != 0 || p.res.Disconnects != 0 {
			t.Fatalf("connections: %d opened, %d failed, %d lost", p.res.Connects, p.res.ConnectErrs, p.res.Disconnects)
		}
		for _, s := range p.res.Stats {
			if s.OK.Count() == 0 || s.Err.Count() != 0 || s.Failures.Load() != 0 {
				t.Errorf("%s: %d ok, %d errors %v, %d failures", s.Spec.Name, s.OK.Count(), s.Err.Count(),
					sortedKinds(s), s.Failures.Load())
			}
			q := []time.Duration{s.OK.Min(), s.OK.Quantile(.5), s.OK.Quantile(.9), s.OK.Quantile(.99), s.OK.Max()}
			for i := 1; i < len(q); i++ {
				if q[i] < q[i-1] || q[0] <= 0 {
					t.Errorf("%s: min/p50/p90/p99/max %v not ordered", s.Spec.Name, q)
				}
			}
		}
		if p.RSS == nil || p.RSS.IdleKiB <= 0 || p.RSS.PeakKiB < p.RSS.IdleKiB || p.RSS.SettledKiB <= 0 {
			t.Errorf("RSS %+v", p.RSS)
		}
		if p.ServerCPU == nil || *p.ServerCPU <= 0 {
			t.Errorf("server CPU not measured")
		}

		// The one heavy script: 3 methods and 2 subscribe calls.
		if len(rep.Single) != 5 {
			t.Fatalf("%d single-request results, want 5", len(rep.Single))
		}
		for _, s := range rep.Single {
			if s.Error != "" || len(s.Times) != 2 || s.Best() > s.Median() || s.Script != mining {
				t.Errorf("single %s: %+v", s.Method, s)
			}
			switch s.Method {
			case "get_history", "listunspent":
				if s.Entries != blocks {
					t.Errorf("single %s: %d entries, want %d", s.Method, s.Entries, blocks)
				}
			case "subscribe#1", "subscribe#2":
				if s.Bytes != 66 { // a quoted status hash
					t.Errorf("single %s: %d bytes", s.Method, s.Bytes)
				}
			}
		}

		raw, err := os.ReadFile(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		var j jsonReport
		if err := json.Unmarshal(raw, &j); err != nil {
			t.Fatalf("JSON report: %v", err)
		}
		if len(j.Phases) != 1 || len(j.Phases[0].Methods) != 9 || len(j.Single) != 5 || j.Phases[0].ReqPerS <= 0 {
			t.Fatalf("JSON report: %s", raw)
		}
		for _, m := range j.Phases[0].Methods {
			l := m.Latency
			if m.Count == 0 || l == nil || !(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
				t.Errorf("JSON method %+v latency %+v", m, l)
			}
		}
	})

	t.Run("error answers", func(t *testing.T) {
		// Malformed script hashes are sent as they are; the server's
		// error answers are counted as errors, not successes, and the
		// session goes on.
		scripts := writeFile(t, dir, "bad", "zz\n"+strings.Repeat("g", 64)+"\n")
		cfg := mustParse(t, "-server", n.ElectrumAddr, "-scripts", scripts, "-sessions", "1",
			"-requests", "30", "-duration", "20s", "-warmup", "0", "-single", "0", "-mix", "get_balance=1,block.header=1")
		rep, err := run(ctx, cfg, testLog{t})
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Phases[0]
		bal, hdr := p.res.Stats[0], p.res.Stats[1]
		if total := bal.OK.Count() + bal.Err.Count() + hdr.OK.Count() + hdr.Err.Count(); total != 30 || p.res.Answered != 30 {
			t.Fatalf("%d requests recorded, %d answered, want 30", total, p.res.Answered)
		}
		if bal.OK.Count() != 0 || bal.Err.Count() == 0 || bal.Failures.Load() != 0 {
			t.Fatalf("get_balance of malformed hashes: %d ok, %d errors, %d failures",
				bal.OK.Count(), bal.Err.Count(), bal.Failures.Load())
		}
		if hdr.OK.Count() == 0 || hdr.Err.Count() != 0 {
			t.Fatalf("block.header: %d ok, %d errors", hdr.OK.Count(), hdr.Err.Count())
		}
		kinds := sortedKinds(bal)
		var sum uint64
		for _, k := range kinds {
			sum += k.n
			if strings.HasPrefix(k.kind, "no answer") {
				t.Errorf("error kind %q", k.kind)
			}
		}
		if sum != bal.Err.Count() {
			t.Fatalf("error kinds %v do not add up to %d", kinds, bal.Err.Count())
		}
		t.Logf("get_balance errors: %v", kinds)
	})

	t.Run("esplora", func(t *testing.T) {
		// The same sessions over HTTP: every request of the Esplora mix
		// answered, one keep-alive connection per session, the single
		// timings of the heavy script with its entries.
		scripts := writeFile(t, dir, "escripts", mining+"\n"+strings.Repeat("11", 32)+"\n")
		cfg := mustParse(t, "-esplora", n.EsploraURL, "-scripts", scripts, "-heavy", "1",
			"-sessions", "2", "-duration", "1s", "-warmup", "200ms", "-mix", defaultEsploraMix+",esplora.tip=1",
			"-single", "1", "-single-repeat", "2", "-pid", fmt.Sprint(os.Getpid()), "-settle", "100ms")
		rep, err := run(ctx, cfg, testLog{t})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rep.writeTable(&out)
		t.Logf("report:\n%s", out.String())
		p := rep.Phases[0]
		if rep.Tip != blocks || p.res.Answered == 0 || p.res.Connects != 2 || p.res.Disconnects != 0 {
			t.Fatalf("tip %d, %d answers, %d connections opened, %d lost", rep.Tip, p.res.Answered,
				p.res.Connects, p.res.Disconnects)
		}
		if len(p.res.Stats) != 6 {
			t.Fatalf("%d methods", len(p.res.Stats))
		}
		for _, s := range p.res.Stats {
			if s.OK.Count() == 0 || s.Err.Count() != 0 || s.Failures.Load() != 0 {
				t.Errorf("%s: %d ok, %d errors %v, %d failures", s.Spec.Name, s.OK.Count(), s.Err.Count(),
					sortedKinds(s), s.Failures.Load())
			}
		}
		if p.ServerCPU == nil || *p.ServerCPU <= 0 {
			t.Errorf("server CPU not measured")
		}
		want := map[string]int{"esplora.stats": -1, "esplora.txs": 20, "esplora.utxo": 20}
		if len(rep.Single) != len(want) {
			t.Fatalf("%d single-request results, want %d", len(rep.Single), len(want))
		}
		for _, s := range rep.Single {
			if e, ok := want[s.Method]; !ok || s.Error != "" || len(s.Times) != 2 || s.Entries != e || s.Bytes == 0 {
				t.Errorf("single %s: %+v", s.Method, s)
			}
		}

		// Malformed script hashes: Esplora's 400 answers, counted as
		// error answers on a session that goes on.
		bad := writeFile(t, dir, "ebad", "zz\n")
		cfg = mustParse(t, "-esplora", n.EsploraURL, "-scripts", bad, "-sessions", "1", "-requests", "20",
			"-duration", "20s", "-warmup", "0", "-single", "0", "-mix", "esplora.stats=1")
		if rep, err = run(ctx, cfg, testLog{t}); err != nil {
			t.Fatal(err)
		}
		st := rep.Phases[0].res.Stats[0]
		if st.Err.Count() != 20 || st.OK.Count() != 0 || rep.Phases[0].res.Connects != 1 {
			t.Fatalf("stats of a malformed hash: %d ok, %d errors %v, %d connections", st.OK.Count(),
				st.Err.Count(), sortedKinds(st), rep.Phases[0].res.Connects)
		}
		if k := sortedKinds(st); len(k) != 1 || !strings.HasPrefix(k[0].kind, "HTTP 400") {
			t.Fatalf("error kinds %v", k)
		}
	})

	t.Run("check", func(t *testing.T) {
		// The Esplora API's answers agree with the Electrum server's on
		// every script, and a difference is reported.
		scripts := writeFile(t, dir, "cscripts", mining+"\n"+strings.Repeat("11", 32)+"\n")
		cfg := mustParse(t, "-check", "-server", n.ElectrumAddr, "-esplora", n.EsploraURL, "-scripts", scripts)
		var out bytes.Buffer
		res, err := runCheck(ctx, cfg, mustRead(t, scripts), &out)
		if err != nil || res.Checked != 2 || res.Differ != 0 || res.Skipped != 0 {
			t.Fatalf("%+v %v: %s", res, err, out.String())
		}
		// The Esplora API of another node: the mining script's history
		// there is empty.
		other := integration.StartNode(t, integration.NodeConfig{Esplora: true})
		cfg = mustParse(t, "-check", "-server", n.ElectrumAddr, "-esplora", other.EsploraURL, "-scripts", scripts)
		out.Reset()
		if res, err = runCheck(ctx, cfg, mustRead(t, scripts), &out); err != nil || res.Differ != 1 ||
			!strings.Contains(out.String(), mining) {
			t.Fatalf("%+v %v: %s", res, err, out.String())
		}
		// A script over the Esplora API's unspent-output limit is
		// skipped, not a difference.
		tight := integration.StartNode(t, integration.NodeConfig{Esplora: true, Args: []string{"--esploramaxutxos=5"}})
		if _, err := tight.Mine(blocks); err != nil {
			t.Fatal(err)
		}
		cfg = mustParse(t, "-check", "-server", n.ElectrumAddr, "-esplora", tight.EsploraURL, "-scripts", scripts)
		out.Reset()
		if res, err = runCheck(ctx, cfg, mustRead(t, scripts), &out); err != nil || res.Checked != 1 ||
			res.Skipped != 1 || res.Differ != 0 {
			t.Fatalf("%+v %v: %s", res, err, out.String())
		}
	})

	t.Run("limits", func(t *testing.T) {
		// A closed port is a connection error, not a hang.
		addr, err := integration.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		scripts := writeFile(t, dir, "one", mining+"\n")
		cfg := mustParse(t, "-server", addr, "-scripts", scripts, "-timeout", "2s")
		if _, err := run(ctx, cfg, testLog{t}); err == nil {
			t.Fatal("no error for a closed port")
		}
	})
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-server", "127.0.0.1:1"},
		{"-server", "127.0.0.1:1", "-scripts", "x", "-sessions", "0"},
		{"-server", "127.0.0.1:1", "-scripts", "x", "-sessions", "20,x"},
		{"-server", "127.0.0.1:1", "-scripts", "x", "-duration", "0"},
		{"-server", "127.0.0.1:1", "-scripts", "x", "-mix", "bogus=1"},
		{"-server", "127.0.0.1:1", "-scripts", "x", "-mix", "esplora.stats=1"},
		{"-esplora", "http://127.0.0.1:1", "-scripts", "x", "-mix", "get_balance=1"},
		{"-esplora", "http://127.0.0.1:1", "-scripts", "x", "-single-order", "subscribe"},
		{"-esplora", "http://127.0.0.1:1", "-server", "127.0.0.1:1", "-scripts", "x"},
		{"-check", "-esplora", "http://127.0.0.1:1", "-scripts", "x"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	cfg, err := parseFlags([]string{"-server", "127.0.0.1:1", "-scripts", "x", "-sessions", "20, 100"}, &bytes.Buffer{})
	if err != nil || len(cfg.Sessions) != 2 || cfg.Sessions[1] != 100 || cfg.Heavy != 100 || cfg.Mix.String() != defaultMix {
		t.Fatalf("%+v %v", cfg, err)
	}
	cfg, err = parseFlags([]string{"-esplora", "http://127.0.0.1:1", "-scripts", "x"}, &bytes.Buffer{})
	if err != nil || cfg.Mix.String() != defaultEsploraMix || strings.Join(cfg.SingleOrder, ",") != esploraSingleOrder {
		t.Fatalf("%+v %v", cfg, err)
	}
	if _, err := parseMix(electrumForEsploraMix); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) *hashList {
	t.Helper()
	l, err := readHashes(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustParse(t *testing.T, args ...string) *config {
	t.Helper()
	cfg, err := parseFlags(args, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testLog sends the tool's notes to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

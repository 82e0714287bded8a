// Command electrum-load measures how fast an Electrum server answers
// wallets. It speaks the plain Electrum protocol (newline-delimited
// JSON-RPC over TCP, or TLS) and so works against any Electrum server:
// btcd-electrum, Fulcrum, ElectrumX, electrs.
//
// It runs closed-loop sessions (one connection each, one request at a
// time) with a weighted mix of wallet requests over script hashes read
// from a file, one phase per session count, and reports throughput and
// per-method latency percentiles; optionally the server process's
// resident memory and CPU, and single-request timings of the heaviest
// scripts on an idle server. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	Server       string
	Esplora      string
	Check        bool
	TLS          bool
	Scripts      string
	Txids        string
	Heavy        int
	Sessions     []int
	Duration     time.Duration
	Requests     uint64
	Warmup       time.Duration
	Mix          *mix
	Seed         uint64
	PID          int
	Settle       time.Duration
	Single       int
	SingleRepeat int
	SingleOrder  []string
	Timeout      time.Duration
	JSON         string
}

// where names the target.
func (c *config) where() string {
	if c.Esplora != "" {
		return c.Esplora
	}
	return c.Server
}

// maxSessions bounds -sessions: the tool never opens more connections
// than a phase's session count, and never more than this.
const maxSessions = 10000

// maxPhaseTime bounds a phase run with -duration 0 (until -requests).
const maxPhaseTime = 10 * time.Minute

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("electrum-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{}
	var sessions, mixSpec string
	fs.StringVar(&cfg.Server, "server", "", "Electrum server `host:port` (plain TCP unless -tls); the only address the tool connects to")
	fs.StringVar(&cfg.Esplora, "esplora", "", "Esplora API base `URL` (with its path prefix): load it over HTTP instead of an Electrum server, with the Esplora requests of the mix")
	fs.BoolVar(&cfg.Check, "check", false, "instead of a load: compare, for every script of -scripts, the -esplora API's stats, first page of confirmed transactions and unspent outputs with the -server Electrum server's history, balance and unspent outputs")
	fs.BoolVar(&cfg.TLS, "tls", false, "connect over TLS (the certificate is not verified)")
	fs.StringVar(&cfg.Scripts, "scripts", "", "`file` of script hashes, one per line (first field; '#' comments); the first -heavy lines are the scripts with the longest histories")
	fs.StringVar(&cfg.Txids, "txids", "", "`file` of txids for transaction.get (default: taken from the heavy scripts' histories)")
	fs.IntVar(&cfg.Heavy, "heavy", 100, "number of heavy scripts at the top of the scripts file")
	fs.StringVar(&sessions, "sessions", "10", "comma-separated session counts, one load phase each")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measuring time of each phase (0: until -requests)")
	fs.Uint64Var(&cfg.Requests, "requests", 0, "end a phase after this many measured requests (0: -duration only)")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "unmeasured load before each phase's measurement")
	fs.StringVar(&mixSpec, "mix", "", "request mix, `method=weight,...` (default "+defaultMix+"; with -esplora "+defaultEsploraMix+"); methods: "+knownMethods())
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed (same seed, same request sequence per session)")
	fs.IntVar(&cfg.PID, "pid", 0, "server process id: sample its resident memory (VmRSS) every 100 ms and its CPU time")
	fs.DurationVar(&cfg.Settle, "settle", 5*time.Second, "with -pid, wait this long after a phase before reading the settled RSS")
	fs.IntVar(&cfg.Single, "single", 10, "time single requests for the first N heavy scripts on an idle session (0: skip)")
	fs.IntVar(&cfg.SingleRepeat, "single-repeat", 3, "repetitions of each single-request timing")
	orderSpec := fs.String("single-order", "", "`methods` timed for each heavy script, in this order (\"subscribe\": first and second scripthash.subscribe on one session; default "+singleOrder+", with -esplora "+esploraSingleOrder+")")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "connect timeout and longest wait for one answer")
	fs.StringVar(&cfg.JSON, "json", "", "also write the results as JSON to `file`")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if (cfg.Server == "" && cfg.Esplora == "") || cfg.Scripts == "" {
		return nil, errors.New("-server or -esplora, and -scripts, are required")
	}
	if cfg.Check && (cfg.Server == "" || cfg.Esplora == "") {
		return nil, errors.New("-check needs -server and -esplora")
	}
	if cfg.Esplora != "" && !cfg.Check && cfg.Server != "" {
		return nil, errors.New("-server and -esplora: one target to load (both only with -check)")
	}
	if mixSpec == "" {
		mixSpec = defaultMix
		if cfg.Esplora != "" {
			mixSpec = defaultEsploraMix
		}
	}
	if *orderSpec == "" {
		*orderSpec = singleOrder
		if cfg.Esplora != "" {
			*orderSpec = esploraSingleOrder
		}
	}
	for _, s := range strings.Split(sessions, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxSessions {
			return nil, fmt.Errorf("-sessions: %q is not a count in 1..%d", s, maxSessions)
		}
		cfg.Sessions = append(cfg.Sessions, n)
	}
	if cfg.Duration < 0 || cfg.Warmup < 0 || cfg.Settle < 0 || cfg.Timeout <= 0 {
		return nil, errors.New("durations must not be negative, -timeout must be positive")
	}
	if cfg.Duration == 0 {
		if cfg.Requests == 0 {
			return nil, errors.New("-duration 0 needs -requests")
		}
		cfg.Duration = maxPhaseTime
	}
	if cfg.Heavy < 0 || cfg.Single < 0 || cfg.SingleRepeat < 1 {
		return nil, errors.New("-heavy and -single must not be negative, -single-repeat at least 1")
	}
	var err error
	if cfg.Mix, err = parseMix(mixSpec); err != nil {
		return nil, err
	}
	if cfg.SingleOrder, err = parseSingleOrder(*orderSpec); err != nil {
		return nil, err
	}
	for _, e := range cfg.Mix.Entries {
		if e.Spec.esplora() != (cfg.Esplora != "") {
			return nil, fmt.Errorf("-mix: %s is not a request of the target (Electrum methods without -esplora, Esplora ones with it)", e.Spec.Name)
		}
	}
	for _, name := range cfg.SingleOrder {
		if spec, ok := lookupMethod(name); (ok && spec.esplora() != (cfg.Esplora != "")) || (name == "subscribe" && cfg.Esplora != "") {
			return nil, fmt.Errorf("-single-order: %s is not a request of the target", name)
		}
		if spec, _ := lookupMethod(name); name != "subscribe" && spec.Arg != argScript {
			return nil, fmt.Errorf("-single-order: %s does not take a script", name)
		}
	}
	return cfg, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "electrum-load:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Check {
		if err := check(ctx, cfg, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "electrum-load:", err)
			os.Exit(1)
		}
		return
	}
	rep, err := run(ctx, cfg, os.Stderr)
	if rep != nil {
		rep.writeTable(os.Stdout)
		if cfg.JSON != "" {
			if werr := rep.writeJSONFile(cfg.JSON); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "electrum-load:", err)
		os.Exit(1)
	}
}

// check runs -check and reports it on out.
func check(ctx context.Context, cfg *config, out io.Writer) error {
	scripts, err := readHashes(cfg.Scripts)
	if err != nil {
		return err
	}
	res, err := runCheck(ctx, cfg, scripts, out)
	if res != nil {
		fmt.Fprintf(out, "checked %d scripts (%d skipped: over a server's limits): %d differ\n",
			res.Checked, res.Skipped, res.Differ)
	}
	if err == nil && res.Differ > 0 {
		err = fmt.Errorf("%d scripts differ", res.Differ)
	}
	return err
}

// run does the whole measurement; progress notes go to logw. On an error
// after measuring began it returns what was measured so far too.
func run(ctx context.Context, cfg *config, logw io.Writer) (*report, error) {
	logf := func(format string, args ...any) { fmt.Fprintf(logw, format+"\n", args...) }
	scripts, err := readHashes(cfg.Scripts)
	if err != nil {
		return nil, err
	}
	if scripts.Odd > 0 {
		logf("note: %d of %d script lines are not 64 hex digits; they are sent as they are", scripts.Odd, len(scripts.Raw))
	}
	heavy := min(cfg.Heavy, len(scripts.Raw))
	var d target = &dialer{addr: cfg.Server, tls: cfg.TLS, timeout: cfg.Timeout}
	where := cfg.Server
	if cfg.Esplora != "" {
		d, where = newEsploraTarget(cfg.Esplora, cfg.Timeout), cfg.Esplora
	}

	s, version, err := d.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	s.Close()
	tip, err := d.tip(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	logf("server %s: %s; tip %d", where, version, tip)

	var txids, mined, blocks *hashList
	if cfg.Mix.needs(argTx) && cfg.Txids != "" {
		if txids, err = readHashes(cfg.Txids); err != nil {
			return nil, err
		}
	}

	rep := &report{cfg: cfg, Started: time.Now(), ServerVersion: json.RawMessage(version),
		Tip: tip, NumScripts: len(scripts.Raw), NumHeavy: heavy, OddScripts: scripts.Odd}

	var rss *rssSampler
	if cfg.PID > 0 {
		if rss, err = startRSS(cfg.PID, 100*time.Millisecond); err != nil {
			return nil, fmt.Errorf("-pid: %w", err)
		}
		defer rss.close()
	}

	if n := min(cfg.Single, heavy); n > 0 {
		logf("single-request timings for %d heavy scripts, %d repetitions each", n, cfg.SingleRepeat)
		single, err := runSingle(ctx, d, scripts, n, cfg.SingleRepeat, cfg.SingleOrder)
		rep.Single = single
		if err != nil {
			return rep, fmt.Errorf("single-request timings: %w", err)
		}
	}

	// Txids are collected from the heavy scripts' histories only after
	// the single timings: asked before, the server would have those
	// histories cached before the timed first calls.
	if cfg.Mix.needs(argTxHeight) || (cfg.Mix.needs(argTx) && txids == nil) {
		if mined, err = d.harvest(ctx, scripts, max(heavy, 1)); err != nil {
			return rep, err
		}
		if txids == nil {
			txids = mined
		}
	}
	if cfg.Mix.needs(argBlock) {
		if blocks, err = d.blocks(ctx, max(0, tip-maxBlocks+1), tip); err != nil {
			return rep, err
		}
	}

	for i, n := range cfg.Sessions {
		if ctx.Err() != nil {
			break
		}
		if t, err := d.tip(ctx); err == nil {
			tip = t
		}
		pr := &phaseReport{Tip: tip}
		if rss != nil {
			pr.RSS = &rssReport{IdleKiB: rss.now()}
			rss.resetPeak()
		}
		logf("phase %d: %d sessions, warm-up %v, %s", i+1, n, cfg.Warmup, phaseBound(cfg))
		var cpuStart, selfStart time.Duration
		var wallStart time.Time
		var cpuErr error
		onStart := func() {
			wallStart = time.Now()
			selfStart = selfCPU()
			if cfg.PID > 0 {
				cpuStart, cpuErr = processCPU(cfg.PID)
			}
		}
		onEnd := func() {
			wall := time.Since(wallStart).Seconds()
			pr.ToolCPU = (selfCPU() - selfStart).Seconds() / wall
			if cfg.PID > 0 && cpuErr == nil {
				if c, err := processCPU(cfg.PID); err == nil {
					v := (c - cpuStart).Seconds() / wall
					pr.ServerCPU = &v
				}
			}
		}
		args := requestArgs{scripts: scripts, txids: txids, mined: mined, blocks: blocks, tip: tip}
		pr.res = runPhase(ctx, d, cfg.Mix, args, phaseConfig{
			Sessions: n, Warmup: cfg.Warmup, Duration: cfg.Duration, Requests: cfg.Requests,
			Seed: cfg.Seed, Index: i,
		}, onStart, onEnd)
		if rss != nil {
			pr.RSS.PeakKiB = rss.peakKiB()
			sleep(ctx, cfg.Settle)
			pr.RSS.SettledKiB = rss.now()
			pr.RSS.SettleS = cfg.Settle.Seconds()
			if err := rss.lastErr(); err != nil {
				logf("note: reading the server's memory: %v", err)
			}
		}
		rep.Phases = append(rep.Phases, pr)
		logf("phase %d: %.0f req/s", i+1, pr.reqPerS())
	}
	if ctx.Err() != nil {
		return rep, errors.New("interrupted; results so far reported")
	}
	return rep, nil
}

func phaseBound(cfg *config) string {
	switch {
	case cfg.Requests > 0 && cfg.Duration < maxPhaseTime:
		return fmt.Sprintf("%d requests or %v, whichever first", cfg.Requests, cfg.Duration)
	case cfg.Requests > 0:
		return fmt.Sprintf("%d requests", cfg.Requests)
	}
	return fmt.Sprintf("measuring %v", cfg.Duration)
}

// tip opens a session, asks for the tip and closes it.
func (d *dialer) tip(ctx context.Context) (int64, error) {
	c, _, err := d.dial(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	m, err := c.call("blockchain.headers.subscribe", true)
	if err != nil {
		return 0, fmt.Errorf("blockchain.headers.subscribe: %w", err)
	}
	if m.Error != nil {
		e := parseError(m.Error)
		return 0, fmt.Errorf("blockchain.headers.subscribe: error %d: %s", e.Code, e.Message)
	}
	var tip struct {
		Height *int64 `json:"height"`
	}
	if err := json.Unmarshal(m.Result, &tip); err != nil || tip.Height == nil || *tip.Height < 0 {
		return 0, fmt.Errorf("blockchain.headers.subscribe: unexpected result %.200s", m.Result)
	}
	return *tip.Height, nil
}

// maxHarvest bounds the txids kept for transaction requests.
const maxHarvest = 100000

// harvest collects txids for transaction requests from the histories of
// the first n scripts.
func (d *dialer) harvest(ctx context.Context, scripts *hashList, n int) (*hashList, error) {
	c, _, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	l := &hashList{}
	for i := 0; i < n && i < len(scripts.Quoted) && len(l.Raw) < maxHarvest; i++ {
		raw, err := c.callFull("blockchain.scripthash.get_history", 64<<20, scripts.Quoted[i])
		if err != nil {
			return nil, fmt.Errorf("collecting txids: %w", err)
		}
		var msg struct {
			Result []struct {
				TxHash string `json:"tx_hash"`
				Height int64  `json:"height"`
			} `json:"result"`
		}
		if json.Unmarshal(raw, &msg) != nil {
			continue // an error answer
		}
		for _, e := range msg.Result {
			if len(l.Raw) < maxHarvest && e.Height > 0 {
				l.add(e.TxHash)
				l.Heights = append(l.Heights, e.Height)
			}
		}
	}
	if len(l.Raw) == 0 {
		return nil, errors.New("no confirmed txids in the heavy scripts' histories; give -txids")
	}
	return l, nil
}

// blocks: Electrum requests name blocks by height.
func (d *dialer) blocks(context.Context, int64, int64) (*hashList, error) {
	return nil, errors.New("Electrum requests name blocks by height")
}

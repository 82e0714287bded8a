package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/freeport"
	"github.com/btcd-electrum/btcd-electrum/internal/hostile"
)

// hostileFlags sizes the attacks (docs/RELIABILITY.md, "Hostile clients").
type hostileFlags struct {
	kinds    string
	phase    time.Duration
	settle   time.Duration
	interval time.Duration
	idle     int
	slow     int
	halfOpen int
	workers  int
	subs     int
	rate     int
	sndBuf   int
	wsCases  string
	sources  int
	subnets  int
	maxSess  int
	maxRSS   int64
	rounds   int
	attacker string
	awake    bool
	// echo is the floor probe's echo process (machine.go).
	echo string
	// walletLog gets the wallet's requests, one line each
	// (hostile.GoodClient.Log).
	walletLog io.Writer
}

// hostileNodeArgs are the limits the benchmark runs the node with, beside
// the defaults: loopback is not exempt from the per-IP limits (the
// attackers come from many loopback addresses, as from many hosts), and
// the server may hold 10,000 sessions (so 5,000 idle connections are
// sessions, not refusals).
func hostileNodeArgs(maxSessions int) []string {
	return []string{"--electrumexemptnets=none", fmt.Sprintf("--electrummaxsessions=%d", maxSessions)}
}

// runHostile measures a well-behaved wallet beside each attack in turn.
func runHostile(args []string) error {
	var (
		c  common
		hf hostileFlags
	)
	fs := flag.NewFlagSet("hostile", flag.ExitOnError)
	c.register(fs)
	fs.StringVar(&hf.kinds, "kinds", "", "attacks to run, comma-separated (default all: "+kindList()+")")
	fs.DurationVar(&hf.phase, "phase", 15*time.Second, "measuring time of the wallet without and with each attack, in each round")
	fs.IntVar(&hf.rounds, "rounds", 3, "rounds of each attack: a window without it, then one with it (the p99 ratio is of the rounds' medians)")
	fs.StringVar(&hf.attacker, "attacker", "idle", "the attacking process's priority: idle (SCHED_IDLE), nice (nice 19) or normal")
	fs.BoolVar(&hf.awake, "awake", true, "keep every CPU out of its idle state for the whole run, with a spinner per CPU at SCHED_IDLE that yields to everything (a virtual machine's halted CPU takes milliseconds to wake, and without the attack the CPUs idle)")
	fs.DurationVar(&hf.settle, "settle", 10*time.Second, "wait after an attack has ended (and the sessions are back) before reading the memory, and before the next round's window without the attack")
	fs.DurationVar(&hf.interval, "interval", 20*time.Millisecond, "the wallet's pace: a request every interval")
	fs.IntVar(&hf.idle, "idle", 5000, "idle connections")
	fs.IntVar(&hf.slow, "slow", 1000, "slow readers")
	fs.IntVar(&hf.halfOpen, "halfopen", 1000, "half-open TLS handshakes")
	fs.IntVar(&hf.workers, "workers", 8, "sessions of the 2 MB line, batch, invalid JSON and WebSocket attacks")
	fs.StringVar(&hf.wsCases, "wscases", "", "run only the bad WebSocket cases whose names match this regular expression (default all: "+strings.Join(hostile.WSCaseNames(), "; ")+")")
	fs.IntVar(&hf.subs, "subworkers", 20, "sessions of the subscription flood")
	fs.IntVar(&hf.rate, "rate", 2000, "connections per second of the churn")
	fs.IntVar(&hf.sndBuf, "attacksndbuf", 0, "the attacker's socket send buffer in bytes (SO_SNDBUF; 0: the system's autotuning): its writes on loopback do the node's receive work in the attacker's system call (hostile.Target.SendBuffer)")
	fs.IntVar(&hf.sources, "sources", 1000, "loopback addresses each attack comes from")
	fs.IntVar(&hf.subnets, "subnets", 100, "/24 networks those addresses are in (each attack and round its own)")
	fs.IntVar(&hf.maxSess, "maxsessions", 10000, "the node's --electrummaxsessions")
	fs.Int64Var(&hf.maxRSS, "maxrss", 8192, "stop an attack early when the node's resident memory passes this many MiB (the machine's safety)")
	walletLog := fs.String("walletlog", "", "append each wallet request to this file: its start (Unix ns), latency (ns) and method, to match against an execution trace of the node (-nodeargs --profile=PORT, /debug/pprof/trace)")
	fs.Parse(args)
	if *walletLog != "" {
		f, err := os.OpenFile(*walletLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		hf.walletLog = f
	}
	if hf.rounds < 1 || hf.rounds > 20 {
		return fmt.Errorf("-rounds must be 1 to 20")
	}
	switch hf.attacker {
	case "idle", "nice", "normal":
	default:
		return fmt.Errorf("-attacker must be idle, nice or normal")
	}
	if _, err := regexp.Compile(hf.wsCases); err != nil {
		return fmt.Errorf("-wscases: %w", err)
	}
	kinds, err := parseKinds(hf.kinds)
	if err != nil {
		return err
	}
	if hf.subnets < 1 || 20+len(kinds)*hf.rounds*hf.subnets/250 > 255 {
		// hostile.LoopbackSources: 250 /24s under each 127.x from 127.20.
		return fmt.Errorf("-subnets times -rounds times the attacks must fit in 127.20.0.0 to 127.255.255.255")
	}
	c.runs = 1
	ci, scratch, cleanup, err := c.setup()
	if err != nil {
		return err
	}
	done := false
	defer func() { finish(done, cleanup, scratch) }()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	scriptsFile := filepath.Join(ci.Dir, "scripts.txt")
	scripts, err := readScripts(scriptsFile, 5000)
	if err != nil {
		return err
	}

	dir := filepath.Join(scratch, "hostile")
	dataDir := filepath.Join(dir, "data")
	if err := copyTree(ci.DBPath(), filepath.Join(dataDir, ci.NetDir(), "blocks_ffldb")); err != nil {
		return fmt.Errorf("copy chain: %w", err)
	}
	ports := make([]int, 6)
	for i := range ports {
		if ports[i], err = freeport.Port(); err != nil {
			return err
		}
	}
	addr := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])) }
	limits := hostileNodeArgs(hf.maxSess)
	nodeArgs := append([]string{ci.NetFlag(), "--datadir=" + dataDir, "--logdir=" + filepath.Join(dir, "logs"),
		"--nolisten", "--nodnsseed", "--connect=127.0.0.1:1", "--addcheckpoint=" + ci.Checkpoint, "--nocfilters",
		"--rpclisten=" + addr(4), "--rpcuser=" + rpcUser, "--rpcpass=" + rpcPass, "--notls",
		"--metricslisten=" + addr(5),
		"--electrumindex", "--electrumlisten=" + addr(0), "--electrumtlslisten=" + addr(1),
		"--electrumwslisten=" + addr(2), "--electrumwsslisten=" + addr(3),
		"--electrumcert=" + filepath.Join(dir, "electrum.cert"), "--electrumkey=" + filepath.Join(dir, "electrum.key")},
		limits...)
	nodeArgs = append(nodeArgs, c.nodeArgs...)
	onLine := func(t time.Duration, line string) {
		if c.verbose {
			fmt.Fprintf(os.Stderr, "  [node %6.1fs] %s\n", t.Seconds(), line)
		}
	}
	p, err := startProc(c.node, nodeArgs, filepath.Join(dir, "node.log"), onLine)
	if err != nil {
		return err
	}
	defer p.Stop(5 * time.Minute)
	fmt.Fprintf(os.Stderr, "chain %s: %s, %d tx; building the index and waiting for the Electrum port\n", ci.Dir, ci.Network, ci.Txs)
	ready, err := waitElectrumTip(p, ports[0], ci.TipHeight, time.After(c.timeout))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "serving the tip after %.1f s\n", ready.Seconds())
	rpc := newRPCClient(ports[4])
	nofile, _ := procLimit(p.Pid(), "Max open files")

	// The machine's floor, measured beside the wallet in every window:
	// an echo process at the node's priority.
	echo, err := startHelper(self, "hostile-echo", false, true)
	if err != nil {
		return err
	}
	defer echo.stop()
	hf.echo = echo.line
	if hf.awake {
		spinners, err := startSpinners(self)
		if err != nil {
			return err
		}
		defer stopHelpers(spinners)
	}

	ctx := context.Background()
	mix, err := walletMix(ctx, addr(0), scripts, ci.TipHeight)
	if err != nil {
		return err
	}
	ref, err := hostile.NewGoodClient(ctx, addr(0), net.IPv4(127, 1, 0, 1), mix, nil)
	if err != nil {
		return err
	}
	refAnswers := ref.Ref()
	ref.Close()

	rep := &hostileReport{
		Started: time.Now().UTC(), Chain: ci, Node: c.node, NodeArgs: nodeArgs, Limits: limits,
		NodeNofile: nofile, CPUs: runtime.NumCPU(), Phase: hf.phase.Seconds(), Rounds: hf.rounds, Attacker: hf.attacker, Awake: hf.awake, Damon: damonState(), AttackSndBuf: hf.sndBuf, WSCases: hf.wsCases, IntervalMs: float64(hf.interval) / 1e6,
		MixSize: len(mix),
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.LoadAvg = strings.TrimSpace(string(b))
	}
	rep.RSSStartKB = p.RSSKB()
	for i, k := range kinds {
		r, err := hostilePhase(ctx, p, rpc, self, addr, i, k, &hf, scriptsFile, mix, refAnswers, ports[5])
		if r != nil {
			rep.Attacks = append(rep.Attacks, r)
			fmt.Fprintf(os.Stderr, "%s: wallet p99 ratio x%.2f (pooled: %.2f ms unloaded, %.2f ms during, x%.2f); RSS %d -> peak %d -> after %d MiB\n",
				k, r.Ratio, r.Unloaded.P99ms(), r.During.P99ms(), r.PooledRatio, r.RSSBeforeKB>>10, r.RSSPeakKB>>10, r.RSSAfterKB>>10)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	rep.RSSEndKB = p.RSSKB()
	rep.HWMKB = p.HWMKB()
	if info, err := electrumInfo(rpc); err == nil {
		rep.FinalInfo = info
	}
	rep.writeTable(os.Stdout)
	if c.jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if c.mdOut != "" {
		f, err := os.OpenFile(c.mdOut, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		rep.writeTable(f)
		f.Close()
	}
	done = true
	return nil
}

func kindList() string {
	var s []string
	for _, k := range hostile.Kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ",")
}

func parseKinds(s string) ([]hostile.Kind, error) {
	if s == "" {
		return hostile.Kinds, nil
	}
	var out []hostile.Kind
	for _, f := range strings.Split(s, ",") {
		k := hostile.Kind(strings.TrimSpace(f))
		found := false
		for _, known := range hostile.Kinds {
			found = found || known == k
		}
		if !found {
			return nil, fmt.Errorf("unknown attack %q (known: %s)", k, kindList())
		}
		out = append(out, k)
	}
	return out, nil
}

// readScripts returns up to n script hashes of a chain's scripts.txt
// (heaviest first).
func readScripts(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the chain has no scripts file: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < n {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || len(fields[0]) != 64 {
			continue
		}
		out = append(out, fields[0])
	}
	if len(out) < 200 {
		return nil, fmt.Errorf("%s: only %d script hashes", path, len(out))
	}
	return out, sc.Err()
}

// walletMix builds the wallet's request mix: ten scripts of modest
// history (a wallet's addresses, not an exchange's), transactions of
// theirs, and headers across the chain.
func walletMix(ctx context.Context, addr string, scripts []string, tip int32) ([]hostile.Request, error) {
	ws := scripts[150:160]
	rng := rand.New(rand.NewPCG(1, 2))
	var heights []int
	for i := 0; i < 10; i++ {
		heights = append(heights, rng.IntN(int(tip)+1))
	}
	// Transactions: the first of each script's history.
	var txids []string
	for _, sh := range ws {
		res, err := rawCall(addr, "blockchain.scripthash.get_history", strconv.Quote(sh))
		if err != nil {
			return nil, err
		}
		var hist []struct {
			TxHash string `json:"tx_hash"`
		}
		if err := json.Unmarshal(res, &hist); err == nil && len(hist) > 0 {
			txids = append(txids, hist[0].TxHash)
		}
	}
	return hostile.Mix(ws, txids, heights), nil
}

// rawCall opens a session, negotiates, makes one call and closes.
func rawCall(addr, method, params string) (json.RawMessage, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c, `{"jsonrpc":"2.0","id":0,"method":"server.version","params":["e2ebench","1.4"]}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":%q,"params":[%s]}`+"\n", method, params)
	br := bufio.NewReaderSize(c, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || string(m.ID) != "1" {
			continue
		}
		if len(m.Error) > 0 && string(m.Error) != "null" {
			return nil, fmt.Errorf("%s: %s", method, m.Error)
		}
		return m.Result, nil
	}
}

// hostileResult is one attack's measurements.
type hostileResult struct {
	Kind string `json:"kind"`
	Size string `json:"size"`
	// Rounds are the attack's rounds: in each the wallet is measured
	// without the attack and then with it.
	Rounds []hostileRound `json:"rounds"`
	// Unloaded and During pool the wallet's requests of every round,
	// right before the attack and during it.
	Unloaded hostileLatency `json:"unloaded"`
	During   hostileLatency `json:"during"`
	// After is the wallet once the last round's attack has ended.
	After hostileLatency `json:"after"`
	// Ratio is the median of the rounds' p99 during the attack over the
	// median of their p99 without it: a window the machine stalled in,
	// with or without the attack, moves it by one place, not by the
	// stall. PooledRatio is During.P99 / Unloaded.P99.
	Ratio       float64 `json:"p99_ratio"`
	PooledRatio float64 `json:"p99_ratio_pooled"`
	// FloorUnloaded and FloorDuring pool the machine's floor (an echo
	// process probed beside the wallet, machine.go) over the rounds, and
	// FloorRatio is their ratio as Ratio is the wallet's: what the
	// attack costs a process that does no work.
	FloorUnloaded hostileLatency `json:"floor_unloaded"`
	FloorDuring   hostileLatency `json:"floor_during"`
	FloorRatio    float64        `json:"floor_p99_ratio"`
	// Attacker is what the attack's connections got, over all rounds.
	Attacker hostile.Summary `json:"attacker"`
	// AttackCPU is the attacking process's CPU time over the measured
	// windows' wall time (cores), NodeCPU the node's.
	AttackCPU float64 `json:"attack_cpu_cores"`
	NodeCPU   float64 `json:"node_cpu_cores"`
	// MachineUnloaded and MachineDuring average the rounds' (machine.go).
	MachineUnloaded machineUse `json:"machine_unloaded"`
	MachineDuring   machineUse `json:"machine_during"`
	// Sessions and Subscriptions are the server's counts at the end of the
	// last measured window; SessionsAfter once the attack has ended.
	Sessions      int `json:"sessions"`
	Subscriptions int `json:"subscriptions"`
	SessionsAfter int `json:"sessions_after"`
	// RSS (KiB): before the first round, the peak during any round, and
	// after the last one ended and the settle time passed.
	RSSBeforeKB int64 `json:"rss_before_kib"`
	RSSPeakKB   int64 `json:"rss_peak_kib"`
	RSSAfterKB  int64 `json:"rss_after_kib"`
	// Heap and goroutines from the node's metrics, before and after.
	HeapBefore       float64 `json:"heap_inuse_before_bytes,omitempty"`
	HeapAfter        float64 `json:"heap_inuse_after_bytes,omitempty"`
	GoroutinesBefore float64 `json:"goroutines_before,omitempty"`
	GoroutinesAfter  float64 `json:"goroutines_after,omitempty"`
	// AttackSeconds is how long the attacker ran (start to stop, all
	// rounds); ConnsPerSecond its connections over that time.
	AttackSeconds  float64 `json:"attack_s"`
	ConnsPerSecond float64 `json:"attack_conns_per_s"`
	// Aborted says an attack was stopped early because the node's memory
	// passed -maxrss.
	Aborted bool `json:"aborted,omitempty"`
	// Served says the wallet got every answer right, on one session, in
	// every window.
	Served bool `json:"served"`
}

// hostileRound is one window without the attack and one with it.
type hostileRound struct {
	Unloaded hostileLatency `json:"unloaded"`
	During   hostileLatency `json:"during"`
	// FloorUnloaded and FloorDuring are the machine's floor in the same
	// windows.
	FloorUnloaded hostileLatency `json:"floor_unloaded"`
	FloorDuring   hostileLatency `json:"floor_during"`
	AttackCPU     float64        `json:"attack_cpu_cores"`
	NodeCPU       float64        `json:"node_cpu_cores"`
	RSSPeakKB     int64          `json:"rss_peak_kib"`
	// MachineUnloaded and MachineDuring are what the windows cost the
	// machine outside the wallet's requests (machine.go).
	MachineUnloaded machineUse `json:"machine_unloaded"`
	MachineDuring   machineUse `json:"machine_during"`
}

type hostileLatency struct {
	hostile.Result
}

func (l hostileLatency) P50ms() float64 { return float64(l.P50) / 1e6 }
func (l hostileLatency) P99ms() float64 { return float64(l.P99) / 1e6 }

// hostilePhase measures the wallet without and with attack k, -rounds
// times, and then the server after it.
func hostilePhase(ctx context.Context, p *proc, rpc *rpcClient, self string, addr func(int) string, i int, k hostile.Kind,
	hf *hostileFlags, scriptsFile string, mix []hostile.Request, ref [][]byte, metricsPort int) (*hostileResult, error) {
	r := &hostileResult{Kind: string(k)}
	window := 0
	wallet := func() (*hostile.GoodClient, error) {
		// A new /24 for every window: a session's and a subnet's cost
		// outlive a window (hostile.NewGoodClient).
		// (127.1.0.0 to 127.19.255.255; the attackers are above.)
		window++
		n := i*(2*hf.rounds+1) + window
		g, err := hostile.NewGoodClient(ctx, addr(0), net.IPv4(127, byte(1+n/250), byte(n%250), 1), mix, ref)
		if g != nil {
			g.Log = hf.walletLog
		}
		return g, err
	}
	info, err := electrumInfo(rpc)
	if err != nil {
		return nil, err
	}
	baseSessions := info.Sessions
	r.HeapBefore, r.GoroutinesBefore = nodeMetrics(metricsPort)
	r.RSSBeforeKB = p.RSSKB()

	args := []string{"hostile-attack", "-kind", string(k), "-tcp", addr(0), "-tls", addr(1), "-ws", addr(2), "-wss", addr(3),
		"-sources", strconv.Itoa(hf.sources), "-subnets", strconv.Itoa(hf.subnets),
		"-scripts", scriptsFile, "-sndbuf", strconv.Itoa(hf.sndBuf), "-wscases", hf.wsCases}
	switch k {
	case hostile.Idle:
		args = append(args, "-conns", strconv.Itoa(hf.idle))
		r.Size = fmt.Sprintf("%d connections", hf.idle)
	case hostile.SlowRead:
		args = append(args, "-conns", strconv.Itoa(hf.slow))
		r.Size = fmt.Sprintf("%d connections", hf.slow)
	case hostile.TLSHalfOpen:
		args = append(args, "-conns", strconv.Itoa(hf.halfOpen))
		r.Size = fmt.Sprintf("%d connections (TLS and WSS)", hf.halfOpen)
	case hostile.SubFlood:
		args = append(args, "-workers", strconv.Itoa(hf.subs))
		r.Size = fmt.Sprintf("%d sessions", hf.subs)
	case hostile.Churn:
		args = append(args, "-rate", strconv.Itoa(hf.rate))
		r.Size = fmt.Sprintf("%d connections/s", hf.rate)
	default:
		args = append(args, "-workers", strconv.Itoa(hf.workers))
		r.Size = fmt.Sprintf("%d sessions", hf.workers)
	}
	var unloaded, during, floorUnloaded, floorDuring []hostile.Result
	served := true
	var wall, nodeCPU, attackCPU float64
	for round := 0; round < hf.rounds; round++ {
		if round > 0 {
			// The window without the attack is of a node at rest:
			// right after an attack the node is still collecting
			// and returning its memory, and the wallet's p99 there
			// was 4–6 ms against 1.6–3.5 ms at rest, which made
			// the attack look cheaper. The first round follows the
			// settle time after the attack before.
			time.Sleep(hf.settle)
		}
		g, err := wallet()
		if err != nil {
			return nil, err
		}
		var rd hostileRound
		m0 := snapMachine(p.cmd.Process.Pid)
		rd.Unloaded.Result, rd.FloorUnloaded.Result = measureWindow(g, hf.echo, hf.phase, hf.interval)
		rd.MachineUnloaded = m0.to(snapMachine(p.cmd.Process.Pid))
		g.Close()
		unloaded = append(unloaded, rd.Unloaded.Result)
		floorUnloaded = append(floorUnloaded, rd.FloorUnloaded.Result)

		// Each round's attacker comes from /24s of its own: the cost
		// of a subnet outlives its sessions, and a round must meet
		// the server as the first did.
		first := (i*hf.rounds + round) * hf.subnets
		err = attackRound(p, rpc, self, append(args, "-first", strconv.Itoa(first)), k, hf, baseSessions, r, &rd, func() (hostile.Result, error) {
			g, err := wallet()
			if err != nil {
				return hostile.Result{}, fmt.Errorf("the wallet could not connect during the attack: %w", err)
			}
			defer g.Close()
			m0 := snapMachine(p.cmd.Process.Pid)
			w, f := measureWindow(g, hf.echo, hf.phase, hf.interval)
			rd.MachineDuring = m0.to(snapMachine(p.cmd.Process.Pid))
			rd.FloorDuring.Result = f
			return w, nil
		})
		r.Rounds = append(r.Rounds, rd)
		during = append(during, rd.During.Result)
		floorDuring = append(floorDuring, rd.FloorDuring.Result)
		served = served && rd.Unloaded.OK() && rd.During.OK()
		wall += hf.phase.Seconds()
		nodeCPU += rd.NodeCPU * hf.phase.Seconds()
		attackCPU += rd.AttackCPU * hf.phase.Seconds()
		r.MachineUnloaded.add(rd.MachineUnloaded, 1/float64(hf.rounds))
		r.MachineDuring.add(rd.MachineDuring, 1/float64(hf.rounds))
		r.RSSPeakKB = max(r.RSSPeakKB, rd.RSSPeakKB)
		if err != nil {
			return r, err
		}
		fmt.Fprintf(os.Stderr, "%s round %d: wallet p99 %.2f ms unloaded, %.2f ms during; machine floor p99 %.2f, %.2f ms; node %.2f cores, attacker %.2f; "+
			"node's threads waiting for a CPU %.1f, %.1f ms/s, wallet's %.1f, %.1f ms/s; kernel threads %.3f, %.3f cores (kdamond %.3f, %.3f)\n",
			k, round+1, rd.Unloaded.P99ms(), rd.During.P99ms(), rd.FloorUnloaded.P99ms(), rd.FloorDuring.P99ms(), rd.NodeCPU, rd.AttackCPU,
			rd.MachineUnloaded.NodeWait, rd.MachineDuring.NodeWait, rd.MachineUnloaded.WalletWait, rd.MachineDuring.WalletWait,
			rd.MachineUnloaded.KernelCPU, rd.MachineDuring.KernelCPU, rd.MachineUnloaded.DamonCPU, rd.MachineDuring.DamonCPU)
	}
	r.Unloaded.Result = hostile.Merge(unloaded...)
	r.During.Result = hostile.Merge(during...)
	r.FloorUnloaded.Result = hostile.Merge(floorUnloaded...)
	r.FloorDuring.Result = hostile.Merge(floorDuring...)
	r.NodeCPU, r.AttackCPU = nodeCPU/wall, attackCPU/wall
	r.ConnsPerSecond = float64(r.Attacker.Connects) / r.AttackSeconds

	time.Sleep(hf.settle)
	r.RSSAfterKB = p.RSSKB()
	r.HeapAfter, r.GoroutinesAfter = nodeMetrics(metricsPort)
	g, err := wallet()
	if err != nil {
		return r, fmt.Errorf("the wallet could not connect after the attack: %w", err)
	}
	r.After.Result = g.Run(ctx, hf.interval, 50)
	g.Close()
	if m := medianP99(unloaded); m > 0 {
		r.Ratio = float64(medianP99(during)) / float64(m)
	}
	if m := medianP99(floorUnloaded); m > 0 {
		r.FloorRatio = float64(medianP99(floorDuring)) / float64(m)
	}
	if r.Unloaded.P99 > 0 {
		r.PooledRatio = float64(r.During.P99) / float64(r.Unloaded.P99)
	}
	r.Served = served && r.After.OK() && r.SessionsAfter <= baseSessions
	return r, nil
}

// medianP99 is the median of the results' p99 (the upper one of an even
// count).
func medianP99(rs []hostile.Result) time.Duration {
	if len(rs) == 0 {
		return 0
	}
	p := make([]time.Duration, len(rs))
	for i, r := range rs {
		p[i] = r.P99
	}
	slices.Sort(p)
	return p[len(p)/2]
}

// attackRound starts the attacking process, measures the wallet (during)
// once the attack is at full strength, stops it and waits for the
// server's sessions to return to base.
func attackRound(p *proc, rpc *rpcClient, self string, args []string, k hostile.Kind, hf *hostileFlags, baseSessions int,
	r *hostileResult, rd *hostileRound, during func() (hostile.Result, error)) error {
	// On a network the attacker's CPU is somebody else's; here it runs
	// beside the node, as a separate process at the lowest priority:
	// SCHED_IDLE (chrt execs it, so every thread has it) runs it only on
	// a core nothing else wants, nice 19 gives it a small share.
	var cmd *exec.Cmd
	switch hf.attacker {
	case "idle":
		cmd = exec.Command("chrt", append([]string{"--idle", "0", self}, args...)...)
	case "nice":
		cmd = exec.Command("nice", append([]string{"-n", "19", self}, args...)...)
	default:
		cmd = exec.Command(self, args...)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	attackStart := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	readyCh := make(chan error, 1)
	go func() {
		if lines.Scan() && lines.Text() == "ready" {
			readyCh <- nil
			return
		}
		readyCh <- fmt.Errorf("the attacker did not get ready: %q %v", lines.Text(), lines.Err())
	}()
	select {
	case err := <-readyCh:
		if err != nil {
			return err
		}
	case <-time.After(5 * time.Minute):
		return errors.New("the attacker did not get ready within 5 minutes")
	}
	fmt.Fprintf(os.Stderr, "%s: at full strength after %.1f s\n", k, time.Since(attackStart).Seconds())
	watchDone := make(chan struct{})
	var aborted atomic.Bool
	watched := make(chan struct{})
	defer func() {
		close(watchDone)
		<-watched
		r.Aborted = r.Aborted || aborted.Load()
	}()
	go func() {
		defer close(watched)
		for {
			select {
			case <-watchDone:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if p.RSSKB() > hf.maxRSS<<10 {
				fmt.Fprintf(os.Stderr, "%s: the node's RSS passed %d MiB: stopping the attack\n", k, hf.maxRSS)
				aborted.Store(true)
				stdin.Close()
				return
			}
		}
	}()

	cpu0, acpu0, t0 := p.CPUSeconds(), procCPU(cmd.Process.Pid), time.Now()
	res, err := during()
	if err != nil {
		return err
	}
	rd.During.Result = res
	wall := time.Since(t0).Seconds()
	rd.NodeCPU = (p.CPUSeconds() - cpu0) / wall
	rd.AttackCPU = (procCPU(cmd.Process.Pid) - acpu0) / wall
	if info, err := electrumInfo(rpc); err == nil {
		r.Sessions, r.Subscriptions = info.Sessions, info.Subscriptions
	}
	stdin.Close()
	var sum hostile.Summary
	if lines.Scan() {
		if err := json.Unmarshal(lines.Bytes(), &sum); err != nil {
			return fmt.Errorf("the attacker's summary %q: %w", lines.Text(), err)
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the attacker: %w", err)
	}
	killed = true
	r.AttackSeconds += time.Since(attackStart).Seconds()
	r.Attacker.Add(sum)
	rd.RSSPeakKB = p.peakSince(attackStart)

	// The sessions back at the baseline before the next window.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		info, err := electrumInfo(rpc)
		if err == nil && info.Sessions <= baseSessions {
			r.SessionsAfter = info.Sessions
			return nil
		}
		if time.Now().After(deadline) {
			r.SessionsAfter = info.Sessions
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// electrumInfo calls getelectruminfo.
func electrumInfo(rpc *rpcClient) (struct {
	Sessions      int               `json:"sessions"`
	Subscriptions int               `json:"subscriptions"`
	Refused       map[string]uint64 `json:"refused"`
	Disconnected  map[string]uint64 `json:"disconnected"`
	Throttled     uint64            `json:"throttled"`
}, error) {
	var info struct {
		Sessions      int               `json:"sessions"`
		Subscriptions int               `json:"subscriptions"`
		Refused       map[string]uint64 `json:"refused"`
		Disconnected  map[string]uint64 `json:"disconnected"`
		Throttled     uint64            `json:"throttled"`
	}
	res, err := rpc.call("getelectruminfo")
	if err != nil {
		return info, err
	}
	err = json.Unmarshal(res, &info)
	return info, err
}

// nodeMetrics reads the Go heap in use and the goroutine count from the
// node's Prometheus endpoint (zeros when it does not answer).
func nodeMetrics(port int) (heap, goroutines float64) {
	hc := http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "go_memstats_heap_inuse_bytes":
			heap = v
		case "go_goroutines":
			goroutines = v
		}
	}
	return heap, goroutines
}

// procCPU returns a process's CPU seconds so far.
func procCPU(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return parseProcStatCPU(string(raw))
}

// procLimit returns a line of /proc/PID/limits ("Max open files": soft
// and hard).
func procLimit(pid int, name string) (string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, name) {
			f := strings.Fields(strings.TrimPrefix(line, name))
			if len(f) >= 2 {
				return f[0] + " soft, " + f[1] + " hard", nil
			}
		}
	}
	return "", fmt.Errorf("no %q in /proc/%d/limits", name, pid)
}

// runHostileAttack is the attacking process e2ebench hostile starts for
// each attack: it attacks until its standard input closes, writing
// "ready" when at full strength and then its counts as one JSON line.
func runHostileAttack(args []string) error {
	var (
		kind, tcp, tls, ws, wss, scriptsFile string
		first, sources, subnets              int
		cfg                                  hostile.Config
	)
	fs := flag.NewFlagSet("hostile-attack", flag.ExitOnError)
	fs.StringVar(&kind, "kind", "", "the attack")
	fs.StringVar(&tcp, "tcp", "", "TCP listener")
	fs.StringVar(&tls, "tls", "", "TLS listener")
	fs.StringVar(&ws, "ws", "", "WS listener")
	fs.StringVar(&wss, "wss", "", "WSS listener")
	fs.StringVar(&scriptsFile, "scripts", "", "scripts.txt of the chain")
	fs.IntVar(&first, "first", 0, "first /24 of the sources")
	fs.IntVar(&sources, "sources", 1000, "source addresses")
	fs.IntVar(&subnets, "subnets", 100, "their /24 networks")
	fs.IntVar(&cfg.Conns, "conns", 0, "connections held")
	fs.IntVar(&cfg.Workers, "workers", 0, "attacking sessions")
	fs.IntVar(&cfg.Rate, "rate", 0, "connections per second")
	sndBuf := fs.Int("sndbuf", 0, "socket send buffer (0: autotuned)")
	wsCases := fs.String("wscases", "", "the WebSocket cases to run (a regular expression on their names; empty: all)")
	fs.Parse(args)
	if *wsCases != "" {
		re, err := regexp.Compile(*wsCases)
		if err != nil {
			return fmt.Errorf("-wscases: %w", err)
		}
		cfg.WSCases = re
	}
	if err := raiseNofile(); err != nil {
		fmt.Fprintln(os.Stderr, "e2ebench hostile-attack: raising the open-file limit:", err)
	}
	if scriptsFile != "" {
		s, err := readScripts(scriptsFile, 200_000)
		if err != nil {
			return err
		}
		cfg.Scripts = s
	}
	t := &hostile.Target{TCP: tcp, TLS: tls, WS: ws, WSS: wss, Sources: hostile.LoopbackSources(first, sources, subnets),
		SendBuffer: *sndBuf}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	cfg.Ready = func() { fmt.Println("ready") }
	var st hostile.Stats
	err := hostile.Run(ctx, hostile.Kind(kind), t, cfg, &st)
	b, _ := json.Marshal(st.Summary())
	fmt.Println(string(b))
	return err
}

// raiseNofile lifts the soft open-file limit to the hard one (Go does so
// itself at start since 1.19; this also reports a failure).
func raiseNofile() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return nil
}

// hostileReport is the whole run.
type hostileReport struct {
	Started    time.Time  `json:"started"`
	Chain      *chainInfo `json:"chain"`
	Node       string     `json:"node"`
	NodeArgs   []string   `json:"node_args"`
	Limits     []string   `json:"limits"`
	NodeNofile string     `json:"node_nofile"`
	CPUs       int        `json:"cpus"`
	LoadAvg    string     `json:"loadavg_at_start"`
	Phase      float64    `json:"phase_s"`
	Rounds     int        `json:"rounds"`
	Attacker   string     `json:"attacker_priority"`
	Awake      bool       `json:"cpus_kept_awake"`
	// Damon is the state of the machine's DAMON monitors at the start
	// ("none" without any): a virtual machine's memory reclaim, whose
	// kernel thread held a CPU for milliseconds at a time (machine.go).
	Damon string `json:"damon"`
	// AttackSndBuf is the attacker's socket send buffer (0: autotuned).
	AttackSndBuf int `json:"attacker_sndbuf"`
	// WSCases is -wscases: the bad WebSocket cases run (empty: all).
	WSCases    string           `json:"ws_cases,omitempty"`
	IntervalMs float64          `json:"wallet_interval_ms"`
	MixSize    int              `json:"wallet_mix_requests"`
	RSSStartKB int64            `json:"rss_start_kib"`
	RSSEndKB   int64            `json:"rss_end_kib"`
	HWMKB      int64            `json:"vmhwm_kib"`
	Attacks    []*hostileResult `json:"attacks"`
	FinalInfo  any              `json:"final_electrum_info,omitempty"`
}

// sndBufText describes the attacker's send buffer.
func sndBufText(n int) string {
	if n <= 0 {
		return "autotuned"
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// writeTable writes the results as a Markdown table.
func (r *hostileReport) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\nHostile clients: chain %s (%d tx, %d blocks), %d CPUs, started %s, %d rounds of two %.0f s windows per attack, wallet request every %.0f ms, attacker priority %s, CPUs kept awake: %v, DAMON: %s, attacker's send buffer: %s\n",
		filepath.Base(r.Chain.Dir), r.Chain.Txs, r.Chain.Blocks, r.CPUs, r.Started.Format(time.RFC3339), r.Rounds, r.Phase, r.IntervalMs, r.Attacker, r.Awake, r.Damon, sndBufText(r.AttackSndBuf))
	if r.WSCases != "" {
		fmt.Fprintf(w, "WebSocket cases: those matching %q\n", r.WSCases)
	}
	fmt.Fprintf(w, "node limits beside the defaults: %s; open files: %s\n\n", strings.Join(r.Limits, " "), r.NodeNofile)
	fmt.Fprintln(w, "| attack | size | wallet p99 per round, unloaded → during (ms) | p99 ratio (rounds' medians) | machine floor p99 per round, unloaded → during (ms) | floor p99 ratio | pooled p50 / p99 unloaded (ms) | pooled p50 / p99 during (ms) | pooled p99 ratio | wallet served | attacker: connections/s; expected / refused / disconnected / unexpected | sessions, subscriptions during | node CPU (cores) | node's threads waiting for a CPU, unloaded → during (ms/s) | kernel threads' CPU, unloaded → during (cores; kdamond) | RSS before / peak / after (MiB) | heap in use before / after (MiB) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, a := range r.Attacks {
		served := "yes"
		if a.Aborted {
			served = "ABORTED (RSS over -maxrss)"
		} else if !a.Served {
			served = fmt.Sprintf("NO (wrong %d/%d/%d, errors %d/%d/%d, sessions after %d)",
				a.Unloaded.Wrong, a.During.Wrong, a.After.Wrong, a.Unloaded.Errors, a.During.Errors, a.After.Errors, a.SessionsAfter)
		}
		var rounds, floors []string
		for _, rd := range a.Rounds {
			rounds = append(rounds, fmt.Sprintf("%.2f → %.2f", rd.Unloaded.P99ms(), rd.During.P99ms()))
			floors = append(floors, fmt.Sprintf("%.2f → %.2f", rd.FloorUnloaded.P99ms(), rd.FloorDuring.P99ms()))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s | %.2f | %.2f / %.2f | %.2f / %.2f | %.2f | %s | %.0f; %d / %d / %d / %d | %d, %d | %.2f | %.1f → %.1f | %.3f → %.3f (%.3f → %.3f) | %d / %d / %d | %.0f / %.0f |\n",
			a.Kind, a.Size, strings.Join(rounds, ", "), a.Ratio, strings.Join(floors, ", "), a.FloorRatio, a.Unloaded.P50ms(), a.Unloaded.P99ms(), a.During.P50ms(), a.During.P99ms(), a.PooledRatio, served,
			a.ConnsPerSecond, a.Attacker.Expected, a.Attacker.Refused, a.Attacker.Disconnects, a.Attacker.Unexpected,
			a.Sessions, a.Subscriptions, a.NodeCPU, a.MachineUnloaded.NodeWait, a.MachineDuring.NodeWait,
			a.MachineUnloaded.KernelCPU, a.MachineDuring.KernelCPU, a.MachineUnloaded.DamonCPU, a.MachineDuring.DamonCPU, a.RSSBeforeKB>>10, a.RSSPeakKB>>10, a.RSSAfterKB>>10,
			a.HeapBefore/(1<<20), a.HeapAfter/(1<<20))
	}
	fmt.Fprintf(w, "\nRSS at start %d MiB, at the end %d MiB, VmHWM %d MiB\n", r.RSSStartKB>>10, r.RSSEndKB>>10, r.HWMKB>>10)
	for _, a := range r.Attacks {
		if len(a.Attacker.Notes) > 0 {
			fmt.Fprintf(w, "%s notes: %s\n", a.Kind, strings.Join(a.Attacker.Notes[:min(5, len(a.Attacker.Notes))], "; "))
		}
	}
}

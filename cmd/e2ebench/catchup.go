package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/freeport"
)

// The configurations catchup measures.
const (
	kindElectrum  = "electrum"  // this node, --electrumindex
	kindAddrIndex = "addrindex" // btcd v0.26.2 --addrindex (which turns --txindex on as well)
	kindTxIndex   = "txindex"   // btcd v0.26.2 --txindex
)

// catchupRun is one measured catch-up.
type catchupRun struct {
	Kind string `json:"kind"`
	Run  int    `json:"run"`
	// Seconds is from process start until the index was at the tip: for
	// this node the Electrum port answering blockchain.headers.subscribe
	// with the tip, for btcd its "Indexes caught up to height N" line.
	Seconds    float64 `json:"seconds"`
	TxPerSec   float64 `json:"tx_per_sec"`
	PeakRSSMiB float64 `json:"peak_rss_mib"` // highest 100 ms sample, MiB
	HWMMiB     float64 `json:"hwm_mib"`      // VmHWM at the end, MiB
	// CPUSeconds is the process's CPU time (user and system) until then.
	CPUSeconds float64 `json:"cpu_seconds"`
	// IndexBytes is the database's compacted size after the run minus
	// the chain's, compacted the same way; RawIndexBytes is plain du after
	// minus before, which leveldb's compaction schedule blurs.
	IndexBytes      int64   `json:"index_bytes"`
	BytesPerTx      float64 `json:"index_bytes_per_tx"`
	RawIndexBytes   int64   `json:"raw_index_bytes"`
	ShutdownSeconds float64 `json:"shutdown_seconds"`
	// The Electrum index's own catch-up window, from its log.
	IndexSeconds  float64         `json:"index_seconds,omitempty"`
	IndexTxPerSec float64         `json:"index_tx_per_sec,omitempty"`
	Progress      []progressPoint `json:"progress,omitempty"`
}

// kindSummary holds the medians of one configuration's runs.
type kindSummary struct {
	Runs       int     `json:"runs"`
	Seconds    float64 `json:"seconds"`
	TxPerSec   float64 `json:"tx_per_sec"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	BytesPerTx float64 `json:"index_bytes_per_tx"`
}

type catchupReport struct {
	Kind    string                 `json:"benchmark"`
	Machine machineInfo            `json:"machine"`
	Chain   *chainInfo             `json:"chain"`
	Runs    []catchupRun           `json:"runs"`
	Median  map[string]kindSummary `json:"median"`
	// Ratios of this node against each btcd configuration: speed is
	// btcd's median seconds over ours (above 1: ours is faster), memory
	// and size ours over btcd's.
	Ratios map[string]ratio `json:"ratios"`
}

type ratio struct {
	Speed      float64 `json:"speed"`
	PeakRSS    float64 `json:"peak_rss"`
	BytesPerTx float64 `json:"index_bytes_per_tx"`
}

func runCatchup(args []string) error {
	var (
		c        common
		kindsArg string
		svgOut   string
		progress time.Duration
	)
	fs := flag.NewFlagSet("catchup", flag.ExitOnError)
	c.register(fs)
	fs.StringVar(&kindsArg, "kinds", "electrum,addrindex,txindex", "configurations to measure, in the order each round runs them")
	fs.StringVar(&svgOut, "svg", "", "write a chart of catch-up speed and resident memory over height (first run of each configuration) to this SVG file")
	fs.DurationVar(&progress, "progress", time.Second, "the node's --electrumprogress interval during the runs")
	fs.Parse(args)

	ci, scratch, cleanup, err := c.setup()
	if err != nil {
		return err
	}
	done := false
	defer func() { finish(done, cleanup, scratch) }()
	var kinds []string
	for _, k := range strings.Split(kindsArg, ",") {
		switch k = strings.TrimSpace(k); k {
		case kindElectrum, kindAddrIndex, kindTxIndex:
			kinds = append(kinds, k)
		case "":
		default:
			return fmt.Errorf("unknown configuration %q (electrum, addrindex, txindex)", k)
		}
	}
	if len(kinds) == 0 {
		return errors.New("-kinds names no configuration")
	}
	for _, k := range kinds {
		if k != kindElectrum {
			if c.btcd, err = filepath.Abs(c.btcd); err != nil {
				return err
			}
			if _, err := os.Stat(c.btcd); err != nil {
				return fmt.Errorf("btcd binary: %w (make btcd-v0.26.2)", err)
			}
			break
		}
	}
	srcBytes, err := diskUsage(ci.DBPath())
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "chain %s: %s, %d blocks, %d tx, tip %d; database %.0f MB; scratch %s\n",
		ci.Dir, ci.Network, ci.Blocks, ci.Txs, ci.TipHeight, float64(srcBytes)/1e6, scratch)

	base, err := compactedBaseline(ci, scratch)
	if err != nil {
		return err
	}
	rep := &catchupReport{Kind: "catchup", Machine: machine(), Chain: ci}
	for r := 1; r <= c.runs; r++ {
		for _, k := range kinds {
			run, err := catchupOnce(&c, ci, scratch, k, r, progress, base)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", k, r, err)
			}
			fmt.Fprintf(os.Stderr, "%-9s run %d: %7.2f s  %8.0f tx/s  CPU %6.1f s  peak RSS %6.0f MiB  index %6.1f B/tx  (stop %.1f s)\n",
				k, r, run.Seconds, run.TxPerSec, run.CPUSeconds, run.PeakRSSMiB, run.BytesPerTx, run.ShutdownSeconds)
			rep.Runs = append(rep.Runs, run)
		}
	}
	rep.summarize(kinds)

	rep.writeTable(os.Stdout)
	if svgOut != "" {
		if err := writeCatchupChart(svgOut, ci, rep.Runs, kinds); err != nil {
			return err
		}
	}
	if c.jsonOut != "" {
		if err := writeJSON(c.jsonOut, rep); err != nil {
			return err
		}
	}
	if c.mdOut != "" {
		if err := appendFile(c.mdOut, rep.markdown(svgOut)); err != nil {
			return err
		}
	}
	done = true
	return nil
}

// catchupOnce copies the chain's database to a scratch datadir and measures
// one configuration catching its index up.
func catchupOnce(c *common, ci *chainInfo, scratch, kind string, runNo int, progress time.Duration, base int64) (run catchupRun, err error) {
	run = catchupRun{Kind: kind, Run: runNo}
	dir := filepath.Join(scratch, fmt.Sprintf("catchup-%s-%d", kind, runNo))
	if err := os.RemoveAll(dir); err != nil {
		return run, err
	}
	dataDir := filepath.Join(dir, "data")
	dbPath := filepath.Join(dataDir, ci.NetDir(), "blocks_ffldb")
	if err = copyTree(ci.DBPath(), dbPath); err != nil {
		return run, fmt.Errorf("copy chain: %w", err)
	}
	defer func() {
		if err == nil && !c.keep {
			os.RemoveAll(dir)
		}
	}()
	before, err := diskUsage(dbPath)
	if err != nil {
		return run, err
	}

	// Neither node listens for peers, serves RPC or looks for peers: the
	// only peer is a loopback address nothing answers on. Both build
	// exactly the index named: btcd, and this node, also build compact
	// block filters by default, which --nocfilters leaves out.
	args := []string{ci.NetFlag(), "--datadir=" + dataDir, "--logdir=" + filepath.Join(dir, "logs"),
		"--nolisten", "--norpc", "--nodnsseed", "--connect=127.0.0.1:1", "--addcheckpoint=" + ci.Checkpoint,
		"--nocfilters"}
	bin := c.btcd
	var port int
	switch kind {
	case kindElectrum:
		bin = c.node
		if port, err = freeport.Port(); err != nil {
			return run, err
		}
		args = append(args, "--electrumindex", fmt.Sprintf("--electrumlisten=127.0.0.1:%d", port),
			"--electrumprogress="+progress.String())
		args = append(args, c.nodeArgs...)
	case kindAddrIndex:
		args = append(args, "--addrindex")
	case kindTxIndex:
		args = append(args, "--txindex")
	}

	var (
		mu       sync.Mutex
		points   []progressPoint
		btcdDone = make(chan struct{})
		doneOnce sync.Once
		p        *proc
	)
	onLine := func(t time.Duration, line string) {
		if c.verbose {
			fmt.Fprintf(os.Stderr, "  [%s %6.1fs] %s\n", kind, t.Seconds(), line)
		}
		var (
			h    int32
			rate float64
			ok   bool
		)
		if kind == kindElectrum {
			h, rate, ok = parseElectrumProgress(line)
			if !ok {
				if _, took, r, ok2 := parseElectrumCaughtUp(line); ok2 {
					mu.Lock()
					run.IndexSeconds, run.IndexTxPerSec = took.Seconds(), r
					mu.Unlock()
				}
			}
		} else {
			h, rate, ok = parseBtcdProgress(line)
			if th, ok2 := parseBtcdCaughtUp(line); ok2 && th >= ci.TipHeight {
				doneOnce.Do(func() { close(btcdDone) })
			}
		}
		if ok {
			mu.Lock()
			var rss int64
			if p != nil {
				rss = p.RSSKB()
			}
			points = append(points, progressPoint{Seconds: t.Seconds(), Height: h, TxPerSec: rate, RSSMiB: float64(rss) / 1024})
			mu.Unlock()
		}
	}
	mu.Lock() // p is set before any line is handled
	p, err = startProc(bin, args, filepath.Join(dir, kind+".log"), onLine)
	mu.Unlock()
	if err != nil {
		return run, err
	}
	deadline := time.After(c.timeout)
	var took time.Duration
	if kind == kindElectrum {
		took, err = waitElectrumTip(p, port, ci.TipHeight, deadline)
	} else {
		select {
		case <-btcdDone:
			took = time.Since(p.start)
		case <-p.Exited():
			err = p.ExitError()
		case <-deadline:
			err = fmt.Errorf("no \"Indexes caught up to height %d\" within %v", ci.TipHeight, c.timeout)
		}
	}
	hwm, cpu := p.HWMKB(), p.CPUSeconds()
	shutdown, stopErr := p.Stop(5 * time.Minute)
	if err != nil {
		return run, err
	}
	if stopErr != nil {
		return run, stopErr
	}
	after, err := diskUsage(dbPath)
	if err != nil {
		return run, err
	}
	compacted, err := compactedSize(dbPath)
	if err != nil {
		return run, err
	}
	// Ours keeps its index in a store of its own beside the chain's
	// database (node.ElectrumIndexPath; other builds of the node may name
	// it otherwise): every leveldb store there is the index's.
	if kind == kindElectrum {
		stores, err := filepath.Glob(filepath.Join(dataDir, ci.NetDir(), "*", "CURRENT"))
		if err != nil {
			return run, err
		}
		for _, cur := range stores {
			storePath := filepath.Dir(cur)
			if storePath == dbPath {
				continue
			}
			raw, err := diskUsage(storePath)
			if err != nil {
				return run, err
			}
			storeBytes, err := compactedLevelDB(storePath)
			if err != nil {
				return run, err
			}
			after += raw
			compacted += storeBytes
		}
	}
	mu.Lock()
	defer mu.Unlock()
	run.Seconds = took.Seconds()
	run.TxPerSec = float64(ci.Txs) / run.Seconds
	run.PeakRSSMiB = float64(p.PeakKB()) / 1024
	run.HWMMiB = float64(hwm) / 1024
	run.CPUSeconds = cpu
	run.IndexBytes = compacted - base
	run.BytesPerTx = float64(run.IndexBytes) / float64(ci.Txs)
	run.RawIndexBytes = after - before
	run.ShutdownSeconds = shutdown.Seconds()
	run.Progress = points
	return run, nil
}

// compactedBaseline returns the compacted size of the chain's database,
// measured on a copy of its own.
func compactedBaseline(ci *chainInfo, scratch string) (int64, error) {
	dir := filepath.Join(scratch, "baseline")
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if err := copyTree(ci.DBPath(), dir); err != nil {
		return 0, fmt.Errorf("copy chain: %w", err)
	}
	return compactedSize(dir)
}

// waitElectrumTip polls the Electrum port until blockchain.headers.subscribe
// answers with the tip height, and returns the time since process start.
func waitElectrumTip(p *proc, port int, tip int32, deadline <-chan time.Time) (time.Duration, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		h, err := electrumTipHeight(addr)
		if err == nil && h >= tip {
			return time.Since(p.start), nil
		}
		select {
		case <-tick.C:
		case <-p.Exited():
			return 0, p.ExitError()
		case <-deadline:
			return 0, fmt.Errorf("the Electrum port did not report height %d in time", tip)
		}
	}
}

// electrumTipHeight asks an Electrum server for its tip height:
// server.version, then blockchain.headers.subscribe. It also asks for a
// balance and waits for it, so that the height it returns is one the
// server answers reads of the index at, not only reports.
func electrumTipHeight(addr string) (int32, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = conn.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["e2ebench","1.4"]}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"blockchain.headers.subscribe","params":[]}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.get_balance","params":["` + strings.Repeat("00", 32) + `"]}` + "\n"))
	if err != nil {
		return 0, err
	}
	br := bufio.NewReader(conn)
	var (
		height  *int32
		balance bool
	)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return 0, err
		}
		var resp struct {
			ID     *int `json:"id"`
			Result struct {
				Height *int32 `json:"height"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &resp) != nil || resp.ID == nil {
			continue
		}
		switch *resp.ID {
		case 1:
			if resp.Result.Height == nil {
				return 0, fmt.Errorf("blockchain.headers.subscribe: %s", line)
			}
			height = resp.Result.Height
		case 2:
			if len(resp.Error) > 0 && string(resp.Error) != "null" {
				return 0, fmt.Errorf("blockchain.scripthash.get_balance: %s", line)
			}
			balance = true
		}
		if height != nil && balance {
			return *height, nil
		}
	}
}

func (rep *catchupReport) summarize(kinds []string) {
	rep.Median = map[string]kindSummary{}
	for _, k := range kinds {
		var secs, rates, rss, bpt []float64
		for _, r := range rep.Runs {
			if r.Kind == k {
				secs = append(secs, r.Seconds)
				rates = append(rates, r.TxPerSec)
				rss = append(rss, r.PeakRSSMiB)
				bpt = append(bpt, r.BytesPerTx)
			}
		}
		rep.Median[k] = kindSummary{Runs: len(secs), Seconds: median(secs), TxPerSec: median(rates),
			PeakRSSMiB: median(rss), BytesPerTx: median(bpt)}
	}
	ours, ok := rep.Median[kindElectrum]
	if !ok {
		return
	}
	rep.Ratios = map[string]ratio{}
	for _, k := range []string{kindAddrIndex, kindTxIndex} {
		b, ok := rep.Median[k]
		if !ok {
			continue
		}
		rep.Ratios[k] = ratio{Speed: div(b.Seconds, ours.Seconds), PeakRSS: div(ours.PeakRSSMiB, b.PeakRSSMiB),
			BytesPerTx: div(ours.BytesPerTx, b.BytesPerTx)}
	}
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/freeport"
)

// ibdRun is one replay of blocks.dat into a fresh node.
type ibdRun struct {
	// Kind is the node's configuration: ibdNoIndex or ibdIndex.
	Kind string `json:"kind"`
	Run  int    `json:"run"`
	// StartupSeconds is from process start until the RPC server answered.
	StartupSeconds float64 `json:"startup_seconds"`
	// Seconds is the replay's wall clock: from the first submitblock sent
	// until the last was answered and, with the index, the Electrum port
	// reports the tip (the index's writer follows the chain).
	Seconds float64 `json:"seconds"`
	// ReplaySeconds is from the first submitblock sent to the last
	// answered.
	ReplaySeconds float64 `json:"replay_seconds"`
	Blocks        int     `json:"blocks"`
	Txs           int64   `json:"txs"`
	BlocksPerSec  float64 `json:"blocks_per_sec"`
	TxPerSec      float64 `json:"tx_per_sec"`
	// PeakRSSMiB (the highest 100 ms sample of VmRSS), HWMMiB (VmHWM) and
	// CPUSeconds (user and system) are the node's from its start to the
	// end of the replay, read before the tip phase; memory in MiB.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	HWMMiB     float64 `json:"hwm_mib"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// SubmitBig is submitblock's latency for the blocks of at least
	// -big transactions; IndexBig the Electrum index's own time for
	// those of them its writer indexed alone (from reading the block to
	// the end of its commit), from its "Indexed block" lines (a block
	// committed in a batch with others has none).
	SubmitBig latency `json:"submit_big"`
	IndexBig  latency `json:"index_big"`
	SubmitAll latency `json:"submit_all"`
	// TipSubmit, TipIndex and TipNotify are of the tip phase: the last
	// -tipblocks blocks sent one at a time on a quiet node. TipNotify is
	// from submitblock's answer to each status notification of a script
	// the block pays.
	TipBlocks int     `json:"tip_blocks"`
	TipSubmit latency `json:"tip_submit"`
	TipIndex  latency `json:"tip_index"`
	TipNotify latency `json:"tip_notify"`
	// TipHeavy is the same for the notifications of the chain's longest
	// histories the tip blocks touched; TipHeavyCommit is from the
	// index's commit of the block (its "Indexed block" line, read as it
	// is written) to those notifications. TipHeavyMissing counts those
	// that did not come within tipWait after the block's own scripts were
	// notified; a script missed once is not awaited again.
	TipHeavy        latency `json:"tip_heavy"`
	TipHeavyCommit  latency `json:"tip_heavy_commit"`
	TipHeavyMissing int     `json:"tip_heavy_missing"`
	// TipCPUSeconds is the node's CPU time during the tip phase, and
	// TipPeakRSSMiB its highest VmRSS sample then.
	TipCPUSeconds   float64 `json:"tip_cpu_seconds"`
	TipPeakRSSMiB   float64 `json:"tip_peak_rss_mib"`
	Connections     int32   `json:"connections"` // TCP connections the client made to the node
	ShutdownSeconds float64 `json:"shutdown_seconds"`

	submitBigMs, indexBigMs                          []float64
	tipSubmitMs, tipIndexMs, tipNotifyMs, tipHeavyMs []float64
	tipHeavyCommitMs                                 []float64
}

// ibdSummary holds the medians of one configuration's runs, and the
// big-block latencies of all its runs together.
type ibdSummary struct {
	Runs         int     `json:"runs"`
	Seconds      float64 `json:"seconds"`
	BlocksPerSec float64 `json:"blocks_per_sec"`
	TxPerSec     float64 `json:"tx_per_sec"`
	PeakRSSMiB   float64 `json:"peak_rss_mib"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	SubmitBig    latency `json:"submit_big"`
	IndexBig     latency `json:"index_big"`
	TipSubmit    latency `json:"tip_submit"`
	TipIndex     latency `json:"tip_index"`
	TipNotify    latency `json:"tip_notify"`
	TipHeavy     latency `json:"tip_heavy"`
	// TipHeavyCommit, TipHeavyMissing (the runs' sum), TipCPUSeconds and
	// TipPeakRSSMiB: as ibdRun's.
	TipHeavyCommit  latency `json:"tip_heavy_commit"`
	TipHeavyMissing int     `json:"tip_heavy_missing"`
	TipCPUSeconds   float64 `json:"tip_cpu_seconds"`
	TipPeakRSSMiB   float64 `json:"tip_peak_rss_mib"`
}

type ibdReport struct {
	Kind        string      `json:"benchmark"`
	Machine     machineInfo `json:"machine"`
	Chain       *chainInfo  `json:"chain"`
	BigBlockTxs int         `json:"big_block_txs"`
	BigBlocks   int         `json:"big_blocks"`
	Runs        []ibdRun    `json:"runs"`
	// With is the node with the Electrum index (its writer follows the
	// chain, committing each block alone at the tip and batches of blocks
	// when it is behind), Without the node without it.
	With    ibdSummary `json:"with_index"`
	Without ibdSummary `json:"without_index"`
	// Overhead is the median replay time with the index over without.
	Overhead float64 `json:"overhead"`
	// TipBlocks is the tip phase's blocks and their transaction counts.
	TipBlocks int `json:"tip_blocks"`
	TipTxsMin int `json:"tip_txs_min"`
	TipTxsMax int `json:"tip_txs_max"`
}

// The node configurations of an ibd run.
const (
	ibdNoIndex = "noindex"
	ibdIndex   = "electrum"
)

func runIBD(args []string) error {
	var (
		c    common
		big  int
		only string
		tips int
	)
	fs := flag.NewFlagSet("ibd", flag.ExitOnError)
	c.register(fs)
	fs.IntVar(&big, "big", 2500, "blocks with at least this many transactions get latency percentiles")
	fs.IntVar(&tips, "tipblocks", 20, "the chain's last `n` blocks are sent one at a time on a quiet node, after the timed replay, "+
		"with a wallet subscribed to scripts they pay (0: none)")
	fs.StringVar(&only, "index", "both", "which nodes to run: both (with the Electrum index and without, in alternating order "+
		"from round to round; all is the same), with or without")
	fs.Parse(args)
	configs := map[string][]string{
		"all":     {ibdIndex, ibdNoIndex},
		"both":    {ibdIndex, ibdNoIndex},
		"with":    {ibdIndex},
		"without": {ibdNoIndex},
	}[only]
	if configs == nil {
		return fmt.Errorf("-index %q: both, with or without", only)
	}

	ci, scratch, cleanup, err := c.setup()
	if err != nil {
		return err
	}
	done := false
	defer func() { finish(done, cleanup, scratch) }()
	bigBlocks, err := countBigBlocks(ci, big)
	if err != nil {
		return err
	}
	tipBlocks, err := readTipBlocks(ci.BlocksFile(), ci.TipHeight, tips)
	if err != nil {
		return err
	}
	var heavy []string
	if tips > 0 && slices.Contains(configs, ibdIndex) { // only the index's node has wallets to notify
		scripts, err := readScripts(filepath.Join(ci.Dir, "scripts.txt"), 200)
		if err != nil {
			return err
		}
		heavy = scripts[:tipHeavy]
		if err := markTipHeavy(ci.BlocksFile(), tipBlocks, heavy); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "chain %s: %s, %d blocks, %d tx (%d blocks of >= %d tx), checkpoint %s; scratch %s\n",
		ci.Dir, ci.Network, ci.Blocks, ci.Txs, bigBlocks, big, ci.Checkpoint, scratch)

	rep := &ibdReport{Kind: "ibd", Machine: machine(), Chain: ci, BigBlockTxs: big, BigBlocks: bigBlocks,
		TipBlocks: len(tipBlocks)}
	for i, b := range tipBlocks {
		if i == 0 || b.txs < rep.TipTxsMin {
			rep.TipTxsMin = b.txs
		}
		rep.TipTxsMax = max(rep.TipTxsMax, b.txs)
	}
	for r := 1; r <= c.runs; r++ {
		for _, kind := range ibdRoundOrder(configs, r) {
			run, err := ibdOnce(&c, ci, scratch, kind, r, big, tipBlocks, heavy)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", ibdName(kind), r, err)
			}
			fmt.Fprintf(os.Stderr, "%-26s run %d: %7.2f s (replay %7.2f s)  %8.0f tx/s  replay CPU %6.1f s  peak RSS %6.0f MiB  big-block submit p50 %s\n",
				ibdName(kind), r, run.Seconds, run.ReplaySeconds, run.TxPerSec, run.CPUSeconds, run.PeakRSSMiB, fmtMs(run.SubmitBig.P50Ms, run.SubmitBig.N))
			rep.Runs = append(rep.Runs, run)
		}
	}
	rep.With, rep.Without = rep.summary(ibdIndex), rep.summary(ibdNoIndex)
	rep.Overhead = div(rep.With.Seconds, rep.Without.Seconds)

	rep.writeTable(os.Stdout)
	if c.jsonOut != "" {
		if err := writeJSON(c.jsonOut, rep); err != nil {
			return err
		}
	}
	if c.mdOut != "" {
		if err := appendFile(c.mdOut, rep.markdown()); err != nil {
			return err
		}
	}
	done = true
	return nil
}

// ibdRoundOrder is the order of the configurations in round r (from 1):
// reversed every other round, so that neither runs first in every round
// (the machine's state drifts over a session: page cache, thermals).
func ibdRoundOrder(configs []string, r int) []string {
	if r%2 == 1 {
		return configs
	}
	out := make([]string, len(configs))
	for i, k := range configs {
		out[len(configs)-1-i] = k
	}
	return out
}

// ibdName is how a configuration is shown.
func ibdName(kind string) string {
	if kind == ibdIndex {
		return "electrumindex"
	}
	return "no index"
}

// countBigBlocks counts the blocks of blocks.dat with at least big
// transactions.
func countBigBlocks(ci *chainInfo, big int) (int, error) {
	br, err := openBlocks(ci.BlocksFile())
	if err != nil {
		return 0, err
	}
	defer br.Close()
	n := 0
	for {
		raw, err := br.next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		ntx, err := blockTxCount(raw)
		if err != nil {
			return 0, err
		}
		if ntx >= big {
			n++
		}
	}
}

// ibdOnce starts a node on an empty datadir and replays blocks.dat into it
// with submitblock, one block at a time over one connection.
func ibdOnce(c *common, ci *chainInfo, scratch string, kind string, runNo, big int, tips []tipBlock,
	heavy []string) (run ibdRun, err error) {
	run = ibdRun{Kind: kind, Run: runNo}
	name := kind
	withIndex := kind != ibdNoIndex
	dir := filepath.Join(scratch, fmt.Sprintf("ibd-%s-%d", name, runNo))
	if err := os.RemoveAll(dir); err != nil {
		return run, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return run, err
	}
	defer func() {
		if err == nil && !c.keep {
			os.RemoveAll(dir)
		}
	}()
	rpcPort, err := freeport.Port()
	if err != nil {
		return run, err
	}
	args := []string{ci.NetFlag(), "--datadir=" + filepath.Join(dir, "data"), "--logdir=" + filepath.Join(dir, "logs"),
		"--nolisten", "--nodnsseed", "--connect=127.0.0.1:1", "--addcheckpoint=" + ci.Checkpoint,
		fmt.Sprintf("--rpclisten=127.0.0.1:%d", rpcPort), "--rpcuser=" + rpcUser, "--rpcpass=" + rpcPass, "--notls",
		// With and without the Electrum index, no compact block filters
		// (on by default, as in btcd): the runs differ by the index alone.
		"--nocfilters"}
	var ePort int
	if withIndex {
		if ePort, err = freeport.Port(); err != nil {
			return run, err
		}
		args = append(args, "--electrumindex", fmt.Sprintf("--electrumlisten=127.0.0.1:%d", ePort))
	}
	args = append(args, c.nodeArgs...)

	var (
		mu        sync.Mutex
		indexed   = map[int32]time.Duration{}
		indexedAt = map[int32]time.Time{}
	)
	onLine := func(t time.Duration, line string) {
		if c.verbose {
			fmt.Fprintf(os.Stderr, "  [%s %6.1fs] %s\n", name, t.Seconds(), line)
		}
		if h, _, d, ok := parseIndexedBlock(line); ok {
			mu.Lock()
			indexed[h], indexedAt[h] = d, time.Now()
			mu.Unlock()
		}
	}
	p, err := startProc(c.node, args, filepath.Join(dir, "node.log"), onLine)
	if err != nil {
		return run, err
	}
	replayErr := func() error {
		rc := newRPCClient(rpcPort)
		if _, err := waitRPC(rc, p, 5*time.Minute); err != nil {
			return err
		}
		run.StartupSeconds = time.Since(p.start).Seconds()
		br, err := openBlocks(ci.BlocksFile())
		if err != nil {
			return err
		}
		defer br.Close()
		var (
			all    []float64
			bigs   = map[int32]bool{}
			height int32
			hexBuf []byte
			t0     = time.Now()
		)
		for {
			raw, err := br.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if isGenesisHeader(raw) {
				continue
			}
			height++
			if height > ci.TipHeight-int32(len(tips)) {
				break
			}
			ntx, err := blockTxCount(raw)
			if err != nil {
				return fmt.Errorf("block %d: %w", height, err)
			}
			hexBuf = hex.AppendEncode(hexBuf[:0], raw)
			body := rc.submitBody(hexBuf)
			start := time.Now()
			res, err := rc.post(body)
			took := time.Since(start)
			if err != nil {
				return fmt.Errorf("submitblock %d: %w", height, err)
			}
			if string(res) != "null" {
				return fmt.Errorf("submitblock %d rejected: %s", height, res)
			}
			ms := float64(took.Microseconds()) / 1000
			all = append(all, ms)
			if ntx >= big {
				run.submitBigMs = append(run.submitBigMs, ms)
				bigs[height] = true
			}
			run.Blocks++
			run.Txs += int64(ntx)
			select {
			case <-p.Exited():
				return p.ExitError()
			default:
			}
		}
		run.ReplaySeconds = time.Since(t0).Seconds()
		replayed := ci.TipHeight - int32(len(tips))
		if withIndex {
			// The index's writer follows the chain: the replay is
			// done when the Electrum server reports its last block.
			if _, err := waitElectrumTip(p, ePort, replayed, time.After(c.timeout)); err != nil {
				return err
			}
		}
		run.Seconds = time.Since(t0).Seconds()
		// The figures reported for the replay are read at its end: the
		// tip phase below has CPU and memory of its own.
		run.CPUSeconds = p.CPUSeconds()
		run.HWMMiB = float64(p.HWMKB()) / 1024
		run.PeakRSSMiB = float64(p.peakSince(p.start)) / 1024
		if len(tips) > 0 {
			tipStart := time.Now()
			port := 0
			if withIndex {
				port = ePort
			}
			committed := func(h int32) (time.Time, bool) {
				mu.Lock()
				defer mu.Unlock()
				t, ok := indexedAt[h]
				return t, ok
			}
			res, err := runTip(rc, port, tips, heavy, committed)
			if err != nil {
				return fmt.Errorf("tip phase: %w", err)
			}
			run.TipCPUSeconds = p.CPUSeconds() - run.CPUSeconds
			run.TipPeakRSSMiB = float64(p.peakSince(tipStart)) / 1024
			run.tipSubmitMs, run.tipNotifyMs, run.tipHeavyMs = res.submit, res.notify, res.heavy
			run.tipHeavyCommitMs, run.TipHeavyMissing = res.heavyCommit, res.heavyMissing
			run.TipBlocks = len(tips)
		}
		res, err := rc.call("getblockcount")
		if err != nil {
			return err
		}
		var count int32
		if err := json.Unmarshal(res, &count); err != nil {
			return err
		}
		if count != ci.TipHeight {
			return fmt.Errorf("node at height %d after the replay, chain.json says %d", count, ci.TipHeight)
		}
		run.SubmitAll = summarize(all)
		run.SubmitBig = summarize(run.submitBigMs)
		run.Connections = rc.dials.Load()
		if withIndex {
			// The writer logs a block it indexed alone; blocks it
			// committed in a batch, behind the chain, have no line.
			mu.Lock()
			for h := range bigs {
				if d, ok := indexed[h]; ok {
					run.indexBigMs = append(run.indexBigMs, float64(d.Microseconds())/1000)
				}
			}
			for _, b := range tips {
				if d, ok := indexed[b.height]; ok {
					run.tipIndexMs = append(run.tipIndexMs, float64(d.Microseconds())/1000)
				}
			}
			mu.Unlock()
			run.IndexBig = summarize(run.indexBigMs)
		}
		run.TipSubmit, run.TipIndex, run.TipNotify = summarize(run.tipSubmitMs), summarize(run.tipIndexMs),
			summarize(run.tipNotifyMs)
		run.TipHeavy, run.TipHeavyCommit = summarize(run.tipHeavyMs), summarize(run.tipHeavyCommitMs)
		return nil
	}()
	shutdown, stopErr := p.Stop(5 * time.Minute)
	if replayErr != nil {
		return run, replayErr
	}
	if stopErr != nil {
		return run, stopErr
	}
	if run.Seconds <= 0 {
		return run, errors.New("no blocks replayed")
	}
	run.BlocksPerSec = float64(run.Blocks) / run.Seconds
	run.TxPerSec = float64(run.Txs) / run.Seconds
	run.ShutdownSeconds = shutdown.Seconds()
	return run, nil
}

func (rep *ibdReport) summary(kind string) ibdSummary {
	var secs, bps, tps, rss, cpu, sub, idx, tsub, tidx, tnot, theavy, tcommit, tcpu, trss []float64
	missing := 0
	for _, r := range rep.Runs {
		if r.Kind != kind {
			continue
		}
		secs = append(secs, r.Seconds)
		bps = append(bps, r.BlocksPerSec)
		tps = append(tps, r.TxPerSec)
		rss = append(rss, r.PeakRSSMiB)
		cpu = append(cpu, r.CPUSeconds)
		sub = append(sub, r.submitBigMs...)
		idx = append(idx, r.indexBigMs...)
		tsub, tidx, tnot = append(tsub, r.tipSubmitMs...), append(tidx, r.tipIndexMs...), append(tnot, r.tipNotifyMs...)
		theavy = append(theavy, r.tipHeavyMs...)
		tcommit = append(tcommit, r.tipHeavyCommitMs...)
		missing += r.TipHeavyMissing
		tcpu, trss = append(tcpu, r.TipCPUSeconds), append(trss, r.TipPeakRSSMiB)
	}
	return ibdSummary{Runs: len(secs), Seconds: median(secs), BlocksPerSec: median(bps), TxPerSec: median(tps),
		PeakRSSMiB: median(rss), CPUSeconds: median(cpu), SubmitBig: summarize(sub), IndexBig: summarize(idx),
		TipSubmit: summarize(tsub), TipIndex: summarize(tidx), TipNotify: summarize(tnot), TipHeavy: summarize(theavy),
		TipHeavyCommit: summarize(tcommit), TipHeavyMissing: missing, TipCPUSeconds: median(tcpu),
		TipPeakRSSMiB: median(trss)}
}

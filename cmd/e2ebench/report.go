package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// machineInfo describes where a benchmark ran.
type machineInfo struct {
	Date     string  `json:"date"`
	CPUs     int     `json:"cpus"`
	CPU      string  `json:"cpu,omitempty"`
	MemoryGB float64 `json:"memory_gib"`
	Commit   string  `json:"commit,omitempty"`
	Go       string  `json:"go"`
}

func machine() machineInfo {
	m := machineInfo{Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemoryGB = float64(parseProcStatus(string(raw))["MemTotal"]) / (1 << 20)
	}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if err := exec.Command("git", "diff", "--quiet", "HEAD").Run(); err != nil {
			m.Commit += "+changes"
		}
	}
	return m
}

func (m machineInfo) String() string {
	s := fmt.Sprintf("%s; %d CPUs", m.Date, m.CPUs)
	if m.CPU != "" {
		s += " (" + m.CPU + ")"
	}
	s += fmt.Sprintf(", %.0f GiB; %s", m.MemoryGB, m.Go)
	if m.Commit != "" {
		s += "; commit " + m.Commit
	}
	return s
}

func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fmtMs formats a latency in milliseconds, or "-" when nothing was measured.
func fmtMs(ms float64, n int) string {
	if n == 0 {
		return "-"
	}
	if ms < 10 {
		return fmt.Sprintf("%.2f", ms)
	}
	return fmt.Sprintf("%.1f", ms)
}

// commas formats v rounded to a whole number with thousands separators.
func commas(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func fmtRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", r)
}

func kindLabel(k string) string {
	switch k {
	case kindElectrum:
		return "btcd-electrum --electrumindex"
	case kindAddrIndex:
		return "btcd --addrindex"
	case kindTxIndex:
		return "btcd --txindex"
	}
	return k
}

func (rep *catchupReport) kinds() []string {
	var ks []string
	for _, k := range []string{kindElectrum, kindAddrIndex, kindTxIndex} {
		if _, ok := rep.Median[k]; ok {
			ks = append(ks, k)
		}
	}
	return ks
}

func (rep *catchupReport) writeTable(w io.Writer) {
	ci := rep.Chain
	fmt.Fprintf(w, "\nIndex catch-up: %s (%s, %d blocks, %d tx, tip %d)\n%s\n\n", ci.Dir, ci.Network, ci.Blocks, ci.Txs,
		ci.TipHeight, rep.Machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\trun\tseconds\ttx/s\tpeak RSS MiB\tVmHWM MiB\tdu growth MB\tindex MB\tindex B/tx\t")
	for _, k := range rep.kinds() {
		for _, r := range rep.Runs {
			if r.Kind == k {
				fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t\n", kindLabel(k), r.Run, r.Seconds, r.TxPerSec,
					r.PeakRSSMiB, r.HWMMiB, float64(r.RawIndexBytes)/1e6, float64(r.IndexBytes)/1e6, r.BytesPerTx)
			}
		}
		m := rep.Median[k]
		fmt.Fprintf(tw, "%s\tmedian\t%.2f\t%.0f\t%.0f\t\t\t\t%.1f\t\n", kindLabel(k), m.Seconds, m.TxPerSec, m.PeakRSSMiB, m.BytesPerTx)
	}
	tw.Flush()
	fmt.Fprintln(w, unitsNote)
	for _, k := range []string{kindAddrIndex, kindTxIndex} {
		if r, ok := rep.Ratios[k]; ok {
			fmt.Fprintf(w, "ours vs %s: %s the speed, %s the peak memory, %s the index bytes per tx\n",
				kindLabel(k), fmtRatio(r.Speed), fmtRatio(r.PeakRSS), fmtRatio(r.BytesPerTx))
		}
	}
	if m, ok := rep.Median[kindElectrum]; ok {
		var own []float64
		for _, r := range rep.Runs {
			if r.Kind == kindElectrum && r.IndexTxPerSec > 0 {
				own = append(own, r.IndexTxPerSec)
			}
		}
		if len(own) > 0 {
			fmt.Fprintf(w, "the Electrum index's own catch-up window (its log): median %.0f tx/s; process start to serving: %.0f tx/s\n",
				median(own), m.TxPerSec)
		}
	}
}

func (rep *catchupReport) markdown(svg string) string {
	var b strings.Builder
	ci := rep.Chain
	fmt.Fprintf(&b, "\n## End to end: index catch-up (`e2ebench catchup`)\n\n")
	fmt.Fprintf(&b, "Chain `%s`: %s, %d blocks, %s transactions (tip %d). Machine: %s.\n", filepath.Base(ci.Dir), ci.Network,
		ci.Blocks, commas(float64(ci.Txs)), ci.TipHeight, rep.Machine)
	fmt.Fprintf(&b, "Each run copies the chain's database and times the process from start until the index is at the tip "+
		"(ours: the Electrum port answers `blockchain.headers.subscribe` with the tip; btcd: \"Indexes caught up\"). "+
		"tx/s is the chain's transactions over those seconds; peak RSS the highest 100 ms sample of VmRSS, in MiB (2^20 bytes); index bytes "+
		"the growth of the database on disk, the chain's and the run's both compacted by leveldb. btcd's `--addrindex` maintains its transaction index too.\n\n")
	b.WriteString("| configuration | run | seconds | tx/s | peak RSS MiB | index B/tx |\n|---|---|---|---|---|---|\n")
	for _, k := range rep.kinds() {
		for _, r := range rep.Runs {
			if r.Kind == k {
				fmt.Fprintf(&b, "| %s | %d | %.2f | %s | %.0f | %.1f |\n", kindLabel(k), r.Run, r.Seconds, commas(r.TxPerSec), r.PeakRSSMiB, r.BytesPerTx)
			}
		}
		m := rep.Median[k]
		fmt.Fprintf(&b, "| **%s** | median | **%.2f** | **%s** | %.0f | %.1f |\n", kindLabel(k), m.Seconds, commas(m.TxPerSec), m.PeakRSSMiB, m.BytesPerTx)
	}
	b.WriteString("\n")
	for _, k := range []string{kindAddrIndex, kindTxIndex} {
		if r, ok := rep.Ratios[k]; ok {
			fmt.Fprintf(&b, "- ours against %s: %s the speed, %s the peak memory, %s the index bytes per transaction\n",
				kindLabel(k), fmtRatio(r.Speed), fmtRatio(r.PeakRSS), fmtRatio(r.BytesPerTx))
		}
	}
	if svg != "" {
		fmt.Fprintf(&b, "\n![catch-up speed and resident memory over height](%s)\n", filepath.Base(svg))
	}
	return b.String()
}

func (rep *ibdReport) writeTable(w io.Writer) {
	ci := rep.Chain
	fmt.Fprintf(w, "\nInitial block download by submitblock: %s (%s, %d blocks, %d tx; %d blocks of >= %d tx)\n%s\n\n",
		ci.Dir, ci.Network, ci.Blocks, ci.Txs, rep.BigBlocks, rep.BigBlockTxs, rep.Machine)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\trun\tseconds\tblocks/s\ttx/s\treplay CPU s\tpeak RSS MiB\tsubmit p50 ms\tp90\tmax\tindex p50 ms\tp90\tmax\t")
	row := func(name, run, cpu string, secs, bps, tps, rss float64, sub, idx latency) {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.1f\t%.0f\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, run, secs, bps, tps, cpu, rss,
			fmtMs(sub.P50Ms, sub.N), fmtMs(sub.P90Ms, sub.N), fmtMs(sub.MaxMs, sub.N),
			fmtMs(idx.P50Ms, idx.N), fmtMs(idx.P90Ms, idx.N), fmtMs(idx.MaxMs, idx.N))
	}
	for _, kind := range []string{ibdIndex, ibdNoIndex} {
		s := rep.kindSummary(kind)
		if s.Runs == 0 {
			continue
		}
		for _, r := range rep.Runs {
			if r.Kind == kind {
				row(ibdName(kind), fmt.Sprint(r.Run), fmt.Sprintf("%.1f", r.CPUSeconds), r.Seconds, r.BlocksPerSec, r.TxPerSec,
					r.PeakRSSMiB, r.SubmitBig, r.IndexBig)
			}
		}
		row(ibdName(kind), "median", fmt.Sprintf("%.1f", s.CPUSeconds), s.Seconds, s.BlocksPerSec, s.TxPerSec, s.PeakRSSMiB, s.SubmitBig, s.IndexBig)
	}
	tw.Flush()
	fmt.Fprintln(w, "replay CPU and peak RSS: the node's from its start to the end of the replay, the tip phase left out; "+
		"memory in MiB (2^20 bytes)")
	fmt.Fprintf(w, "overhead of the index (median seconds with / without): %s\n", fmtRatio(rep.Overhead))
	fmt.Fprintf(w, "latencies: blocks of >= %d tx, all runs of a node together (submit: submitblock round trip; index: "+
		"the index's own time for a block its writer indexed alone, from its log)\n", rep.BigBlockTxs)
	if rep.TipBlocks == 0 {
		return
	}
	fmt.Fprintf(w, "\nTip phase: the last %d blocks (%d-%d tx) one at a time on a quiet node, after the replay above\n",
		rep.TipBlocks, rep.TipTxsMin, rep.TipTxsMax)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "node\tsubmit p50 ms\tp90\tmax\tindex p50 ms\tp90\tmax\tnotification p50 ms\tp90\tmax\tCPU s\tpeak RSS MiB\t")
	for _, kind := range []string{ibdIndex, ibdNoIndex} {
		s := rep.kindSummary(kind)
		if s.Runs == 0 {
			continue
		}
		l := []latency{s.TipSubmit, s.TipIndex, s.TipNotify}
		var cells []string
		for _, x := range l {
			cells = append(cells, fmtMs(x.P50Ms, x.N), fmtMs(x.P90Ms, x.N), fmtMs(x.MaxMs, x.N))
		}
		cells = append(cells, fmt.Sprintf("%.1f", s.TipCPUSeconds), fmt.Sprintf("%.0f", s.TipPeakRSSMiB))
		fmt.Fprintf(tw, "%s\t%s\t\n", ibdName(kind), strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w, "notification: from submitblock's answer to each status notification of a script the block pays; "+
		"CPU and peak RSS: the node's during the tip phase (medians of the runs)")
	if h := rep.With.TipHeavy; h.N > 0 || rep.With.TipHeavyMissing > 0 {
		fmt.Fprintf(w, "the %d longest histories the server answers, when a tip block touched them: notification p50 %s, p90 %s, max %s ms (%d; %d missing after %v)\n",
			tipHeavy, fmtMs(h.P50Ms, h.N), fmtMs(h.P90Ms, h.N), fmtMs(h.MaxMs, h.N), h.N, rep.With.TipHeavyMissing, tipWait)
		if c := rep.With.TipHeavyCommit; c.N > 0 {
			fmt.Fprintf(w, "  the same from the index's commit of the block: p50 %s, p90 %s, max %s ms\n",
				fmtMs(c.P50Ms, c.N), fmtMs(c.P90Ms, c.N), fmtMs(c.MaxMs, c.N))
		}
	}
}

func (rep *ibdReport) markdown() string {
	var b strings.Builder
	ci := rep.Chain
	fmt.Fprintf(&b, "\n## End to end: initial block download (`e2ebench ibd`)\n\n")
	fmt.Fprintf(&b, "Chain `%s`: %s, %d blocks, %s transactions, %d blocks of %s or more. Machine: %s.\n", filepath.Base(ci.Dir),
		ci.Network, ci.Blocks, commas(float64(ci.Txs)), rep.BigBlocks, commas(float64(rep.BigBlockTxs)), rep.Machine)
	fmt.Fprintf(&b, "A fresh node with `--addcheckpoint` at the tip (no script validation, as below a checkpoint) is sent "+
		"blocks.dat with `submitblock`, one block at a time over one connection. Latencies are of the blocks of %d or more "+
		"transactions, all runs together: the submitblock round trip, and the Electrum index's own time (from reading the "+
		"block to the end of its commit) for those its writer indexed alone, from its \"Indexed block\" log lines.\n\n",
		rep.BigBlockTxs)
	b.WriteString("| node | run | seconds | blocks/s | tx/s | replay CPU s | peak RSS MiB | submitblock p50 / p90 / max ms | index p50 / p90 / max ms |\n|---|---|---|---|---|---|---|---|---|\n")
	lat := func(l latency) string {
		if l.N == 0 {
			return "-"
		}
		return fmtMs(l.P50Ms, l.N) + " / " + fmtMs(l.P90Ms, l.N) + " / " + fmtMs(l.MaxMs, l.N)
	}
	for _, kind := range []string{ibdIndex, ibdNoIndex} {
		s := rep.kindSummary(kind)
		if s.Runs == 0 {
			continue
		}
		for _, r := range rep.Runs {
			if r.Kind == kind {
				fmt.Fprintf(&b, "| %s | %d | %.2f | %.1f | %s | %.1f | %.0f | %s | %s |\n", ibdName(kind), r.Run, r.Seconds, r.BlocksPerSec,
					commas(r.TxPerSec), r.CPUSeconds, r.PeakRSSMiB, lat(r.SubmitBig), lat(r.IndexBig))
			}
		}
		fmt.Fprintf(&b, "| **%s** | median | **%.2f** | %.1f | **%s** | %.1f | %.0f | %s | %s |\n", ibdName(kind), s.Seconds,
			s.BlocksPerSec, commas(s.TxPerSec), s.CPUSeconds, s.PeakRSSMiB, lat(s.SubmitBig), lat(s.IndexBig))
	}
	fmt.Fprintf(&b, "\nOverhead of the index (median seconds with / without): **%s**. The index's writer follows the chain, "+
		"committing each block alone while it keeps up and batches of blocks when it is behind; with the index, a replay "+
		"ends when the Electrum port reports the tip. Replay CPU (user and system) and peak RSS (the highest 100 ms "+
		"sample of VmRSS, in MiB: 2^20 bytes) are the node's from its start to the end of the replay, without the tip "+
		"phase below.\n", fmtRatio(rep.Overhead))
	if rep.TipBlocks > 0 {
		fmt.Fprintf(&b, "\nTip phase: the chain's last %d blocks (%d-%d transactions), left out of the replay above, sent one "+
			"at a time on a quiet node, with a wallet subscribed to up to %d scripts each pays. Notification: from "+
			"submitblock's answer to each status notification. CPU and peak RSS: the node's during the tip phase "+
			"(medians of the runs).\n\n", rep.TipBlocks, rep.TipTxsMin, rep.TipTxsMax, tipScriptsPerBlock)
		b.WriteString("| node | submitblock p50 / p90 / max ms | index p50 / p90 / max ms | notification p50 / p90 / max ms | CPU s | peak RSS MiB |\n|---|---|---|---|---|---|\n")
		for _, kind := range []string{ibdIndex, ibdNoIndex} {
			if s := rep.kindSummary(kind); s.Runs > 0 {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f | %.0f |\n", ibdName(kind), lat(s.TipSubmit), lat(s.TipIndex),
					lat(s.TipNotify), s.TipCPUSeconds, s.TipPeakRSSMiB)
			}
		}
		if h := rep.With.TipHeavy; h.N > 0 || rep.With.TipHeavyMissing > 0 {
			fmt.Fprintf(&b, "\nThe wallet also subscribed to the chain's %d longest histories the server answers: their "+
				"notifications after a tip block touching them, each awaited before the next block, p50 / p90 / max: "+
				"%s ms (%d; %d did not come within %v); from the index's commit of the block: %s ms.\n",
				tipHeavy, lat(h), h.N, rep.With.TipHeavyMissing, tipWait, lat(rep.With.TipHeavyCommit))
		}
	}
	return b.String()
}

// unitsNote says which units catchup's memory and disk columns are in.
const unitsNote = "memory in MiB (2^20 bytes, as /proc's kB are KiB); disk in MB (10^6 bytes)"

// kindSummary returns the summary of one node configuration.
func (rep *ibdReport) kindSummary(kind string) ibdSummary {
	if kind == ibdIndex {
		return rep.With
	}
	return rep.Without
}

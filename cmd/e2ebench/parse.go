package main

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Log lines the benchmarks read.
var (
	// The Electrum index's catch-up progress (indexers/pipeline.go):
	// "Electrum index: height 1200/4000 committed (300000 tx), 51234 tx/s"
	// (older versions: "committed (300000/1000000 tx)", or no committed
	// part).
	reElectrumProgress = regexp.MustCompile(`Electrum index: height (\d+)/(\d+)(?: committed \((?:\d+/)?\d+ tx\))?, (\d+) tx/s`)
	// Its end: "Electrum index: caught up to height 4000 (1000000 tx in
	// 17.2s)" (older versions: "caught up 4000 blocks (1000000 tx) in
	// 17.2s (58000 tx/s)").
	reElectrumCaughtUp    = regexp.MustCompile(`Electrum index: caught up to height (\d+) \((\d+) tx in (\S+)\)`)
	reElectrumCaughtUpOld = regexp.MustCompile(`Electrum index: caught up (\d+) blocks \((\d+) tx\) in (\S+) \((\d+) tx/s\)`)
	// btcd's index manager (blockchain/indexers/manager.go) when every
	// index has reached the tip: "Indexes caught up to height 4000".
	reBtcdCaughtUp = regexp.MustCompile(`Indexes caught up to height (\d+)`)
	// btcd's progress logger during its index catch-up
	// (blockchain/indexers/blocklogger.go): "Indexed 120 blocks in the
	// last 10s (300000 transactions, height 1200, 2024-01-01 ...)".
	reBtcdProgress = regexp.MustCompile(`Indexed (\d+) blocks? in the last (\S+) \((\d+) transactions?, height (\d+)`)
	// A block's index time: the Electrum index's writer indexing a block
	// alone (indexers/pipeline.go, "Indexed block 1200 (3001 tx) in
	// 12.3ms", from reading the block to the end of its commit; an
	// intermediate version logged "..., committed in 1.2ms", the commit
	// alone), or the node's timing wrapper around other indexes
	// (node/index.go, with thousands separators: "(3,001 tx)").
	reIndexedBlock = regexp.MustCompile(`Indexed block (\d+) \(([\d,]+) tx\),? (?:committed )?in (\S+)`)
)

// progressPoint is one point of a catch-up's progress.
type progressPoint struct {
	Seconds  float64 `json:"seconds"`
	Height   int32   `json:"height"`
	TxPerSec float64 `json:"tx_per_sec"`
	RSSMiB   float64 `json:"rss_mib"`
}

// parseElectrumProgress reads a progress line of the Electrum index: the
// height reached and the rate over the last interval.
func parseElectrumProgress(line string) (height int32, rate float64, ok bool) {
	m := reElectrumProgress.FindStringSubmatch(line)
	if m == nil {
		return 0, 0, false
	}
	h, err1 := strconv.ParseInt(m[1], 10, 32)
	r, err2 := strconv.ParseFloat(m[3], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return int32(h), r, true
}

// parseElectrumCaughtUp reads the Electrum index's end-of-catch-up line: its
// own rate over the catch-up window.
func parseElectrumCaughtUp(line string) (txs int64, took time.Duration, rate float64, ok bool) {
	m := reElectrumCaughtUp.FindStringSubmatch(line)
	old := m == nil
	if old {
		m = reElectrumCaughtUpOld.FindStringSubmatch(line)
	}
	if m == nil {
		return 0, 0, 0, false
	}
	n, err1 := strconv.ParseInt(m[2], 10, 64)
	d, err2 := time.ParseDuration(m[3])
	if err1 != nil || err2 != nil || d <= 0 {
		return 0, 0, 0, false
	}
	if old {
		r, err := strconv.ParseFloat(m[4], 64)
		return n, d, r, err == nil
	}
	return n, d, float64(n) / d.Seconds(), true
}

// parseBtcdCaughtUp reads btcd's "Indexes caught up to height N".
func parseBtcdCaughtUp(line string) (int32, bool) {
	m := reBtcdCaughtUp.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	h, err := strconv.ParseInt(m[1], 10, 32)
	return int32(h), err == nil
}

// parseBtcdProgress reads btcd's index progress line: the height reached and
// the rate over the interval it covers.
func parseBtcdProgress(line string) (height int32, rate float64, ok bool) {
	m := reBtcdProgress.FindStringSubmatch(line)
	if m == nil {
		return 0, 0, false
	}
	d, err1 := time.ParseDuration(m[2])
	txs, err2 := strconv.ParseInt(m[3], 10, 64)
	h, err3 := strconv.ParseInt(m[4], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || d <= 0 {
		return 0, 0, false
	}
	return int32(h), float64(txs) / d.Seconds(), true
}

// parseIndexedBlock reads a per-block index time line.
func parseIndexedBlock(line string) (height int32, txs int, took time.Duration, ok bool) {
	m := reIndexedBlock.FindStringSubmatch(line)
	if m == nil {
		return 0, 0, 0, false
	}
	h, err1 := strconv.ParseInt(m[1], 10, 32)
	n, err2 := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
	d, err3 := time.ParseDuration(m[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0, false
	}
	return int32(h), n, d, true
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// values, which it does not modify; 0 for no values.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	rank := int(math.Ceil(p/100*float64(len(s)) - 1e-9))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// median returns the median of values (the mean of the middle two for an
// even count); 0 for no values.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// latency summarizes a set of durations in milliseconds.
type latency struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	MaxMs float64 `json:"max_ms"`
}

func summarize(ms []float64) latency {
	if len(ms) == 0 {
		return latency{}
	}
	return latency{N: len(ms), P50Ms: percentile(ms, 50), P90Ms: percentile(ms, 90), MaxMs: percentile(ms, 100)}
}

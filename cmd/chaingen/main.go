// Command chaingen generates a deterministic mainnet-shaped chain for
// benchmarks: a btcd datadir, blocks.dat for replay, scripts.txt for load
// tools and a chain.json summary (see internal/chaingen).
//
//	go run ./cmd/chaingen -out DIR -txs 1000000 -seed 1 -net simnet
//
// btcd opens the result with --simnet --datadir=DIR; a node replaying
// blocks.dat needs --addcheckpoint with chain.json's checkpoint.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/chaingen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaingen:", err)
		os.Exit(1)
	}
}

func run() error {
	shape := chaingen.DefaultShape()
	var (
		out      = flag.String("out", "", "output directory (required); the database goes to DIR/<net>/blocks_ffldb")
		txs      = flag.Int("txs", 1_000_000, "non-coinbase transactions to generate")
		seed     = flag.Uint64("seed", 1, "random seed; same seed and flags give the same chain")
		net      = flag.String("net", "simnet", "network: simnet or regtest")
		workers  = flag.Int("workers", 0, "goroutines building transactions (default GOMAXPROCS; does not change the chain)")
		cache    = flag.Int("utxocache", 1024, "btcd UTXO cache size in MiB while generating")
		quiet    = flag.Bool("quiet", false, "no progress lines")
		perBlock = flag.Int("per-block", shape.TxsPerBlock, "transactions of a full block")
		ramp     = flag.Int("ramp", shape.RampBlocks, "blocks over which block size ramps up to -per-block")
		inputs   = flag.String("inputs", ppmList(shape.InputsPPM), "`percentages` of ordinary transactions with 1, 2, 3, ... inputs")
		recent   = flag.Float64("recent", float64(shape.RecentPPM)/1e4, "`percentage` of the inputs not spending a same-block output that spend one of the last 8,000 outputs of the spendable pool, mostly the newest; the rest spend a uniformly random one")
	)
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		return fmt.Errorf("-out is required and there are no arguments")
	}
	shape.TxsPerBlock, shape.RampBlocks = *perBlock, *ramp
	var err error
	if shape.InputsPPM, err = parsePPMList(*inputs); err != nil {
		return fmt.Errorf("-inputs: %w", err)
	}
	if *recent < 0 || *recent > 100 {
		return fmt.Errorf("-recent %v not in 0..100", *recent)
	}
	shape.RecentPPM = uint32(math.Round(*recent * 1e4))
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var last time.Time
	progress := func(p chaingen.Progress) {
		if *quiet || time.Since(last) < 2*time.Second {
			return
		}
		last = time.Now()
		rate := float64(p.Txs) / p.Elapsed.Seconds()
		fmt.Fprintf(os.Stderr, "height %6d  txs %9d  scripts %9d  spendable %8d  %6.0f tx/s  %s\n",
			p.Height, p.Txs, p.Scripts, p.Unspent, rate, p.Elapsed.Round(time.Second))
	}
	s, err := chaingen.Generate(chaingen.Options{
		Dir: *out, Net: *net, Seed: *seed, Txs: *txs, Shape: shape,
		Workers: *workers, UtxoCacheMiB: *cache, Progress: progress,
	})
	if err != nil {
		return err
	}
	brief := struct {
		Network         string                `json:"network"`
		Transactions    int                   `json:"transactions"`
		Blocks          int                   `json:"blocks"`
		Checkpoint      string                `json:"checkpoint"`
		DistinctScripts int                   `json:"distinct_scripts"`
		SameBlockShare  float64               `json:"same_block_share"`
		UnspentOutputs  int                   `json:"unspent_outputs"`
		HistoryOver     map[string]int        `json:"scripts_with_history_over"`
		Top             []chaingen.ScriptStat `json:"top_scripts"`
		Seconds         float64               `json:"generation_seconds"`
	}{s.Network, s.Transactions, s.Blocks, s.Checkpoint, s.DistinctScripts, s.SameBlockShare,
		s.UnspentOutputs, s.ScriptsWithHistoryOver, s.TopScripts[:min(5, len(s.TopScripts))], s.GenerationSeconds}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(brief); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %s/%s/blocks_ffldb, %s, %s, %s\n", *out, *out, *net,
		chaingen.BlocksFile, chaingen.ScriptsFile, chaingen.SummaryFile)
	return nil
}

// ppmList shows probabilities in parts per million as percentages.
func ppmList(ppms []uint32) string {
	parts := make([]string, len(ppms))
	for i, p := range ppms {
		parts[i] = strconv.FormatFloat(float64(p)/1e4, 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// parsePPMList reads comma-separated percentages summing to 100 as parts
// per million.
func parsePPMList(s string) ([]uint32, error) {
	var out []uint32
	var sum uint32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 || v > 100 {
			return nil, fmt.Errorf("%q is not a percentage", f)
		}
		out = append(out, uint32(math.Round(v*1e4)))
		sum += out[len(out)-1]
	}
	if sum != 1_000_000 {
		return nil, fmt.Errorf("the percentages %s sum to %v, not 100", s, float64(sum)/1e4)
	}
	return out, nil
}

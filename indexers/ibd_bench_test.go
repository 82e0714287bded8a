package indexers_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btclog"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/chaingen"
)

// BenchmarkIBDReplay replays a generated chain (IBD_CHAIN: a directory
// written by cmd/chaingen) block by block into a fresh chain, as initial
// block download does below a checkpoint, without an index and with the
// Electrum index, and reports both times and their ratio. It guides work on
// the index's cost during initial block download; the figure reported for
// the node comes from the binary (cmd/e2ebench).
func BenchmarkIBDReplay(b *testing.B) {
	dir := os.Getenv("IBD_CHAIN")
	if dir == "" {
		b.Skip("IBD_CHAIN names no generated chain")
	}
	var sum struct {
		Network    string `json:"network"`
		Checkpoint string `json:"checkpoint"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "chain.json"))
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		b.Fatal(err)
	}
	params, err := chaingen.Params(sum.Network)
	if err != nil {
		b.Fatal(err)
	}
	hs, hashStr, _ := strings.Cut(sum.Checkpoint, ":")
	height, err := strconv.Atoi(hs)
	if err != nil {
		b.Fatal(err)
	}
	hash, err := chainhash.NewHashFromStr(hashStr)
	if err != nil {
		b.Fatal(err)
	}
	var blocks []*btcutil.Block
	txs := 0
	if err := chaingen.ReadBlocks(filepath.Join(dir, "blocks.dat"), func(blk *btcutil.Block) error {
		blocks = append(blocks, blk)
		txs += len(blk.Transactions())
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	checkpoints := []chaincfg.Checkpoint{{Height: int32(height), Hash: hash}}

	replay := func(b *testing.B, withIndex, trailing bool) time.Duration {
		b.Helper()
		db, err := database.Create("ffldb", filepath.Join(b.TempDir(), "db"), params.Net)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		cfg := &blockchain.Config{DB: db, ChainParams: params, TimeSource: blockchain.NewMedianTime(),
			Checkpoints: checkpoints, UtxoCacheMaxSize: 250 << 20}
		var idx *indexers.ElectrumIndex
		if withIndex {
			idx = indexers.NewElectrumIndex(db, params)
			if trailing {
				idx.SetTrailing(indexers.DefaultTrailAge, nil)
				defer idx.StopTrailing()
			}
			cfg.IndexManager = indexers.NewManager(db, idx)
		}
		chain, err := blockchain.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for _, blk := range blocks {
			fresh := btcutil.NewBlock(blk.MsgBlock())
			if _, _, err := chain.ProcessBlock(fresh, blockchain.BFNone); err != nil {
				b.Fatal(err)
			}
		}
		if idx != nil {
			if err := idx.WaitCaughtUp(10 * time.Minute); err != nil {
				b.Fatal(err)
			}
		}
		if err := chain.FlushUtxoCache(blockchain.FlushRequired); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	trailing := os.Getenv("IBD_TRAILING") != "0"
	if os.Getenv("IBD_LOG") != "" {
		l := btclog.NewBackend(os.Stderr).Logger("ELEC")
		l.SetLevel(btclog.LevelDebug)
		indexers.UseLogger(l)
		defer indexers.UseLogger(btclog.Disabled)
	}
	var plain, with []time.Duration
	for i := 0; i < b.N; i++ {
		plain = append(plain, replay(b, false, false))
		with = append(with, replay(b, true, trailing))
	}
	med := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	p, w := med(plain), med(with)
	b.ReportMetric(p.Seconds(), "s-plain")
	b.ReportMetric(w.Seconds(), "s-electrum")
	b.ReportMetric(w.Seconds()/p.Seconds(), "ratio")
	b.ReportMetric(float64(txs)/w.Seconds(), "tx/s")
	b.Logf("%d blocks, %d tx: without index %v, with %v", len(blocks), txs, plain, with)
}

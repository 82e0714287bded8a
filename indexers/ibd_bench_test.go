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
// Electrum index, whose writer follows the chain from a goroutine of its own
// (the time with the index runs until the index holds the tip), and reports
// both times, their ratio, and how many blocks the writer was behind when
// the chain had connected the last block. It guides work on
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

	// replay returns the time from the first block to the last one
	// connected and, with the index, to the index holding the tip, and how
	// many blocks the index was behind when the chain had connected them
	// all.
	replay := func(b *testing.B, withIndex bool) (time.Duration, int32) {
		b.Helper()
		db, err := database.Create("ffldb", filepath.Join(b.TempDir(), "db"), params.Net)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		cfg := &blockchain.Config{DB: db, ChainParams: params, TimeSource: blockchain.NewMedianTime(),
			Checkpoints: checkpoints, UtxoCacheMaxSize: 250 << 20}
		var mgr *indexers.Manager
		var idx *indexers.ElectrumIndex
		if withIndex {
			idx, err = indexers.NewElectrumIndex(db, indexers.Options{Dir: filepath.Join(b.TempDir(), "index")})
			if err != nil {
				b.Fatal(err)
			}
			mgr = indexers.NewManager(db, idx)
			defer mgr.Close()
			cfg.IndexManager = mgr
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
		var behind int32
		if idx != nil {
			tip, _ := idx.LatestTip()
			behind = chain.BestSnapshot().Height - tip.Height
			if err := mgr.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		if err := chain.FlushUtxoCache(blockchain.FlushRequired); err != nil {
			b.Fatal(err)
		}
		return time.Since(start), behind
	}
	if os.Getenv("IBD_LOG") != "" {
		l := btclog.NewBackend(os.Stderr).Logger("ELEC")
		l.SetLevel(btclog.LevelDebug)
		indexers.UseLogger(l)
		defer indexers.UseLogger(btclog.Disabled)
	}
	var plain, with []time.Duration
	var behind []int32
	for i := 0; i < b.N; i++ {
		p, _ := replay(b, false)
		w, n := replay(b, true)
		plain, with, behind = append(plain, p), append(with, w), append(behind, n)
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
	b.ReportMetric(float64(behind[len(behind)-1]), "blocks-behind")
	b.Logf("%d blocks, %d tx: without index %v, with %v; the index %v blocks behind the chain at its last block",
		len(blocks), txs, plain, with, behind)
}

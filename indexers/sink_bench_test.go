package indexers

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/btcd-electrum/btcd-electrum/internal/chaingen"
)

// BenchmarkRowSinks measures what the store's options buy a catch-up on a
// generated chain (SINKS_CHAIN: a directory written by cmd/chaingen): the
// writer's catch-up of the whole chain, the same blocks in the same batches
// (SINKS_BATCH MiB, default the index's), into a store opened with:
//
//   - store: the index's options (store.go: a large write buffer and
//     tables, fewer compactions, no compression);
//   - leveldb-defaults: goleveldb's defaults (4 MiB write buffer and tables,
//     snappy), which rewrite tables from level to level through most of a
//     build;
//   - leveldb-nocompress: the defaults without compression.
//
// Each sink reports the catch-up's seconds and transactions per second and
// the store's size on disk. Run with -benchtime=1x; the figures guide the
// design (docs/BENCHMARKS.md), the node's own are measured end to end by
// cmd/e2ebench. (Its ffldb sink is gone with the index's rows in btcd's
// database.)
func BenchmarkRowSinks(b *testing.B) {
	dir := os.Getenv("SINKS_CHAIN")
	if dir == "" {
		b.Skip("SINKS_CHAIN names no generated chain")
	}
	batch := 0
	if s := os.Getenv("SINKS_BATCH"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("SINKS_BATCH %q", s)
		}
		batch = n << 20
	}
	raw, err := os.ReadFile(filepath.Join(dir, "chain.json"))
	if err != nil {
		b.Fatal(err)
	}
	var sum struct {
		Network string `json:"network"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		b.Fatal(err)
	}
	params, err := chaingen.Params(sum.Network)
	if err != nil {
		b.Fatal(err)
	}
	src := filepath.Join(b.TempDir(), "chain")
	if out, err := exec.Command("cp", "-r", chaingen.DBPath(dir, sum.Network), src).CombinedOutput(); err != nil {
		b.Fatalf("copy chain: %v: %s", err, out)
	}
	cdb, err := database.Open("ffldb", src, params.Net)
	if err != nil {
		b.Fatal(err)
	}
	defer cdb.Close()
	chain, err := blockchain.New(&blockchain.Config{DB: cdb, ChainParams: params,
		TimeSource: blockchain.NewMedianTime()})
	if err != nil {
		b.Fatal(err)
	}
	total := chain.BestSnapshot().TotalTxns

	for _, sink := range []struct {
		name string
		opts func() *opt.Options
	}{
		{"store", func() *opt.Options { return storeOptions(0) }},
		{"leveldb-defaults", func() *opt.Options { return &opt.Options{} }},
		{"leveldb-nocompress", func() *opt.Options { return &opt.Options{Compression: opt.NoCompression} }},
	} {
		b.Run(sink.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				store := filepath.Join(b.TempDir(), "index")
				idx, err := NewElectrumIndex(cdb, Options{Dir: store, BatchBytes: batch})
				if err != nil {
					b.Fatal(err)
				}
				// The same store, reopened with the sink's options.
				if err := idx.store.Close(); err != nil {
					b.Fatal(err)
				}
				if idx.store, err = leveldb.OpenFile(store, sink.opts()); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := idx.start(chain, nil); err != nil {
					b.Fatal(err)
				}
				took := time.Since(start)
				p := idx.Progress()
				if err := idx.Close(); err != nil {
					b.Fatal(err)
				}
				var disk int64
				_ = filepath.WalkDir(store, func(_ string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						if fi, err := d.Info(); err == nil {
							disk += fi.Size()
						}
					}
					return nil
				})
				b.ReportMetric(took.Seconds(), "write-s")
				b.ReportMetric(float64(p.Txs)/p.Duration().Seconds(), "tx/s")
				b.ReportMetric(float64(p.Batches), "batches")
				b.ReportMetric(float64(disk)/(1<<20), "disk-MiB")
				b.ReportMetric(float64(disk)/float64(total), "disk-bytes/tx")
			}
		})
	}
}

package indexers

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/btcd-electrum/btcd-electrum/internal/chaingen"
)

// BenchmarkRowSinks measures where the ceiling of a catch-up lies on a
// generated chain (SINKS_CHAIN: a directory written by cmd/chaingen). It
// plans every block of the chain into the batches a catch-up at the default
// memory budget commits (the merged size; no direct batches), then writes
// those same rows into:
//
//   - ffldb: a fresh btcd database, one transaction per batch, as the
//     catch-up commits them (its write cache, treaps, and a flush to
//     leveldb in one leveldb batch whenever the cache is full);
//   - leveldb-batch: a bare goleveldb database with ffldb's options, one
//     leveldb batch per catch-up batch;
//   - leveldb-chunks: the same, in leveldb batches of SINKS_CHUNK (20,000)
//     rows.
//
// Planning is reported apart (plan-s): reading blocks and spend journals and
// building rows, which a catch-up spreads over all cores. Each sink reports
// its seconds and the transactions per second of the write alone. Run with
// -benchtime=1x; the figures guide the design (docs/BENCHMARKS.md), the
// node's own are measured end to end by cmd/e2ebench.
func BenchmarkRowSinks(b *testing.B) {
	dir := os.Getenv("SINKS_CHAIN")
	if dir == "" {
		b.Skip("SINKS_CHAIN names no generated chain")
	}
	chunk := 20000
	if s := os.Getenv("SINKS_CHUNK"); s != "" {
		if err := json.Unmarshal([]byte(s), &chunk); err != nil || chunk <= 0 {
			b.Fatalf("SINKS_CHUNK %q", s)
		}
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
	tmp := b.TempDir()
	src := filepath.Join(tmp, "chain")
	if out, err := exec.Command("cp", "-r", chaingen.DBPath(dir, sum.Network), src).CombinedOutput(); err != nil {
		b.Fatalf("copy chain: %v: %s", err, out)
	}
	cdb, err := database.Open("ffldb", src, params.Net)
	if err != nil {
		b.Fatal(err)
	}
	chain, err := blockchain.New(&blockchain.Config{DB: cdb, ChainParams: params,
		TimeSource: blockchain.NewMedianTime()})
	if err != nil {
		b.Fatal(err)
	}

	// Plan the chain into batches of the default catch-up's merged size.
	merged := sizesFor(DefaultCatchUpMemory<<20, batchBytes).merged
	var (
		batches []*batch
		utxo    = make(map[[utxoKeyLen]byte]utxoOp)
		cur     = newBatch(utxo, nil)
		count   uint64
		stats   sizeStats
		rows    int
	)
	began := time.Now()
	best := chain.BestSnapshot()
	for h := int32(0); h <= best.Height; h++ {
		f := fetchAndPlan(chain, h)
		if f.err != nil {
			b.Fatal(f.err)
		}
		stats = stats.add(applyConnect(cur, f.plan, count))
		count += uint64(len(f.plan.txs))
		cur.tip, cur.hgt, cur.stats, cur.count = f.plan.hash, f.plan.height, stats, count
		cur.txs += uint64(len(f.plan.txs))
		planPool.Put(f.plan.bufs)
		if cur.bytes+len(utxo)*utxoCost >= merged || h == best.Height {
			cur.seal(true)
			rows += cur.writes()
			batches = append(batches, cur)
			utxo = make(map[[utxoKeyLen]byte]utxoOp)
			cur = newBatch(utxo, cur)
		}
	}
	plan := time.Since(began)
	cdb.Close()
	b.Logf("%d tx in %d batches, %d rows written, planned in %v", count, len(batches), rows,
		plan.Round(time.Millisecond))

	report := func(b *testing.B, took time.Duration) {
		b.ReportMetric(took.Seconds(), "write-s")
		b.ReportMetric(float64(count)/took.Seconds(), "tx/s")
		b.ReportMetric(plan.Seconds(), "plan-s")
		b.ReportMetric(float64(rows)/float64(count), "rows/tx")
	}
	ldbOpts := func() *opt.Options {
		return &opt.Options{Strict: opt.DefaultStrict, Compression: opt.NoCompression,
			Filter: filter.NewBloomFilter(10)}
	}
	b.Run("ffldb", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			db, err := database.Create("ffldb", filepath.Join(b.TempDir(), "db"), params.Net)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Update(func(tx database.Tx) error {
				_, err := tx.Metadata().CreateBucketIfNotExists(indexTipsBucketName)
				return err
			}); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			for _, bt := range batches {
				if err := db.Update(func(tx database.Tx) error { return bt.write(tx.Metadata()) }); err != nil {
					b.Fatal(err)
				}
			}
			took := time.Since(start)
			db.Close()
			report(b, took)
		}
	})
	for _, sink := range []struct {
		name  string
		chunk int
	}{{"leveldb-batch", 0}, {"leveldb-chunks", chunk}} {
		b.Run(sink.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				db, err := leveldb.OpenFile(filepath.Join(b.TempDir(), "ldb"), ldbOpts())
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				lb := new(leveldb.Batch)
				flush := func() {
					if err := db.Write(lb, nil); err != nil {
						b.Fatal(err)
					}
					lb.Reset()
				}
				for _, bt := range batches {
					bt.each(func(k, v []byte, del bool) {
						if del {
							lb.Delete(k)
						} else {
							lb.Put(k, v)
						}
						if sink.chunk > 0 && lb.Len() >= sink.chunk {
							flush()
						}
					})
					lb.Put(statsKey, encodeStats(bt.stats))
					lb.Put(tipKey, bt.tip[:])
					flush()
				}
				took := time.Since(start)
				db.Close()
				report(b, took)
			}
		})
	}
}

// each calls fn with every row of a sealed part in the order write puts
// them.
func (b *batch) each(fn func(k, v []byte, del bool)) {
	for _, p := range b.blk {
		fn(p.k, p.v, false)
	}
	for i := range b.hist {
		k, v := b.histRow(i)
		fn(k, v, false)
	}
	for i := range b.txid {
		fn(b.txid[i][:], emptyVal, false)
	}
	for _, p := range b.tx {
		fn(p.k, p.v, false)
	}
	for i := range b.spent {
		r := &b.spent[i]
		fn(r.k[:], r.v[:], !r.put)
	}
}

package indexers_test

import (
	"encoding/json"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/chaingen"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// bigBlockTxs is the size of the benchmark block: about 3,000 transactions
// of about 2 inputs and 2.5 outputs each.
const bigBlockTxs = 3000

// BenchmarkConnectBlock times the writer's block path on a ~3,000
// transaction block at the tip, with one worker and with GOMAXPROCS
// workers: phase 1 (planning: txids, script hashes, rows), phase 2 (the
// rows and the undo record into the batch) and the commit of the batch with
// the new tip into the store, which holds the index of every block before
// it. The block is undone between iterations, untimed. It reports the
// median in ms, the medians of the phases (commit-ms: the rest, mostly the
// store's insertion of the batch into its memtable), and the rows written
// per transaction.
func BenchmarkConnectBlock(b *testing.B) {
	h, err := testchain.Create(filepath.Join(b.TempDir(), "chain"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	block, stxos, err := h.MineBigBlock(rand.New(rand.NewSource(1)), bigBlockTxs)
	if err != nil {
		b.Fatal(err)
	}
	ins, outs := 0, 0
	for i, tx := range block.Transactions() {
		if i > 0 {
			ins += len(tx.MsgTx().TxIn)
		}
		outs += len(tx.MsgTx().TxOut)
	}
	b.Logf("block: %d transactions, %d inputs, %d outputs", len(block.Transactions()), ins, outs)
	var last atomic.Pointer[indexers.BlockPass]
	idx, err := indexers.NewElectrumIndex(h.DB, indexers.Options{Dir: b.TempDir(),
		OnBlock: func(p indexers.BlockPass) { last.Store(&p) }})
	if err != nil {
		b.Fatal(err)
	}
	defer idx.Close()
	tb, err := idx.NewTipBench(h.Chain)
	if err != nil {
		b.Fatal(err)
	}
	for _, procs := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(workersName(procs), func(b *testing.B) {
			old := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(old)
			var times, plans, writes, commits []time.Duration
			var rows int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// btcutil caches txids; a fresh block makes every
				// iteration hash them as the chain's first sight would.
				blk := btcutil.NewBlock(block.MsgBlock())
				blk.SetHeight(block.Height())
				start := time.Now()
				if err := tb.Connect(blk, stxos); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
				b.StopTimer()
				p := last.Load()
				plans, writes, rows = append(plans, p.Plan), append(writes, p.Write), p.Writes
				commits = append(commits, times[len(times)-1]-p.Plan-p.Write)
				if err := tb.Undo(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(medianMs(times), "median-ms")
			b.ReportMetric(medianMs(plans), "plan-ms")
			b.ReportMetric(medianMs(writes), "write-ms")
			b.ReportMetric(medianMs(commits), "commit-ms")
			b.ReportMetric(float64(rows)/float64(len(block.Transactions())), "writes/tx")
		})
	}
}

// BenchmarkCatchUp builds the index of an existing chain of at least
// CATCHUP_TXS transactions (default 200,000) with the node's index manager,
// as a node started on it does: the writer's catch-up, before the chain
// connects anything. It reports transactions per second, the cores it kept
// busy, peak memory, the rows and bytes the index holds per transaction, the
// rows written per transaction and the store's size on disk per
// transaction. CATCHUP_BATCH is the batch size in MiB (default: the
// index's), CATCHUP_CACHE the store's cache in MiB, CATCHUP_MEM the memory
// a large catch-up may take (Options.CatchUpMemory).
func BenchmarkCatchUp(b *testing.B) {
	minTxs := 200000
	if v := os.Getenv("CATCHUP_TXS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("CATCHUP_TXS %q", v)
		}
		minTxs = n
	}
	var opts indexers.Options
	if v := os.Getenv("CATCHUP_BATCH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("CATCHUP_BATCH %q", v)
		}
		opts.BatchBytes = n << 20
	}
	if v := os.Getenv("CATCHUP_CACHE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("CATCHUP_CACHE %q", v)
		}
		opts.CacheMiB = n
	}
	if v := os.Getenv("CATCHUP_MEM"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("CATCHUP_MEM %q", v)
		}
		opts.CatchUpMemory = n
	}
	if gen := os.Getenv("CATCHUP_GENCHAIN"); gen != "" {
		// A chain written by cmd/chaingen: mainnet's script reuse and
		// block sizes instead of the harness's pool of 50,000 scripts.
		raw, err := os.ReadFile(filepath.Join(gen, "chain.json"))
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
		benchCatchUp(b, chaingen.DBPath(gen, sum.Network), params, opts)
		return
	}
	// CATCHUP_CHAIN keeps the generated chain in a directory across runs
	// (generating 400,000 transactions takes longer than indexing them).
	dir := os.Getenv("CATCHUP_CHAIN")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "chain")
	}
	var h *testchain.Harness
	var err error
	if _, statErr := os.Stat(dir); statErr == nil {
		h, err = testchain.OpenWith(dir, testchain.Options{Pool: testchain.BulkScriptPool()})
	} else {
		h, err = testchain.CreateBulk(dir, 7, minTxs, nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	total := h.Chain.BestSnapshot().TotalTxns
	path, params := h.DBPath(), h.Params
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	if int(total) < minTxs {
		b.Fatalf("chain in %s holds %d transactions, want at least %d", dir, total, minTxs)
	}
	benchCatchUp(b, path, params, opts)
}

// benchCatchUp is BenchmarkCatchUp on the block database at path: each
// iteration opens it with a new index in a store of its own (the chain's
// database is left as it was: the index is not in it).
func benchCatchUp(b *testing.B, path string, params *chaincfg.Params, opts indexers.Options) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db, err := database.Open("ffldb", path, params.Net)
		if err != nil {
			b.Fatal(err)
		}
		opts.Dir = filepath.Join(b.TempDir(), "index")
		idx, err := indexers.NewElectrumIndex(db, opts)
		if err != nil {
			b.Fatal(err)
		}
		var created atomic.Pointer[indexers.ElectrumIndex]
		created.Store(idx)
		mgr := indexers.NewManager(db, idx)
		busy := make(chan [4]float64, 1)
		go func() { busy <- coresBusy(&created) }()
		b.StartTimer()
		start := time.Now()
		chain, err := blockchain.New(&blockchain.Config{DB: db, ChainParams: params,
			TimeSource: blockchain.NewMedianTime(), IndexManager: mgr})
		if err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		m := <-busy
		total := chain.BestSnapshot().TotalTxns
		p := idx.Progress()
		rows, bytes, err := idx.Size()
		if err != nil {
			b.Fatal(err)
		}
		if err := mgr.Close(); err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(p.Txs)/p.Duration().Seconds(), "tx/s")
		b.ReportMetric(m[0], "cores-busy")
		b.ReportMetric(m[1], "peak-MiB")
		b.ReportMetric(m[2], "live-MiB")
		b.ReportMetric(m[3], "heap-MiB")
		b.ReportMetric(elapsed.Seconds(), "open-s")
		b.ReportMetric(float64(p.Batches), "batches")
		b.ReportMetric(float64(rows)/float64(total), "rows/tx")
		b.ReportMetric(float64(bytes)/float64(total), "bytes/tx")
		b.ReportMetric(float64(p.Writes)/float64(total), "writes/tx")
		b.ReportMetric(float64(dirBytes(b, opts.Dir))/float64(total), "disk-bytes/tx")
		b.StartTimer()
	}
}

// dirBytes returns the size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// coresBusy returns, for the catch-up of the index created stores: the
// process's CPU time during it divided by its duration (how many cores it
// kept busy on average), the process's peak resident memory in MiB while it
// ran (sampled every 2 ms; Linux, 0 elsewhere), and the peaks in MiB of the
// Go heap's live bytes (as the last collection marked them) and of its
// objects (live and not yet collected) while it ran. CATCHUP_HEAPPROFILE
// names a file to write heap profiles to: at the start, at the end and at
// the largest live heap.
func coresBusy(created *atomic.Pointer[indexers.ElectrumIndex]) [4]float64 {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	var live, heap uint64
	var rss float64
	profile := os.Getenv("CATCHUP_HEAPPROFILE")
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	deadline := time.Now().Add(time.Hour)
	var cpu0 time.Duration
	var t0 time.Time
	for time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
		idx := created.Load()
		if idx == nil {
			continue
		}
		p := idx.Progress()
		if !p.Running && p.Finished.IsZero() {
			continue
		}
		if t0.IsZero() {
			cpu0, t0 = cpu(), time.Now()
			writeHeapProfile(profile, ".start")
		}
		if !p.Finished.IsZero() {
			// With the start's, the allocations of the catch-up.
			writeHeapProfile(profile, ".end")
			return [4]float64{(cpu() - cpu0).Seconds() / time.Since(t0).Seconds(), rss,
				float64(live) / (1 << 20), float64(heap) / (1 << 20)}
		}
		rss = max(rss, residentMiB())
		metrics.Read(samples)
		if l := samples[0].Value.Uint64(); l > live*21/20 && profile != "" {
			writeHeapProfile(profile, "")
		}
		live = max(live, samples[0].Value.Uint64())
		heap = max(heap, samples[1].Value.Uint64())
	}
	return [4]float64{}
}

// writeHeapProfile writes the heap profile to name+suffix unless name is
// empty.
func writeHeapProfile(name, suffix string) {
	if name == "" {
		return
	}
	if f, err := os.Create(name + suffix); err == nil {
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
}

// residentMiB returns the process's resident memory in MiB (Linux; 0
// elsewhere).
func residentMiB() float64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(st), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

func workersName(n int) string {
	if n == 1 {
		return "workers=1"
	}
	return "workers=GOMAXPROCS"
}

func medianMs(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// BenchmarkTxLookupDiskCost measures what answering "where is this txid"
// costs: the index's own txid rows against btcd's transaction index
// (--txindex), on the same chain. It reports key and value bytes per
// transaction of each.
func BenchmarkTxLookupDiskCost(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "chain")
	var idx *indexers.ElectrumIndex
	h, err := testchain.CreateBulk(dir, 11, 50000, testchain.ElectrumIndex(b.TempDir(), indexers.Options{}, &idx,
		func(db database.DB, _ *chaincfg.Params) []btcdindexers.Indexer {
			return []btcdindexers.Indexer{btcdindexers.NewTxIndex(db)}
		}))
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	total := float64(h.Chain.BestSnapshot().TotalTxns)
	own, txindex := 0, 0
	for k, v := range indexRows(b, idx) {
		if k[2] == 'i' {
			own += len(k) + len(v)
		}
	}
	err = h.DB.View(func(dbTx database.Tx) error {
		for _, name := range []string{"txbyhashidx", "idbyhashidx", "hashbyididx"} {
			bucket := dbTx.Metadata().Bucket([]byte(name))
			if bucket == nil {
				b.Fatalf("btcd's transaction index has no bucket %s", name)
			}
			err := bucket.ForEach(func(k, v []byte) error {
				txindex += len(k) + len(v)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(own)/total, "own-bytes/tx")
	b.ReportMetric(float64(txindex)/total, "txindex-bytes/tx")
}

package indexers_test

import (
	"encoding/json"
	"errors"
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

// errRollback makes db.Update discard the benchmarked transaction.
var errRollback = errors.New("rollback")

// bigBlockTxs is the size of the benchmark block: about 3,000 transactions
// of about 2 inputs and 2.5 outputs each.
const bigBlockTxs = 3000

// bigBlockFixture is a chain with a big block at its tip, and an index
// database holding every block before it.
type bigBlockFixture struct {
	block   *btcutil.Block
	stxos   []blockchain.SpentTxOut
	db      database.DB
	dir     string // the index database's directory
	idx     *indexers.ElectrumIndex
	txCount uint64
}

func newBigBlockFixture(b *testing.B) *bigBlockFixture {
	b.Helper()
	dir := b.TempDir()
	h, err := testchain.Create(filepath.Join(dir, "chain"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	block, stxos, err := h.MineBigBlock(rngFor(1), bigBlockTxs)
	if err != nil {
		b.Fatal(err)
	}
	blocks, journals := chainBlocks(b, h)
	db, idx, dir := openIndexDBDir(b, h)
	var count uint64
	for i, blk := range blocks[:len(blocks)-1] {
		err := db.Update(func(dbTx database.Tx) error { return idx.ConnectBlock(dbTx, blk, journals[i]) })
		if err != nil {
			b.Fatal(err)
		}
		count += uint64(len(blk.Transactions()))
	}
	ins := 0
	for _, tx := range block.Transactions()[1:] {
		ins += len(tx.MsgTx().TxIn)
	}
	outs := 0
	for _, tx := range block.Transactions() {
		outs += len(tx.MsgTx().TxOut)
	}
	b.Logf("block: %d transactions, %d inputs, %d outputs", len(block.Transactions()), ins, outs)
	return &bigBlockFixture{block: block, stxos: stxos, db: db, dir: dir, idx: idx, txCount: count}
}

// BenchmarkConnectBlock times ConnectBlock of a ~3,000-transaction block
// inside a database transaction that is then rolled back, with one worker
// and with GOMAXPROCS workers. It reports the median in ms.
func BenchmarkConnectBlock(b *testing.B) {
	f := newBigBlockFixture(b)
	parent := f.block.MsgBlock().Header.PrevBlock
	for _, procs := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(workersName(procs), func(b *testing.B) {
			old := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(old)
			times := make([]time.Duration, 0, b.N)
			writes := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// btcutil caches txids; a fresh block makes every
				// iteration hash them as the chain's first sight would.
				blk := btcutil.NewBlock(f.block.MsgBlock())
				blk.SetHeight(f.block.Height())
				f.idx.SetMemTip(parent, f.block.Height()-1, f.txCount)
				_ = f.db.Update(func(dbTx database.Tx) error {
					ct := &countingTx{Tx: dbTx}
					start := time.Now()
					if err := f.idx.ConnectBlock(ct, blk, f.stxos); err != nil {
						b.Fatal(err)
					}
					times = append(times, time.Since(start))
					writes = ct.writes
					return errRollback
				})
			}
			b.StopTimer()
			b.ReportMetric(medianMs(times), "median-ms")
			b.ReportMetric(float64(writes)/float64(len(f.block.Transactions())), "writes/tx")
		})
	}
}

// BenchmarkConnectBlockCommit times ConnectBlock plus the commit of its
// transaction, which merges the block's rows into ffldb's write cache. Each
// iteration starts from a fresh copy of the index database, so the cache is
// empty: the commit cost when the cache has just been flushed.
func BenchmarkConnectBlockCommit(b *testing.B) {
	f := newBigBlockFixture(b)
	dir := filepath.Join(b.TempDir(), "closed")
	if err := f.db.Close(); err != nil {
		b.Fatal(err)
	}
	if err := copyTree(f.dir, dir); err != nil {
		b.Fatal(err)
	}
	parent := f.block.MsgBlock().Header.PrevBlock
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		iter := filepath.Join(b.TempDir(), "db")
		if err := copyTree(dir, iter); err != nil {
			b.Fatal(err)
		}
		db, err := database.Open("ffldb", iter, testchain.RegtestParams().Net)
		if err != nil {
			b.Fatal(err)
		}
		idx := indexers.NewElectrumIndex(db, testchain.RegtestParams())
		idx.SetMemTip(parent, f.block.Height()-1, f.txCount)
		blk := btcutil.NewBlock(f.block.MsgBlock())
		blk.SetHeight(f.block.Height())
		b.StartTimer()
		start := time.Now()
		err = db.Update(func(dbTx database.Tx) error { return idx.ConnectBlock(dbTx, blk, f.stxos) })
		times = append(times, time.Since(start))
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(medianMs(times), "median-ms")
}

// BenchmarkCatchUp builds the index of an existing chain of at least
// CATCHUP_TXS transactions (default 200,000) through the node's index
// manager and reports transactions per second, database writes per
// transaction and index bytes per transaction.
func BenchmarkCatchUp(b *testing.B) {
	minTxs := 200000
	if v := os.Getenv("CATCHUP_TXS"); v != "" {
		var n int
		for _, c := range v {
			n = n*10 + int(c-'0')
		}
		minTxs = n
	}
	// CATCHUP_CHAIN keeps the generated chain in a directory across runs
	// (generating 400,000 transactions takes longer than indexing them).
	// CATCHUP_MEM is the catch-up's memory budget in MiB (default: the
	// index's default).
	memMiB, _ := strconv.Atoi(os.Getenv("CATCHUP_MEM"))
	if gen := os.Getenv("CATCHUP_GENCHAIN"); gen != "" {
		// A chain written by cmd/chaingen: mainnet's script reuse and
		// block sizes instead of the harness's pool of 50,000 scripts.
		benchCatchUpGenerated(b, gen, memMiB)
		return
	}
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
	if err := h.Close(); err != nil {
		b.Fatal(err)
	}
	if int(total) < minTxs {
		b.Fatalf("chain in %s holds %d transactions, want at least %d", dir, total, minTxs)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		copyDir := filepath.Join(b.TempDir(), "copy")
		if err := copyTree(dir, copyDir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var idx *indexers.ElectrumIndex
		var created atomic.Pointer[indexers.ElectrumIndex]
		busy := make(chan [4]float64, 1)
		go func() { busy <- coresBusy(&created) }()
		start := time.Now()
		h, err := testchain.OpenWith(copyDir, testchain.Options{
			Pool: testchain.BulkScriptPool(),
			Index: func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
				idx = indexers.NewElectrumIndex(db, params)
				idx.SetCatchUpMemory(memMiB)
				created.Store(idx)
				return indexers.NewManager(db, idx)
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		m := <-busy
		b.ReportMetric(m[0], "cores-busy")
		b.ReportMetric(m[1], "peak-MiB")
		b.ReportMetric(m[2], "live-MiB")
		b.ReportMetric(m[3], "heap-MiB")
		b.StopTimer()
		rows := indexRows(b, h.DB)
		bytes := 0
		for k, v := range rows {
			bytes += len(k) + len(v)
		}
		h.Close()
		// The catch-up itself; opening the chain around it (and the test
		// harness rebuilding its wallet) is reported apart.
		b.ReportMetric(float64(idx.Progress().Txs)/idx.Progress().Duration().Seconds(), "tx/s")
		b.ReportMetric(float64(idx.Progress().MemoryLimit)/(1<<20), "limit-MiB")
		b.ReportMetric(elapsed.Seconds(), "open-s")
		b.ReportMetric(float64(len(rows))/float64(total), "rows/tx")
		b.ReportMetric(float64(idx.Progress().Writes)/float64(total), "writes/tx")
		b.ReportMetric(float64(bytes)/float64(total), "bytes/tx")
		b.StartTimer()
	}
}

// coresBusy returns, for the catch-up of the index created stores: the
// process's CPU time during it divided by its duration (how many cores it
// kept busy on average), the process's peak resident memory in MiB while it
// ran (sampled every 2 ms; Linux, 0 elsewhere), and the peaks in MiB of the
// Go heap's live bytes (as the last collection marked them) and of its
// objects (live and not yet collected) while it ran.
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
			// CATCHUP_HEAPPROFILE keeps the heap profile of the
			// largest live heap seen.
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

func rngFor(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// copyTree copies the directory src to dst.
var copyTree = indexers.CopyTree

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
// costs on disk: the index's own txid rows against btcd's transaction index
// (--txindex), on the same chain. It reports key and value bytes per
// transaction of each.
func BenchmarkTxLookupDiskCost(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "chain")
	h, err := testchain.CreateBulk(dir, 11, 50000, func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		return indexers.NewManager(db, indexers.NewElectrumIndex(db, params), btcdindexers.NewTxIndex(db))
	})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	total := float64(h.Chain.BestSnapshot().TotalTxns)
	var own, txindex int
	err = h.DB.View(func(dbTx database.Tx) error {
		for k, v := range indexRows(b, h.DB) {
			if k[2] == 'i' {
				own += len(k) + len(v)
			}
		}
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

// benchCatchUpGenerated is BenchmarkCatchUp on a copy of the database of a
// chain generated by cmd/chaingen in dir (CATCHUP_GENCHAIN), opened with
// btcd's blockchain package and the node's index manager.
func benchCatchUpGenerated(b *testing.B, dir string, memMiB int) {
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
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		copyDir := filepath.Join(b.TempDir(), "db")
		if err := copyTree(chaingen.DBPath(dir, sum.Network), copyDir); err != nil {
			b.Fatal(err)
		}
		db, err := database.Open("ffldb", copyDir, params.Net)
		if err != nil {
			b.Fatal(err)
		}
		idx := indexers.NewElectrumIndex(db, params)
		idx.SetCatchUpMemory(memMiB)
		var created atomic.Pointer[indexers.ElectrumIndex]
		created.Store(idx)
		b.StartTimer()
		busy := make(chan [4]float64, 1)
		go func() { busy <- coresBusy(&created) }()
		chain, err := blockchain.New(&blockchain.Config{DB: db, ChainParams: params,
			TimeSource: blockchain.NewMedianTime(), IndexManager: indexers.NewManager(db, idx)})
		if err != nil {
			b.Fatal(err)
		}
		m := <-busy
		b.StopTimer()
		total := chain.BestSnapshot().TotalTxns
		rows := indexRows(b, db)
		bytes := 0
		for k, v := range rows {
			bytes += len(k) + len(v)
		}
		db.Close()
		p := idx.Progress()
		b.ReportMetric(m[0], "cores-busy")
		b.ReportMetric(m[1], "peak-MiB")
		b.ReportMetric(float64(p.Txs)/p.Duration().Seconds(), "tx/s")
		b.ReportMetric(float64(len(rows))/float64(total), "rows/tx")
		b.ReportMetric(float64(p.Writes)/float64(total), "writes/tx")
		b.ReportMetric(float64(bytes)/float64(total), "bytes/tx")
		b.StartTimer()
	}
}

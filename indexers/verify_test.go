package indexers_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// verifyIndexOK verifies the index of h and fails the test on any
// difference.
func verifyIndexOK(t testing.TB, h *testchain.Harness, idx *indexers.ElectrumIndex, step string) *indexers.VerifyResult {
	t.Helper()
	res, err := indexers.Verify(context.Background(), h.DB, h.Chain, indexers.VerifyOptions{Index: idx})
	if err != nil {
		t.Fatalf("%s: verify: %v", step, err)
	}
	if !res.OK() {
		for _, d := range res.Differences {
			t.Errorf("%s: %v", step, d)
		}
		t.Fatalf("%s: verify found %d differences in %d partitions", step, len(res.Differences), res.MismatchedParts)
	}
	return res
}

// storedRows counts the index's rows, without its bookkeeping entries
// (schema version, size, tip) and undo records.
func storedRows(t testing.TB, idx *indexers.ElectrumIndex) int64 {
	n := int64(0)
	for k := range indexRows(t, idx) {
		if k != string(indexers.VersionKey) && k != string(indexers.StatsKey) && k != string(indexers.TipKey) &&
			!bytes.HasPrefix([]byte(k), eqUndoPrefix) {
			n++
		}
	}
	return n
}

// vfRandomChain builds a chain without an index: mature coins, then blocks
// with same-block spends, repeated scripts, OP_RETURN and non-standard
// outputs.
func vfRandomChain(t testing.TB, seed int64, blocks int) *testchain.Harness {
	t.Helper()
	h := testchain.New(t, nil)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	spec := testchain.DefaultSpec()
	spec.Txs = 20
	for i := 0; i < blocks; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// An index written at the tip through blocks, competing branches (undone
// from undo records and from the blocks) and invalidations, and one
// written by the catch-up in many batches, verify clean, every stored row
// counted.
func TestVerifyCleanIndex(t *testing.T) {
	t.Run("at the tip with reorgs", func(t *testing.T) {
		var idx *indexers.ElectrumIndex
		factory := propIndex(t, &idx)
		h := testchain.New(t, factory)
		if err := h.MineMature(); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(21))
		spec := testchain.DefaultSpec()
		spec.Txs = 20
		for i := 0; i < 12; i++ {
			if _, err := h.Mine(rng, spec); err != nil {
				t.Fatal(err)
			}
		}
		// A restart leaves undo records for the two newest blocks: the
		// third is undone from the block.
		if err := h.Reopen(factory); err != nil {
			t.Fatal(err)
		}
		if _, err := h.ReorgReplay(rng, 3, spec); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			if _, err := h.Mine(rng, spec); err != nil {
				t.Fatal(err)
			}
		}
		_, height := h.Tip()
		hash, _ := h.Chain.BlockHashByHeight(height - 1)
		if err := h.InvalidateBlock(*hash); err != nil {
			t.Fatal(err)
		}
		var phases []string
		res, err := indexers.Verify(context.Background(), h.DB, h.Chain, indexers.VerifyOptions{
			Index: idx,
			Progress: func(p indexers.VerifyProgress) {
				if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
					phases = append(phases, p.Phase)
				}
			}})
		if err != nil || !res.OK() {
			t.Fatalf("verify: %v %+v", err, res)
		}
		hash2, height := h.Tip()
		if res.Tip.Hash != hash2 || res.Tip.Height != height || res.Blocks != height+1 {
			t.Fatalf("verified tip %d %v over %d blocks, chain tip %d %v", res.Tip.Height, res.Tip.Hash,
				res.Blocks, height, hash2)
		}
		rows, _, err := idx.Size()
		if err != nil {
			t.Fatal(err)
		}
		if n := storedRows(t, idx); res.Rows != n || res.ExpectedRows != n || rows != n || n == 0 {
			t.Fatalf("verify compared %d rows (expected %d), index holds %d, its size says %d",
				res.Rows, res.ExpectedRows, n, rows)
		}
		if recs, _, err := idx.UndoSize(); err != nil || recs == 0 {
			t.Fatalf("%d undo records (%v): the test verified no index with undo records", recs, err)
		}
		want := []string{indexers.VerifyPhaseBlocks, indexers.VerifyPhaseRows, indexers.VerifyPhaseDone}
		if len(phases) != len(want) || phases[0] != want[0] || phases[1] != want[1] || phases[2] != want[2] {
			t.Fatalf("phases %v, want %v", phases, want)
		}
	})
	t.Run("catch-up in batches", func(t *testing.T) {
		h := vfRandomChain(t, 22, 30)
		var idx *indexers.ElectrumIndex
		err := h.Reopen(testchain.ElectrumIndex(t.TempDir(), indexers.Options{BatchBytes: 16 << 10}, &idx, nil))
		if err != nil {
			t.Fatal(err)
		}
		if p := idx.Progress(); p.Batches < 5 {
			t.Fatalf("the catch-up committed %d batches, want several", p.Batches)
		}
		verifyIndexOK(t, h, idx, "after catch-up")
	})
	t.Run("empty chain", func(t *testing.T) {
		var idx *indexers.ElectrumIndex
		h := testchain.New(t, propIndex(t, &idx))
		res := verifyIndexOK(t, h, idx, "genesis only")
		if res.Tip.Height != 0 || res.Rows == 0 {
			t.Fatalf("verified tip %d, %d rows", res.Tip.Height, res.Rows)
		}
	})
}

// rowHeight returns the height a row of the index belongs to.
func rowHeight(k []byte) int32 {
	switch k[2] {
	case 'h':
		return int32(binary.BigEndian.Uint32(k[3+11:]))
	case 'i':
		return int32(binary.BigEndian.Uint32(k[3+8:]))
	case 'u', 't', 'l', 'b':
		off := 3
		if k[2] == 'u' {
			off += 11
		}
		return int32(binary.BigEndian.Uint32(k[off:]))
	}
	return -1
}

// A row put, deleted or changed in a verified index's store is reported with
// its table, kind, height and (for tables keyed by one) script hash; undone,
// the index verifies clean again.
func TestVerifyReportsCorruptRows(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, propIndex(t, &idx))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(23))
	spec := testchain.DefaultSpec()
	spec.Txs = 20
	for i := 0; i < 10; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	verifyIndexOK(t, h, idx, "before")
	rows := indexRows(t, idx)
	// pick returns a row of a table from a block above the mature coins.
	pick := func(tag byte) ([]byte, []byte) {
		for k, v := range rows {
			if len(k) > 3 && k[2] == tag && rowHeight([]byte(k)) > 101 {
				return []byte(k), v
			}
		}
		t.Fatalf("no row of table %c", tag)
		return nil, nil
	}
	meta := func(key []byte, mutate func([]byte) []byte) func() ([]byte, []byte, bool) {
		return func() ([]byte, []byte, bool) {
			return key, mutate(bytes.Clone(rows[string(key)])), false
		}
	}

	type change struct {
		name   string
		table  string
		kind   string
		hashX  bool
		mutate func() (key, val []byte, del bool) // the row to put or delete
	}
	cases := []change{
		{name: "history row deleted", table: "history", kind: "missing", hashX: true,
			mutate: func() ([]byte, []byte, bool) { k, _ := pick('h'); return k, nil, true }},
		{name: "history row added", table: "history", kind: "extra", hashX: true,
			mutate: func() ([]byte, []byte, bool) {
				// The same script in another block, one where it
				// has no row (else the row is changed, not added).
				for k := range rows {
					if len(k) > 3 && k[2] == 'h' && rowHeight([]byte(k)) > 101 {
						other := []byte(k)
						other[len(other)-1] ^= 0x40
						if _, ok := rows[string(other)]; !ok {
							return other, []byte{0, 1}, false
						}
					}
				}
				t.Fatal("every history row has a neighbour in the other block")
				return nil, nil, false
			}},
		{name: "history row gains a position", table: "history", kind: "value", hashX: true,
			mutate: func() ([]byte, []byte, bool) {
				k, v := pick('h')
				return k, append(bytes.Clone(v), 0xff, 0xff), false
			}},
		{name: "unspent amount changed", table: "unspent", kind: "value", hashX: true,
			mutate: func() ([]byte, []byte, bool) {
				k, v := pick('u')
				v = bytes.Clone(v)
				v[7]++
				return k, v, false
			}},
		{name: "unspent position changed", table: "unspent", kind: "value", hashX: true,
			mutate: func() ([]byte, []byte, bool) {
				k, v := pick('u')
				v = bytes.Clone(v)
				v[9] ^= 0x20
				return k, v, false
			}},
		{name: "unspent row deleted", table: "unspent", kind: "missing", hashX: true,
			mutate: func() ([]byte, []byte, bool) { k, _ := pick('u'); return k, nil, true }},
		{name: "txid row deleted", table: "txid", kind: "missing",
			mutate: func() ([]byte, []byte, bool) { k, _ := pick('i'); return k, nil, true }},
		{name: "transaction chunk changed", table: "tx", kind: "value",
			mutate: func() ([]byte, []byte, bool) {
				// A txid no unspent row names: their positions are
				// checked against the chunks too.
				named := func(txid []byte) bool {
					for k := range rows {
						if len(k) == 54 && k[2] == 'u' && k[18:50] == string(txid) {
							return true
						}
					}
					return false
				}
				for k, v := range rows {
					if len(k) > 3 && k[2] == 't' && rowHeight([]byte(k)) > 101 {
						for i := 0; i+32 <= len(v); i += 32 {
							if !named([]byte(v[i : i+32])) {
								v = bytes.Clone(v)
								v[i+5] ^= 1
								return []byte(k), v, false
							}
						}
					}
				}
				t.Fatal("every transaction has an unspent output")
				return nil, nil, false
			}},
		{name: "place chunk changed", table: "place", kind: "value",
			mutate: func() ([]byte, []byte, bool) {
				k, v := pick('l')
				v = bytes.Clone(v)
				v[2] ^= 1 // the first transaction's offset in its block
				return k, v, false
			}},
		{name: "place chunk deleted", table: "place", kind: "missing",
			mutate: func() ([]byte, []byte, bool) { k, _ := pick('l'); return k, nil, true }},
		{name: "block row deleted", table: "block", kind: "missing",
			mutate: func() ([]byte, []byte, bool) { k, _ := pick('b'); return k, nil, true }},
		{name: "index tip malformed", table: "meta", kind: "malformed",
			mutate: meta(indexers.TipKey, func(v []byte) []byte { return v[:len(v)-1] })},
		{name: "schema version changed", table: "meta", kind: "value",
			mutate: meta(indexers.VersionKey, func(v []byte) []byte { v[3]++; return v })},
		{name: "index size changed", table: "meta", kind: "value",
			mutate: meta(indexers.StatsKey, func(v []byte) []byte { v[7]++; return v })},
		{name: "row of no table", table: "meta", kind: "malformed",
			mutate: func() ([]byte, []byte, bool) { return []byte("Exz-stray"), []byte{1}, false }},
	}
	store := idx.Store()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key, val, del := c.mutate()
			old, had := rows[string(key)]
			write := func(put bool, v []byte) {
				var err error
				if put {
					err = store.Put(key, v, nil)
				} else {
					err = store.Delete(key, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			write(!del, val)
			undone := false
			t.Cleanup(func() {
				if !undone {
					write(had, old)
				}
			})
			res, err := indexers.Verify(context.Background(), h.DB, h.Chain, indexers.VerifyOptions{Index: idx})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() || len(res.Differences) == 0 {
				t.Fatalf("corrupt index verified clean: %+v", res)
			}
			var found *indexers.Difference
			for i := range res.Differences {
				d := &res.Differences[i]
				t.Logf("reported: %v", d)
				if bytes.Equal(d.Key, key) {
					found = d
				}
			}
			if found == nil {
				t.Fatalf("key %x not reported", key)
			}
			if found.Table != c.table || found.Kind != c.kind {
				t.Fatalf("reported table %s kind %s, want %s %s", found.Table, found.Kind, c.table, c.kind)
			}
			if c.table != "meta" && found.Height != rowHeight(key) {
				t.Fatalf("reported height %d, want %d", found.Height, rowHeight(key))
			}
			if c.hashX && found.HashX != hex.EncodeToString(key[3:14]) {
				t.Fatalf("reported script hash %s, want %x", found.HashX, key[3:14])
			}
			// Every difference is the one change: no stray reports.
			for _, d := range res.Differences {
				if !bytes.Equal(d.Key, key) && !bytes.Equal(d.Key, indexers.StatsKey) {
					t.Fatalf("spurious difference %v", d)
				}
			}
			write(had, old)
			undone = true
			verifyIndexOK(t, h, idx, "undone")
		})
	}
}

// A verification runs from one snapshot of the store while the chain
// connects blocks and reorganizes underneath it, the writer undoing blocks
// from undo records and from the blocks: every run verifies clean at the
// tip it saw.
func TestVerifyWhileChainMoves(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, propIndex(t, &idx))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(24))
	spec := testchain.DefaultSpec()
	spec.Txs = 20
	for i := 0; i < 8; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var (
		wg   sync.WaitGroup
		runs int
		tips = make(map[indexers.Tip]bool)
		fail error
		bad  *indexers.VerifyResult
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := indexers.Verify(context.Background(), h.DB, h.Chain, indexers.VerifyOptions{Index: idx})
			if err != nil {
				fail = err
				return
			}
			if !res.OK() {
				bad = res
				return
			}
			runs++
			tips[res.Tip] = true
		}
	}()
	for i := 0; i < 12; i++ {
		var err error
		if i%3 == 2 {
			_, err = h.ReorgReplay(rng, 1+rng.Intn(4), spec)
		} else {
			_, err = h.Mine(rng, spec)
		}
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if fail != nil {
		t.Fatal(fail)
	}
	if bad != nil {
		t.Fatalf("verification during chain moves failed at tip %d %v: %+v", bad.Tip.Height, bad.Tip.Hash, bad.Differences)
	}
	t.Logf("%d verifications at %d tips while the chain moved", runs, len(tips))
	if runs == 0 {
		t.Fatal("no verification completed")
	}
	verifyIndexOK(t, h, idx, "after")
}

// BenchmarkVerify verifies the index of a bulk chain of VERIFY_TXS
// transactions (default 200,000; VERIFY_CHAIN keeps the chain, with its
// index, in a directory across runs) and reports the rows compared per
// second and the peak of the Go heap during the verification over what it
// held before.
func BenchmarkVerify(b *testing.B) {
	minTxs := 200000
	if v := os.Getenv("VERIFY_TXS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		minTxs = n
	}
	dir := os.Getenv("VERIFY_CHAIN")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "chain")
	}
	var idx *indexers.ElectrumIndex
	index := testchain.ElectrumIndex(eqStoreDir(dir), indexers.Options{}, &idx, nil)
	var h *testchain.Harness
	var err error
	if _, statErr := os.Stat(dir); statErr == nil {
		h, err = testchain.OpenWith(dir, testchain.Options{Pool: testchain.BulkScriptPool(), Index: index})
	} else {
		// Built without the index, which the reopening catches up.
		if h, err = testchain.CreateBulk(dir, 7, minTxs, nil); err == nil {
			err = h.ReopenWith(testchain.Options{Pool: testchain.BulkScriptPool(), Index: index})
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		base, baseLive := heapInUse(), heapLive()
		var peak, peakLive atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if v := heapInUse(); v > peak.Load() {
					peak.Store(v)
				}
				if v := heapLive(); v > peakLive.Load() {
					peakLive.Store(v)
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		res, err := indexers.Verify(context.Background(), h.DB, h.Chain, indexers.VerifyOptions{Index: idx})
		close(stop)
		<-done
		if err != nil || !res.OK() {
			b.Fatalf("verify: %v %+v", err, res)
		}
		b.ReportMetric(float64(res.Txs), "txs")
		b.ReportMetric(float64(res.Rows), "rows")
		b.ReportMetric(float64(res.Rows)/res.Duration.Seconds(), "rows/s")
		b.ReportMetric(float64(peak.Load()-min(base, peak.Load()))/(1<<20), "peakheap-MiB")
		b.ReportMetric(float64(peakLive.Load()-min(baseLive, peakLive.Load()))/(1<<20), "peaklive-MiB")
	}
}

// heapInUse is the Go heap's bytes of objects, live or not yet collected.
func heapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapLive is the Go heap's live bytes as the last collection marked them.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

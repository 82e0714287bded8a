package indexers_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// countingTx is a database.Tx that counts every read made through it.
type countingTx struct {
	database.Tx
	reads  int
	writes int
}

func (c *countingTx) Metadata() database.Bucket { return &countingBucket{c.Tx.Metadata(), c} }
func (c *countingTx) FetchBlock(h *chainhash.Hash) ([]byte, error) {
	c.reads++
	return c.Tx.FetchBlock(h)
}
func (c *countingTx) FetchBlocks(h []chainhash.Hash) ([][]byte, error) {
	c.reads++
	return c.Tx.FetchBlocks(h)
}
func (c *countingTx) FetchBlockHeader(h *chainhash.Hash) ([]byte, error) {
	c.reads++
	return c.Tx.FetchBlockHeader(h)
}
func (c *countingTx) FetchBlockHeaders(h []chainhash.Hash) ([][]byte, error) {
	c.reads++
	return c.Tx.FetchBlockHeaders(h)
}
func (c *countingTx) FetchBlockRegion(r *database.BlockRegion) ([]byte, error) {
	c.reads++
	return c.Tx.FetchBlockRegion(r)
}
func (c *countingTx) FetchBlockRegions(r []database.BlockRegion) ([][]byte, error) {
	c.reads++
	return c.Tx.FetchBlockRegions(r)
}
func (c *countingTx) HasBlock(h *chainhash.Hash) (bool, error) {
	c.reads++
	return c.Tx.HasBlock(h)
}
func (c *countingTx) HasBlocks(h []chainhash.Hash) ([]bool, error) {
	c.reads++
	return c.Tx.HasBlocks(h)
}

// countingBucket counts the reads of a bucket and of the buckets and
// cursors reached through it.
type countingBucket struct {
	inner
	tx *countingTx
}

// inner names the wrapped bucket, whose Bucket method countingBucket
// overrides.
type inner = database.Bucket

func (b *countingBucket) Get(k []byte) []byte   { b.tx.reads++; return b.inner.Get(k) }
func (b *countingBucket) Put(k, v []byte) error { b.tx.writes++; return b.inner.Put(k, v) }
func (b *countingBucket) Delete(k []byte) error { b.tx.writes++; return b.inner.Delete(k) }
func (b *countingBucket) Bucket(k []byte) database.Bucket {
	b.tx.reads++
	inner := b.inner.Bucket(k)
	if inner == nil {
		return nil
	}
	return &countingBucket{inner, b.tx}
}
func (b *countingBucket) Cursor() database.Cursor { b.tx.reads++; return b.inner.Cursor() }
func (b *countingBucket) ForEach(f func(k, v []byte) error) error {
	b.tx.reads++
	return b.inner.ForEach(f)
}
func (b *countingBucket) ForEachBucket(f func(k []byte) error) error {
	b.tx.reads++
	return b.inner.ForEachBucket(f)
}

// chainBlocks returns every main-chain block of h with btcd's spent outputs.
func chainBlocks(t testing.TB, h *testchain.Harness) ([]*btcutil.Block, [][]blockchain.SpentTxOut) {
	t.Helper()
	_, tip := h.Tip()
	var (
		blocks []*btcutil.Block
		stxos  [][]blockchain.SpentTxOut
	)
	for height := int32(0); height <= tip; height++ {
		b, err := h.Chain.BlockByHeight(height)
		if err != nil {
			t.Fatal(err)
		}
		var s []blockchain.SpentTxOut
		if height > 0 {
			if s, err = h.Chain.FetchSpendJournal(b); err != nil {
				t.Fatal(err)
			}
		}
		blocks = append(blocks, b)
		stxos = append(stxos, s)
	}
	return blocks, stxos
}

// randomChain builds a chain without an index: mature coins, then blocks
// with same-block spends, repeated scripts, OP_RETURN and non-standard
// outputs.
func randomChain(t testing.TB, seed int64, blocks int) *testchain.Harness {
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

// openIndexDB returns a fresh ffldb database holding an empty Electrum index.
func openIndexDB(t testing.TB, h *testchain.Harness) (database.DB, *indexers.ElectrumIndex) {
	t.Helper()
	db, idx, _ := openIndexDBDir(t, h)
	return db, idx
}

// openIndexDBDir is openIndexDB that also returns the database's directory.
func openIndexDBDir(t testing.TB, h *testchain.Harness) (database.DB, *indexers.ElectrumIndex, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := database.Create("ffldb", dir, h.Params.Net)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	idx := indexers.NewElectrumIndex(db, h.Params)
	if err := db.Update(idx.Create); err != nil {
		t.Fatal(err)
	}
	return db, idx, dir
}

// indexRows returns every row of the index.
func indexRows(t testing.TB, db database.DB) map[string][]byte {
	t.Helper()
	rows := make(map[string][]byte)
	err := db.View(func(dbTx database.Tx) error {
		c := dbTx.Metadata().Cursor()
		for ok := c.Seek(indexers.RowPrefix); ok; ok = c.Next() {
			if !bytes.HasPrefix(c.Key(), indexers.RowPrefix) {
				break
			}
			rows[string(c.Key())] = append([]byte(nil), c.Value()...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// ConnectBlock must not read the database: every key comes from the block
// and btcd's spent outputs. DisconnectBlock, replayed in reverse, must leave
// nothing behind but the schema version.
func TestConnectBlockReadsNothingAndDisconnectUndoes(t *testing.T) {
	h := randomChain(t, 1, 25)
	blocks, stxos := chainBlocks(t, h)
	db, idx := openIndexDB(t, h)

	txs := 0
	for i, b := range blocks {
		err := db.Update(func(dbTx database.Tx) error {
			ct := &countingTx{Tx: dbTx}
			if err := idx.ConnectBlock(ct, b, stxos[i]); err != nil {
				return err
			}
			if ct.reads != 0 {
				t.Errorf("ConnectBlock of block %d made %d database reads", b.Height(), ct.reads)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		txs += len(b.Transactions())
	}
	// The counter itself counts.
	_ = db.View(func(dbTx database.Tx) error {
		ct := &countingTx{Tx: dbTx}
		ct.Metadata().Get(indexers.VersionKey)
		if ct.reads != 1 {
			t.Errorf("counting wrapper saw %d reads, want 1", ct.reads)
		}
		return nil
	})

	rows := indexRows(t, db)
	t.Logf("%d blocks, %d transactions, %d rows", len(blocks), txs, len(rows))
	checkSize(t, db, idx)
	if len(rows) < 2*txs {
		t.Fatalf("only %d rows for %d transactions", len(rows), txs)
	}

	for i := len(blocks) - 1; i >= 0; i-- {
		err := db.Update(func(dbTx database.Tx) error {
			return idx.DisconnectBlock(dbTx, blocks[i], stxos[i])
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rows = indexRows(t, db)
	// What remains: the schema version, the size, the reorg epoch, which
	// every disconnect changes, and the tip's copy.
	if len(rows) != 4 || rows[string(indexers.VersionKey)] == nil || rows[string(indexers.StatsKey)] == nil ||
		len(rows[string(indexers.ReorgKey)]) != 8 || len(rows[string(indexers.TipKey)]) != 36 {
		t.Fatalf("after disconnecting every block %d rows remain", len(rows))
	}
	if n, b, err := idx.Size(); err != nil || n != 0 || b != 0 {
		t.Fatalf("empty index has size %d rows, %d bytes (%v)", n, b, err)
	}
}

// Catching up an existing chain writes exactly the rows the block path
// writes block by block.
func TestCatchUpMatchesBlockPath(t *testing.T) {
	t.Run("one batch", func(t *testing.T) { testCatchUpMatchesBlockPath(t, 0) })
	// Batches of a few blocks each: merged and direct batches alternate and
	// outputs are funded in one batch and spent in a later one.
	t.Run("many batches", func(t *testing.T) { testCatchUpMatchesBlockPath(t, 16<<10) })
}

func testCatchUpMatchesBlockPath(t *testing.T, batch int) {
	h := randomChain(t, 2, 30)
	blocks, stxos := chainBlocks(t, h)
	db, idx := openIndexDB(t, h)
	for i, b := range blocks {
		err := db.Update(func(dbTx database.Tx) error { return idx.ConnectBlock(dbTx, b, stxos[i]) })
		if err != nil {
			t.Fatal(err)
		}
	}
	want := indexRows(t, db)

	var live *indexers.ElectrumIndex
	err := h.Reopen(func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		live = indexers.NewElectrumIndex(db, params)
		live.SetCatchUpBatch(batch)
		return indexers.NewManager(db, live)
	})
	if err != nil {
		t.Fatal(err)
	}
	got := indexRows(t, h.DB)
	if len(got) != len(want) {
		t.Fatalf("catch-up wrote %d rows, block path %d", len(got), len(want))
	}
	for k, v := range want {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("row %x: catch-up %x, block path %x", k, got[k], v)
		}
	}
	checkSize(t, h.DB, live)
	if n := live.Progress().Batches; batch > 0 && n < 6 {
		t.Fatalf("catch-up committed %d batches, want many", n)
	}
	tip, err := live.Tip()
	if err != nil {
		t.Fatal(err)
	}
	if hash, height := h.Tip(); tip.Hash != hash || tip.Height != height {
		t.Fatalf("index tip %v/%d, chain tip %v/%d", tip.Hash, tip.Height, hash, height)
	}
}

// Progress reports committed work only: sampled at any moment of a catch-up
// (and right after each commit, before Progress learns of it), its height
// never exceeds the index tip a reader of the database sees, and its
// transaction count never exceeds the transactions up to that tip.
func TestCatchUpProgressIsCommitted(t *testing.T) {
	h := randomChain(t, 3, 30)
	var (
		live    *indexers.ElectrumIndex
		stop    = make(chan struct{})
		sampled = make(chan [2]int, 1)
		fail    atomic.Pointer[string]
	)
	check := func() bool {
		p := live.Progress()
		tip, err := live.Tip()
		var msg string
		switch {
		case err != nil:
			msg = err.Error()
		case p.Started.IsZero():
			// No catch-up yet: nothing to report.
		case p.Height > tip.Height:
			msg = fmt.Sprintf("progress height %d, committed index tip %d", p.Height, tip.Height)
		case p.Assembled < p.Height:
			msg = fmt.Sprintf("assembled %d below committed %d", p.Assembled, p.Height)
		case p.Txs > p.TargetTxs:
			msg = fmt.Sprintf("%d of %d transactions", p.Txs, p.TargetTxs)
		case p.Rate < 0 || p.ETA < 0:
			msg = fmt.Sprintf("rate %v, ETA %v", p.Rate, p.ETA)
		}
		if msg != "" {
			fail.CompareAndSwap(nil, &msg)
		}
		return p.Running && p.Height < p.Target
	}
	commits := 0
	err := h.Reopen(func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		live = indexers.NewElectrumIndex(db, params)
		live.SetCatchUpBatch(16 << 10)
		live.SetAfterCatchUpCommit(func() {
			commits++
			check()
		})
		go func() {
			n, mid := 0, 0
			for {
				select {
				case <-stop:
					sampled <- [2]int{n, mid}
					return
				default:
				}
				if check() {
					mid++
				}
				n++
			}
		}()
		return indexers.NewManager(db, live)
	})
	close(stop)
	s := <-sampled
	if err != nil {
		t.Fatal(err)
	}
	if msg := fail.Load(); msg != nil {
		t.Fatal(*msg)
	}
	p := live.Progress()
	t.Logf("%d commits, %d samples, %d of them in the middle of the catch-up", commits, s[0], s[1])
	if commits < 6 || s[1] == 0 {
		t.Fatalf("%d commits and %d samples in the middle: want many commits, seen before the end", commits, s[1])
	}
	if p.Running || p.Height != p.Target || p.Assembled != p.Target || p.Txs != p.TargetTxs || p.ETA != 0 {
		t.Fatalf("finished catch-up: %+v", p)
	}
	if hash, height := h.Tip(); height != p.Target {
		t.Fatalf("catch-up target %d, chain tip %v/%d", p.Target, hash, height)
	}
}

// checkSize compares the index's own size count with its rows.
func checkSize(t testing.TB, db database.DB, idx *indexers.ElectrumIndex) {
	t.Helper()
	var n, b int64
	for k, v := range indexRows(t, db) {
		if k == string(indexers.VersionKey) || k == string(indexers.StatsKey) || k == string(indexers.ReorgKey) ||
			k == string(indexers.TipKey) {
			continue
		}
		n++
		b += int64(len(k) + len(v))
	}
	rows, bytes, err := idx.Size()
	if err != nil || rows != n || bytes != b {
		t.Fatalf("index size %d rows %d bytes (%v), counted %d rows %d bytes", rows, bytes, err, n, b)
	}
}

package indexers_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

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

// indexRows returns every row of the index's store.
func indexRows(t testing.TB, idx *indexers.ElectrumIndex) map[string][]byte {
	t.Helper()
	rows := make(map[string][]byte)
	it := idx.Store().NewIterator(nil, nil)
	defer it.Release()
	for it.Next() {
		rows[string(it.Key())] = bytes.Clone(it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// undoPrefix starts the keys of the undo records.
var undoPrefix = string(indexers.UndoKey(0)[:3])

// isUndoKey reports whether k is the key of an undo record.
func isUndoKey(k string) bool { return strings.HasPrefix(k, undoPrefix) }

// checkSize compares the index's own size count with its rows: every row
// but the schema version, the size, the tip and the undo records.
func checkSize(t testing.TB, idx *indexers.ElectrumIndex) {
	t.Helper()
	var n, b int64
	for k, v := range indexRows(t, idx) {
		if k == string(indexers.VersionKey) || k == string(indexers.StatsKey) || k == string(indexers.TipKey) ||
			isUndoKey(k) {
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

// buildBeside builds an index of h's main chain from scratch, in a store of
// its own, with a manager that is not the chain's (the chain must be idle),
// and returns it, closed, with its rows.
func buildBeside(t testing.TB, h *testchain.Harness, opts indexers.Options) (*indexers.ElectrumIndex, map[string][]byte) {
	t.Helper()
	opts.Dir = t.TempDir()
	idx, err := indexers.NewElectrumIndex(h.DB, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := indexers.NewManager(h.DB, idx)
	defer m.Close()
	if err := m.Init(h.Chain, nil); err != nil {
		t.Fatal(err)
	}
	tip, err := idx.Tip()
	if err != nil {
		t.Fatal(err)
	}
	if hash, height := h.Tip(); tip.Hash != hash || tip.Height != height {
		t.Fatalf("index built beside is at %v/%d, the chain at %v/%d", tip.Hash, tip.Height, hash, height)
	}
	checkSize(t, idx)
	// Every block it indexed was on disk when its writer started: none
	// has an undo record, whatever the window (undo.go).
	if n, _, err := idx.UndoSize(); err != nil || n != 0 {
		t.Fatalf("index built beside, undo window %d: %d undo records (%v), want none", opts.UndoBlocks, n, err)
	}
	return idx, indexRows(t, idx)
}

// compareRows fails unless got holds exactly the rows of want, undo records
// left out when skipUndo.
func compareRows(t testing.TB, what string, want, got map[string][]byte, skipUndo bool) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	bad, n := 0, 0
	for _, k := range keys {
		if skipUndo && isUndoKey(k) {
			continue
		}
		n++
		w, inW := want[k]
		g, inG := got[k]
		if inW == inG && bytes.Equal(w, g) {
			continue
		}
		if bad < 5 {
			switch {
			case !inG:
				t.Errorf("%s: row %x missing (want %x)", what, k, w)
			case !inW:
				t.Errorf("%s: extra row %x = %x", what, k, g)
			default:
				t.Errorf("%s: row %x = %x, want %x", what, k, g, w)
			}
		}
		bad++
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d rows differ", what, bad, n)
	}
}

// countingTx is a database.Tx that counts every call made through it, and
// through the buckets and cursors it hands out. It implements every method
// itself: a method added to database.Tx breaks the build instead of going
// uncounted.
type countingTx struct {
	tx database.Tx
	n  int
}

func (c *countingTx) Metadata() database.Bucket {
	c.n++
	return &countingBucket{c.tx.Metadata(), c}
}
func (c *countingTx) StoreBlock(b *btcutil.Block) error { c.n++; return c.tx.StoreBlock(b) }
func (c *countingTx) HasBlock(h *chainhash.Hash) (bool, error) {
	c.n++
	return c.tx.HasBlock(h)
}
func (c *countingTx) HasBlocks(h []chainhash.Hash) ([]bool, error) {
	c.n++
	return c.tx.HasBlocks(h)
}
func (c *countingTx) FetchBlockHeader(h *chainhash.Hash) ([]byte, error) {
	c.n++
	return c.tx.FetchBlockHeader(h)
}
func (c *countingTx) FetchBlockHeaders(h []chainhash.Hash) ([][]byte, error) {
	c.n++
	return c.tx.FetchBlockHeaders(h)
}
func (c *countingTx) FetchBlock(h *chainhash.Hash) ([]byte, error) {
	c.n++
	return c.tx.FetchBlock(h)
}
func (c *countingTx) FetchBlocks(h []chainhash.Hash) ([][]byte, error) {
	c.n++
	return c.tx.FetchBlocks(h)
}
func (c *countingTx) FetchBlockRegion(r *database.BlockRegion) ([]byte, error) {
	c.n++
	return c.tx.FetchBlockRegion(r)
}
func (c *countingTx) FetchBlockRegions(r []database.BlockRegion) ([][]byte, error) {
	c.n++
	return c.tx.FetchBlockRegions(r)
}
func (c *countingTx) PruneBlocks(target uint64) ([]chainhash.Hash, error) {
	c.n++
	return c.tx.PruneBlocks(target)
}
func (c *countingTx) BeenPruned() (bool, error) { c.n++; return c.tx.BeenPruned() }
func (c *countingTx) Commit() error             { c.n++; return c.tx.Commit() }
func (c *countingTx) Rollback() error           { c.n++; return c.tx.Rollback() }

// countingBucket counts every call of a bucket.
type countingBucket struct {
	b  database.Bucket
	tx *countingTx
}

func (b *countingBucket) wrap(inner database.Bucket) database.Bucket {
	if inner == nil {
		return nil
	}
	return &countingBucket{inner, b.tx}
}
func (b *countingBucket) Bucket(k []byte) database.Bucket { b.tx.n++; return b.wrap(b.b.Bucket(k)) }
func (b *countingBucket) CreateBucket(k []byte) (database.Bucket, error) {
	b.tx.n++
	inner, err := b.b.CreateBucket(k)
	return b.wrap(inner), err
}
func (b *countingBucket) CreateBucketIfNotExists(k []byte) (database.Bucket, error) {
	b.tx.n++
	inner, err := b.b.CreateBucketIfNotExists(k)
	return b.wrap(inner), err
}
func (b *countingBucket) DeleteBucket(k []byte) error { b.tx.n++; return b.b.DeleteBucket(k) }
func (b *countingBucket) ForEach(f func(k, v []byte) error) error {
	b.tx.n++
	return b.b.ForEach(f)
}
func (b *countingBucket) ForEachBucket(f func(k []byte) error) error {
	b.tx.n++
	return b.b.ForEachBucket(f)
}
func (b *countingBucket) Cursor() database.Cursor { b.tx.n++; return &countingCursor{b.b.Cursor(), b} }
func (b *countingBucket) Writable() bool          { b.tx.n++; return b.b.Writable() }
func (b *countingBucket) Put(k, v []byte) error   { b.tx.n++; return b.b.Put(k, v) }
func (b *countingBucket) Get(k []byte) []byte     { b.tx.n++; return b.b.Get(k) }
func (b *countingBucket) Delete(k []byte) error   { b.tx.n++; return b.b.Delete(k) }

// countingCursor counts every call of a cursor.
type countingCursor struct {
	c database.Cursor
	b *countingBucket
}

func (c *countingCursor) Bucket() database.Bucket { c.b.tx.n++; return c.b.wrap(c.c.Bucket()) }
func (c *countingCursor) Delete() error           { c.b.tx.n++; return c.c.Delete() }
func (c *countingCursor) First() bool             { c.b.tx.n++; return c.c.First() }
func (c *countingCursor) Last() bool              { c.b.tx.n++; return c.c.Last() }
func (c *countingCursor) Next() bool              { c.b.tx.n++; return c.c.Next() }
func (c *countingCursor) Prev() bool              { c.b.tx.n++; return c.c.Prev() }
func (c *countingCursor) Seek(k []byte) bool      { c.b.tx.n++; return c.c.Seek(k) }
func (c *countingCursor) Key() []byte             { c.b.tx.n++; return c.c.Key() }
func (c *countingCursor) Value() []byte           { c.b.tx.n++; return c.c.Value() }

// hookCall is one call of a hook of the chain's index manager and the
// database calls it made.
type hookCall struct {
	connect bool
	block   chainhash.Hash
	calls   int
}

// countingManager is the chain's index manager: the node's Manager, whose
// hooks it calls with a counting transaction.
type countingManager struct {
	*indexers.Manager
	hooks []hookCall
}

func (m *countingManager) ConnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	ct := &countingTx{tx: dbTx}
	err := m.Manager.ConnectBlock(ct, block, stxos)
	m.hooks = append(m.hooks, hookCall{connect: true, block: *block.Hash(), calls: ct.n})
	return err
}

func (m *countingManager) DisconnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	ct := &countingTx{tx: dbTx}
	err := m.Manager.DisconnectBlock(ct, block, stxos)
	m.hooks = append(m.hooks, hookCall{connect: false, block: *block.Hash(), calls: ct.n})
	return err
}

// TestHooksDoNoDatabaseWork replays one sequence of blocks (with
// reorganizations) into chains whose index manager is the node's Manager,
// its hooks given a transaction that counts every call:
//
//   - with the Electrum index alone, btcd's hooks make no database call at
//     all (the hook hands the block to the writer and wakes it);
//   - beside btcd's compact filter index (on by default in the node), the
//     hooks make exactly the calls they make for the filter index alone:
//     the Electrum index adds none. That they make some shows the counter
//     sees a hook's database work.
//
// The Electrum index still ends at the chain tip with the same rows either
// way, and equal to an index built from scratch, with the undo record of
// every block but genesis (all connected while its writer ran).
func TestHooksDoNoDatabaseWork(t *testing.T) {
	src := testchain.New(t, nil)
	blocks, err := src.MineEmpty(int(src.Params.CoinbaseMaturity) + 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(11))
	spec := testchain.DefaultSpec()
	spec.Txs = 12
	for step := 0; step < 30; step++ {
		switch {
		case step%5 == 3:
			branch, err := src.Reorg(rng, 1+rng.Intn(3), spec)
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, branch...)
		case step%5 == 4:
			branch, err := src.ReorgReplay(rng, 1+rng.Intn(2), spec)
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, branch...)
		default:
			b, err := src.Mine(rng, spec)
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, b)
		}
	}
	tipHash, tipHeight := src.Tip()

	type config struct {
		electrum bool
		cfindex  bool
	}
	replay := func(t *testing.T, c config) (*countingManager, map[string][]byte) {
		t.Helper()
		var (
			mgr *countingManager
			idx *indexers.ElectrumIndex
		)
		h, err := testchain.CreateWith(t.TempDir(), testchain.Options{
			Index: func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
				if c.electrum {
					var err error
					idx, err = indexers.NewElectrumIndex(db, indexers.Options{Dir: t.TempDir()})
					if err != nil {
						t.Fatal(err)
					}
				}
				var others []btcdindexers.Indexer
				if c.cfindex {
					others = append(others, btcdindexers.NewCfIndex(db, params))
				}
				mgr = &countingManager{Manager: indexers.NewManager(db, idx, others...)}
				return mgr
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		for _, b := range blocks {
			if _, _, err := h.Chain.ProcessBlock(btcutil.NewBlock(b.MsgBlock()), blockchain.BFNoPoWCheck); err != nil {
				t.Fatal(err)
			}
			if err := mgr.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if hash, height := h.Tip(); hash != tipHash || height != tipHeight {
			t.Fatalf("replayed chain ends at %v/%d, the source at %v/%d", hash, height, tipHash, tipHeight)
		}
		if idx == nil {
			return mgr, nil
		}
		if tip, _ := idx.LatestTip(); tip.Hash != tipHash {
			t.Fatalf("index at %v/%d, chain at %v/%d", tip.Hash, tip.Height, tipHash, tipHeight)
		}
		undo := sameAsScratch(t, "index of the replayed chain against one built from scratch", h, idx)
		// The writer started on the genesis block: btcd connected every
		// other block while it ran, and each has its record.
		checkUndoRule(t, "replayed chain", h.Chain, undo, map[chainhash.Hash]bool{*h.Params.GenesisHash: true}, noneKept)
		return mgr, indexRows(t, idx)
	}

	var electrumRows map[string][]byte
	t.Run("electrum", func(t *testing.T) {
		mgr, rows := replay(t, config{electrum: true})
		electrumRows = rows
		connects, disconnects := 0, 0
		for _, c := range mgr.hooks {
			if c.connect {
				connects++
			} else {
				disconnects++
			}
			if c.calls != 0 {
				t.Errorf("connect %v, disconnect of %v: the hook made %d database calls", c.connect, c.block, c.calls)
			}
		}
		t.Logf("%d connects, %d disconnects, no database call", connects, disconnects)
		if connects < int(tipHeight) || disconnects < 10 {
			t.Fatalf("only %d connects and %d disconnects", connects, disconnects)
		}
	})
	t.Run("electrum beside the filter index", func(t *testing.T) {
		both, rows := replay(t, config{electrum: true, cfindex: true})
		if electrumRows != nil {
			compareRows(t, "index beside the filter index", electrumRows, rows, false)
		}
		alone, _ := replay(t, config{cfindex: true})
		if len(both.hooks) != len(alone.hooks) {
			t.Fatalf("%d hook calls with the Electrum index, %d without", len(both.hooks), len(alone.hooks))
		}
		total := 0
		for i := range both.hooks {
			if both.hooks[i] != alone.hooks[i] {
				t.Fatalf("hook call %d: %+v with the Electrum index, %+v without", i, both.hooks[i], alone.hooks[i])
			}
			total += alone.hooks[i].calls
		}
		t.Logf("%d hook calls, %d database calls, all the filter index's", len(both.hooks), total)
		if total == 0 {
			t.Fatal("the counting transaction saw no call of the filter index")
		}
	})
}

// TestBlockPathReadsNothing watches every key comparison of the index's
// store, with the stack that made it, while the writer indexes blocks at
// the tip, undoes them in reorganizations and catches up a whole chain in
// batches: the block path (fetching, planning, assembling, committing)
// makes no comparison outside the store's Write, so it reads nothing. The
// spy sees the block path's writes and the undo's reads, and a read made
// from inside the assembly (the OnBlock callback) is caught.
func TestBlockPathReadsNothing(t *testing.T) {
	var (
		idx    *indexers.ElectrumIndex
		spy    *indexers.StoreSpy
		canary atomic.Bool
	)
	onBlock := func(indexers.BlockPass) {
		if canary.Load() {
			_, _ = idx.Store().Get(indexers.TipKey, nil)
		}
	}
	factory := func(opts indexers.Options) testchain.IndexFactory {
		return func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
			var err error
			opts.Dir = t.TempDir()
			opts.OnBlock = onBlock
			if idx, err = indexers.NewElectrumIndex(db, opts); err != nil {
				t.Fatal(err)
			}
			if spy, err = idx.SpyOnStore(); err != nil {
				t.Fatal(err)
			}
			return indexers.NewManager(db, idx)
		}
	}
	h, err := testchain.CreateWith(t.TempDir(), testchain.Options{Index: factory(indexers.Options{UndoBlocks: 3})})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	check := func(step string) (writes, undo int) {
		t.Helper()
		reads, stacks, writes, undo := spy.Take()
		if reads > 0 {
			t.Fatalf("%s: the block path read the store %d times; first at:\n\t%s", step, reads,
				strings.Join(stacks, "\n---\n\t"))
		}
		return writes, undo
	}
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	writes, _ := check("mining mature coins")
	rng := rand.New(rand.NewSource(5))
	spec := testchain.DefaultSpec()
	spec.Txs = 15
	undo := 0
	for step := 0; step < 24; step++ {
		if step%4 == 3 {
			if _, err := h.Reorg(rng, 1+rng.Intn(5), spec); err != nil {
				t.Fatal(err)
			}
		} else if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
		w, u := check(fmt.Sprintf("step %d", step))
		writes += w
		undo += u
	}
	t.Logf("at the tip: %d comparisons of the block path's writes, %d of the undo's reads", writes, undo)
	if writes == 0 || undo == 0 {
		t.Fatalf("the spy saw %d comparisons of the block path's writes and %d of the undo's: it sees nothing", writes, undo)
	}

	// A catch-up of the whole chain, in many batches (of rows alone: the
	// blocks were on disk at the writer's start, so they get no undo
	// record).
	if err := h.Reopen(factory(indexers.Options{BatchBytes: 8 << 10})); err != nil {
		t.Fatal(err)
	}
	writes, _ = check("catch-up")
	if b := idx.Progress().Batches; b < 6 || writes == 0 {
		t.Fatalf("catch-up: %d batches, %d comparisons of their writes", b, writes)
	}
	if _, err := h.Mine(rng, spec); err != nil {
		t.Fatal(err)
	}
	check("block after the catch-up")

	// The canary: a read from inside the assembly is seen.
	canary.Store(true)
	if _, err := h.Mine(rng, spec); err != nil {
		t.Fatal(err)
	}
	canary.Store(false)
	if reads, _, _, _ := spy.Take(); reads == 0 {
		t.Fatal("a read of the store from inside the assembly went unseen")
	}
}

// allUndo is an undo window wider than any test chain: it keeps every
// record the writer writes, and still gives none to the blocks a writer
// catches up from btcd's disk at its start.
const allUndo = 1 << 30

// mainChainUndo checks the undo records among rows (keyed as in the store)
// against chain: each is at or below the chain's tip and is the record of
// the main chain's block at its height, as indexers.UndoRecordOf computes it
// from the block and btcd's spent outputs (a record left of a disconnected
// block would undo the wrong block). It returns their heights.
func mainChainUndo(t testing.TB, step string, chain *blockchain.BlockChain, rows map[string][]byte) map[int32]bool {
	t.Helper()
	tip := chain.BestSnapshot().Height
	heights := make(map[int32]bool)
	for k, v := range rows {
		if !isUndoKey(k) {
			continue
		}
		if len(k) != len(indexers.UndoKey(0)) {
			t.Fatalf("%s: undo record key %x", step, k)
		}
		height := int32(binary.BigEndian.Uint32([]byte(k[3:])))
		heights[height] = true
		if height > tip {
			t.Fatalf("%s: undo record at height %d, above the chain's tip %d", step, height, tip)
		}
		block, err := chain.BlockByHeight(height)
		if err != nil {
			t.Fatal(err)
		}
		var stxos []blockchain.SpentTxOut
		if height > 0 {
			if stxos, err = chain.FetchSpendJournal(block); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(v, indexers.UndoRecordOf(block, stxos)) {
			t.Fatalf("%s: the undo record at height %d is not the record of the main chain's block there", step, height)
		}
	}
	return heights
}

// noneKept is a keptAbove of checkUndoRule: no record of a block on disk at
// the writer's start may remain.
const noneKept = int32(1<<31 - 1)

// checkUndoRule checks which blocks of chain's main chain hold an undo
// record (undo, their heights): a block in onDisk, which btcd had on disk
// when the index's writer started, holds none, but for one above keptAbove
// (the record an earlier run wrote, which the start kept); every other
// block, which btcd connected while the writer ran, holds one (the tests
// run far shorter than the ten minutes a record stays).
func checkUndoRule(t testing.TB, step string, chain *blockchain.BlockChain, undo map[int32]bool,
	onDisk map[chainhash.Hash]bool, keptAbove int32) {
	t.Helper()
	tip := chain.BestSnapshot().Height
	for height := int32(0); height <= tip; height++ {
		hash, err := chain.BlockHashByHeight(height)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case onDisk[*hash] && undo[height] && height <= keptAbove:
			t.Fatalf("%s: block %d %v, on disk when the writer started, has an undo record", step, height, hash)
		case !onDisk[*hash] && !undo[height]:
			t.Fatalf("%s: block %d %v, connected while the writer ran, has no undo record", step, height, hash)
		}
	}
}

// mainChainSet returns the blocks of chain's main chain.
func mainChainSet(t testing.TB, chain *blockchain.BlockChain) map[chainhash.Hash]bool {
	t.Helper()
	set := make(map[chainhash.Hash]bool)
	for height := int32(0); height <= chain.BestSnapshot().Height; height++ {
		hash, err := chain.BlockHashByHeight(height)
		if err != nil {
			t.Fatal(err)
		}
		set[*hash] = true
	}
	return set
}

// sameAsScratch compares the index with one built from scratch on h's
// chain of the moment (which holds no undo record: buildBeside): every row
// but the undo records is equal, and every undo record the index holds is
// the record of the main-chain block at its height (mainChainUndo). It
// returns the heights of the index's undo records.
func sameAsScratch(t testing.TB, step string, h *testchain.Harness, idx *indexers.ElectrumIndex) map[int32]bool {
	t.Helper()
	checkSize(t, idx)
	_, want := buildBeside(t, h, indexers.Options{UndoBlocks: allUndo})
	got := indexRows(t, idx)
	compareRows(t, step, want, got, true)
	return mainChainUndo(t, step, h.Chain, got)
}

// TestDisconnectUndoesExactly connects random blocks, reorganizes, and
// finally invalidates every block but genesis and reconsiders them again:
// at each point every row of the store but the undo records equals the rows
// of an index built from scratch on the chain of that moment, every undo
// record left is the record of the main chain's block at its height, and
// exactly the blocks btcd connected while the writer ran hold one
// (checkUndoRule). The index follows the chain from genesis, so with undo
// records for 288 blocks every block but genesis has a record and every
// undo reads its record; with 2, a restart keeps the records of the newest
// 2 blocks only, the blocks below them were on disk at the start and get
// none, and the deeper undos read the blocks.
func TestDisconnectUndoesExactly(t *testing.T) {
	for _, tc := range []struct {
		name string
		undo int
	}{{"undo records", 0}, {"from blocks", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := indexers.Options{UndoBlocks: tc.undo}
			var idx *indexers.ElectrumIndex
			h := testchain.New(t, testchain.ElectrumIndex(dir, opts, &idx, nil))
			if err := h.MineMature(); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(21))
			spec := testchain.DefaultSpec()
			spec.Txs = 20
			steps := 40
			if raceDetector {
				steps = 24
			}
			// onDisk holds the blocks btcd had on disk when the writer
			// started, keptAbove the height above which the records an
			// earlier run wrote for them may remain (checkUndoRule).
			startHash := *h.Params.GenesisHash
			onDisk := map[chainhash.Hash]bool{startHash: true}
			keptAbove := noneKept
			check := func(step string) map[int32]bool {
				t.Helper()
				undo := sameAsScratch(t, step, h, idx)
				checkUndoRule(t, step, h.Chain, undo, onDisk, keptAbove)
				return undo
			}
			random := func(from, to int) {
				t.Helper()
				for step := from; step < to; step++ {
					var err error
					switch rng.Intn(4) {
					case 0:
						_, err = h.Reorg(rng, 1+rng.Intn(6), spec)
					case 1:
						_, err = h.ReorgReplay(rng, 1+rng.Intn(3), spec)
					default:
						_, err = h.Mine(rng, spec)
					}
					if err != nil {
						t.Fatal(err)
					}
					if step%10 == 9 {
						check(fmt.Sprintf("step %d", step))
					}
				}
			}
			random(0, steps/2)
			if tc.undo > 0 {
				// A restart: the records of the blocks below the newest 2
				// go, and every block of the chain is now one btcd had on
				// disk when the writer started.
				if err := h.Reopen(testchain.ElectrumIndex(dir, opts, &idx, nil)); err != nil {
					t.Fatal(err)
				}
				var start int32
				startHash, start = h.Tip()
				onDisk, keptAbove = mainChainSet(t, h.Chain), start-int32(tc.undo)
				if n, _, err := idx.UndoSize(); err != nil || n != int64(tc.undo) {
					t.Fatalf("after a restart %d undo records (%v), want %d", n, err, tc.undo)
				}
				if hs := undoHeights(t, idx); hs[0] != start-int32(tc.undo)+1 || hs[len(hs)-1] != start {
					t.Fatalf("after a restart undo records at %v, tip at %d", hs, start)
				}
				// 2 blocks undone from their records, 4 from the blocks.
				if _, err := h.Reorg(rng, 6, spec); err != nil {
					t.Fatal(err)
				}
				check("deep reorganization after the restart")
			}
			random(steps/2, steps)
			_, tip := h.Tip()
			undo := check("after the reorganizations")
			for height := tip - int32(max(tc.undo, 2)) + 1; height <= tip; height++ {
				if !undo[height] {
					t.Fatalf("no undo record at height %d, below the tip %d", height, tip)
				}
			}

			// Disconnect every block but genesis.
			first, err := h.Chain.BlockHashByHeight(1)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.InvalidateBlock(*first); err != nil {
				t.Fatal(err)
			}
			if _, height := h.Tip(); height != 0 {
				t.Fatalf("invalidating block 1 left the chain at height %d", height)
			}
			// Each undo deleted its block's record.
			if undo := check("back at genesis"); len(undo) != 0 {
				t.Fatalf("undo records at %v back at genesis", undo)
			}
			if err := h.ReconsiderBlock(*first); err != nil {
				t.Fatal(err)
			}
			// btcd picks a branch of the blocks reconsidered (not always
			// the one it left); the index follows it. Each block it
			// connects gets a record, but for a block below the writer's
			// start when that start is in the main chain again. btcd
			// connects the branch block by block, and the writer may
			// index the lower blocks before the start is back in the main
			// chain: those get a record too, so records of blocks on disk
			// at the start are allowed here (keptAbove -1).
			if !h.Chain.MainChainHasBlock(&startHash) {
				onDisk = map[chainhash.Hash]bool{*h.Params.GenesisHash: true}
			}
			keptAbove = -1
			check("all blocks reconsidered")
			if _, height := h.Tip(); height < 100 {
				t.Fatalf("reconsidering block 1 left the chain at height %d", height)
			}
		})
	}
}

// Catching up an existing chain in one batch, or in many small ones,
// writes exactly the rows the writer writes following the chain block by
// block, size and tip included. Undo records differ by design: the writer
// following the chain keeps the record of every block btcd connected while
// it ran (for undoKeep, even beyond UndoBlocks), each the record of its
// block; a catch-up of blocks btcd had on disk at its start writes none,
// whatever UndoBlocks (buildBeside checks).
func TestCatchUpMatchesBlockPath(t *testing.T) {
	opts := indexers.Options{UndoBlocks: 10}
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, testchain.ElectrumIndex(t.TempDir(), opts, &idx, nil))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(2))
	spec := testchain.DefaultSpec()
	spec.Txs = 20
	for i := 0; i < 30; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	_, tip := h.Tip()
	undo := sameAsScratch(t, "block by block", h, idx)
	checkUndoRule(t, "block by block", h.Chain, undo, map[chainhash.Hash]bool{*h.Params.GenesisHash: true}, noneKept)
	if len(undo) != int(tip) {
		t.Fatalf("following the chain: %d undo records for %d blocks above genesis", len(undo), tip)
	}
	live := indexRows(t, idx)

	catchUp := func(what string, opts indexers.Options) *indexers.ElectrumIndex {
		t.Helper()
		c, rows := buildBeside(t, h, opts)
		compareRows(t, what, live, rows, true)
		return c
	}
	if n := catchUp("one batch", opts).Progress().Batches; n != 1 {
		t.Fatalf("catch-up in one batch committed %d", n)
	}
	opts.BatchBytes = 8 << 10
	many := catchUp("many batches", opts)
	if n := many.Progress().Batches; n < 6 {
		t.Fatalf("catch-up in small batches committed %d, want many", n)
	}
	t.Logf("%d rows; %d small batches", len(live), many.Progress().Batches)
}

// Progress reports committed work only: sampled at any moment of a catch-up
// from another goroutine, its height never exceeds the index tip a reader
// of the store sees after it, and its transaction count never exceeds the
// transactions of the blocks from its start to that tip. At each commit it
// reports exactly that commit.
func TestCatchUpProgressIsCommitted(t *testing.T) {
	h := randomChain(t, 3, 30)
	var (
		idx     *indexers.ElectrumIndex
		fail    atomic.Pointer[string]
		samples atomic.Int64
		mid     atomic.Int64
		commits int
		// blockWrites sums the rows the blocks' passes put or deleted.
		blockWrites, blocks int64
	)
	failf := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		fail.CompareAndSwap(nil, &msg)
	}
	// txsUpTo returns the chain's transactions up to height in a snapshot.
	txsUpTo := func(get func([]byte) []byte, height int32) uint64 {
		if height < 0 {
			return 0
		}
		k := append([]byte("Exb"), binary.BigEndian.AppendUint32(nil, uint32(height))...)
		v := get(k)
		if len(v) != 40 {
			failf("no block row at height %d", height)
			return 0
		}
		return binary.BigEndian.Uint64(v)
	}
	check := func() {
		samples.Add(1)
		p := idx.Progress()
		snap, err := idx.Store().GetSnapshot()
		if err != nil {
			failf("%v", err)
			return
		}
		defer snap.Release()
		get := func(k []byte) []byte { v, _ := snap.Get(k, nil); return v }
		tv := get(indexers.TipKey)
		if len(tv) != 36 {
			failf("malformed tip %x", tv)
			return
		}
		tip := int32(binary.LittleEndian.Uint32(tv[32:]))
		switch {
		case p.Started.IsZero():
			// No catch-up yet: nothing to report.
			return
		case p.Height > tip:
			failf("progress height %d, committed index tip %d", p.Height, tip)
		case p.Height >= p.From && p.Txs > txsUpTo(get, tip)-txsUpTo(get, p.From-1):
			failf("progress at %d: %d transactions, %d committed from %d to %d", p.Height, p.Txs,
				txsUpTo(get, tip)-txsUpTo(get, p.From-1), p.From, tip)
		case p.Txs > p.TargetTxs:
			failf("%d of %d transactions", p.Txs, p.TargetTxs)
		case p.Rate < 0 || p.ETA < 0:
			failf("rate %v, ETA %v", p.Rate, p.ETA)
		}
		if p.Running && p.Height < p.Target {
			mid.Add(1)
		}
	}
	stop := make(chan struct{})
	stopped := make(chan struct{})
	asks := make(chan chan struct{})
	onCommit := func(c indexers.Commit) {
		commits++
		p := idx.Progress()
		if p.Running && (p.Height != c.Tip.Height || p.Batches != commits) {
			failf("commit %d of tip %d: progress at %d after %d batches", commits, c.Tip.Height, p.Height, p.Batches)
		}
		if p.Running && p.Height < p.Target {
			// One sample from the other goroutine at this commit.
			done := make(chan struct{})
			asks <- done
			<-done
		}
	}
	err := h.Reopen(func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		var err error
		idx, err = indexers.NewElectrumIndex(db, indexers.Options{
			Dir: t.TempDir(), BatchBytes: 8 << 10, OnCommit: onCommit,
			OnBlock: func(p indexers.BlockPass) { blockWrites += p.Writes; blocks++ }})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				case done := <-asks:
					check()
					close(done)
				default:
					check()
				}
			}
		}()
		return indexers.NewManager(db, idx)
	})
	close(stop)
	<-stopped
	if err != nil {
		t.Fatal(err)
	}
	if msg := fail.Load(); msg != nil {
		t.Fatal(*msg)
	}
	p := idx.Progress()
	t.Logf("%d commits, %d samples, %d of them in the middle of the catch-up", commits, samples.Load(), mid.Load())
	if commits < 6 || mid.Load() < int64(commits-1) {
		t.Fatalf("%d commits and %d samples in the middle: want many commits, each sampled", commits, mid.Load())
	}
	if p.Running || p.Height != p.Target || p.Txs != p.TargetTxs || p.ETA != 0 || p.Batches != commits ||
		p.Finished.Before(p.Started) {
		t.Fatalf("finished catch-up: %+v", p)
	}
	if hash, height := h.Tip(); height != p.Target || p.From != 0 || p.TargetTxs != h.Chain.BestSnapshot().TotalTxns {
		t.Fatalf("catch-up from %d to %d of %d tx, chain tip %v/%d", p.From, p.Target, p.TargetTxs, hash, height)
	}
	// Writes counts rows put or deleted: at most the blocks' own and the
	// tip and size per batch. The blocks were on disk at the writer's start:
	// no undo record.
	if limit := blockWrites + 2*int64(p.Batches); p.Writes == 0 || int64(p.Writes) > limit {
		t.Fatalf("catch-up of %d blocks whose passes wrote %d rows reports %d rows written (at most %d)",
			blocks, blockWrites, p.Writes, limit)
	}
	if n, _, err := idx.UndoSize(); err != nil || n != 0 {
		t.Fatalf("catch-up at the start: %d undo records (%v), want none", n, err)
	}
}

// syncingManager is the node's Manager whose hooks, when on, wait for a
// whole pass of the writer after handing the block over: the pass a hook's
// wake-up starts may run before btcd, after the hook, publishes the block
// as its tip.
type syncingManager struct {
	*indexers.Manager
	on atomic.Bool
}

func (m *syncingManager) ConnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	if err := m.Manager.ConnectBlock(dbTx, block, stxos); err != nil {
		return err
	}
	if m.on.Load() {
		return m.Manager.Sync()
	}
	return nil
}

func (m *syncingManager) DisconnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	if err := m.Manager.DisconnectBlock(dbTx, block, stxos); err != nil {
		return err
	}
	if m.on.Load() {
		return m.Manager.Sync()
	}
	return nil
}

// TestWriterFollowsWithoutSync connects a block, then disconnects it, with
// the writer's pass woken by the hook running inside the hook's window
// (before btcd publishes the new tip), and nobody calling Sync afterwards,
// as in the node: the index must still reach the chain's tip. A writer left
// idle with no wake-up pending while the chain is elsewhere never does
// (until the next block).
func TestWriterFollowsWithoutSync(t *testing.T) {
	src := testchain.New(t, nil)
	if err := src.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(8))
	if _, err := src.Mine(rng, testchain.DefaultSpec()); err != nil {
		t.Fatal(err)
	}
	blocks, _ := chainBlocks(t, src)

	var (
		idx *indexers.ElectrumIndex
		mgr *syncingManager
	)
	h, err := testchain.CreateWith(t.TempDir(), testchain.Options{
		Index: func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
			var err error
			if idx, err = indexers.NewElectrumIndex(db, indexers.Options{Dir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			mgr = &syncingManager{Manager: indexers.NewManager(db, idx)}
			return mgr
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	process := func(b *btcutil.Block) {
		t.Helper()
		if _, _, err := h.Chain.ProcessBlock(btcutil.NewBlock(b.MsgBlock()), blockchain.BFNoPoWCheck); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range blocks[1 : len(blocks)-1] {
		process(b)
	}
	if err := mgr.Sync(); err != nil {
		t.Fatal(err)
	}
	// reaches waits until the index holds the chain's tip; it fails when
	// the writer is idle, with no wake-up pending, elsewhere.
	reaches := func(what string) bool {
		t.Helper()
		hash, height := h.Tip()
		for {
			if tip, _ := idx.LatestTip(); tip.Hash == hash {
				return true
			}
			if idx.WriterIdle() {
				// Idle for good unless a pass is just starting.
				n := idx.WriterPasses()
				time.Sleep(20 * time.Millisecond)
				tip, _ := idx.LatestTip()
				if tip.Hash != hash && idx.WriterIdle() && idx.WriterPasses() == n {
					t.Errorf("%s: the chain is at height %d, the index stays at %d: its writer ran the pass the "+
						"hook woke it for before btcd moved its tip, and nothing wakes it again", what, height, tip.Height)
					return false
				}
			}
			time.Sleep(time.Millisecond)
		}
	}

	mgr.on.Store(true)
	process(blocks[len(blocks)-1])
	mgr.on.Store(false)
	if !reaches("block connected") {
		if err := mgr.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	mgr.on.Store(true)
	tipHash, _ := h.Tip()
	if err := h.Chain.InvalidateBlock(&tipHash); err != nil {
		t.Fatal(err)
	}
	mgr.on.Store(false)
	reaches("block disconnected")
}

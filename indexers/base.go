package indexers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// The base: rows of the index kept in a leveldb database of the index's
// own, beside btcd's ffldb.
//
// Written through ffldb, a catch-up costs twice what the same rows cost
// written into a leveldb database of their own (docs/BENCHMARKS.md, "The
// catch-up with the rows in a leveldb of the index's own"): ffldb merges
// every row into its write cache's treap, and flushes that cache to
// leveldb in one giant write. The base holds the rows of the blocks below
// a height, the base height; ffldb holds everything else as before, and
// the rows of blocks above the base height are written in the chain's own
// transactions. The base is read-only while the index is read: every view
// of the index is a view of ffldb over the same base.
//
// ffldb's rows win over the base's. Every key of the five tables encodes
// the height of its block (rowHeight), so a delete of a row at or below
// the base height, which the base may hold, is written to ffldb as a
// tombstone (mergedBucket.Delete): an unspent output of the base spent by a later
// block, or the rows of a block below the base height disconnected by a
// reorganization. A row put again (an output a reorganization restores)
// masks the base's copy. Reads go through mergedBucket: a get looks in
// ffldb, then in the base; a cursor merges both in key order, skipping
// tombstones and the base rows ffldb masks.

// tombstone is the value of an ffldb row that deletes the base's row of
// the same key. No row of the five tables has a one-byte value: history
// values are even, unspent, block and chunk values longer, txid values
// empty.
var tombstone = []byte{0xff}

// isTombstone reports whether v is a tombstone.
func isTombstone(v []byte) bool { return len(v) == 1 && v[0] == tombstone[0] }

// rowHeight returns the height of the block a row of one of the five tables
// belongs to; false for any other key (bookkeeping, held balances).
func rowHeight(k []byte) (int32, bool) {
	if len(k) < pfx || !bytes.HasPrefix(k, rowPrefix) {
		return 0, false
	}
	switch k[2] {
	case tagHist:
		if len(k) == histKeyLen {
			return histHeight(k), true
		}
	case tagTxid:
		if len(k) == txidKeyLen {
			return posHeight(getTxPos(k[pfx+txidPrefix:])), true
		}
	case tagUtxo:
		if len(k) == utxoKeyLen {
			return int32(binary.BigEndian.Uint32(k[pfx+hashXLen:])), true
		}
	case tagTx:
		if len(k) == txKeyLen {
			return posHeight(getTxPos(k[pfx:])), true
		}
	case tagBlk:
		if len(k) == blkKeyLen {
			return int32(binary.BigEndian.Uint32(k[pfx:])), true
		}
	}
	return 0, false
}

// errBaseReadOnly is returned by the writes of a mergedBucket's cursor.
var errBaseReadOnly = errors.New("electrum index: a cursor over the base is read-only")

// mergedBucket is ffldb's metadata bucket over a base of the rows up to
// height top: Get and Cursor read both, Delete masks the base's row, every
// other method is ffldb's. Writes go to ffldb only.
type mergedBucket struct {
	meta database.Bucket
	base *leveldb.DB
	// top is the base's height as the view's transaction names it (its
	// Exm entry), read when the view first needs it: the base may hold
	// rows above it, of an extension not named yet (trail.go).
	top *baseHeight
	// its holds the base iterators of the bucket's cursors, released by
	// release.
	its *baseIters
	// rows is set by every write of a row to ffldb (idx.ffldbRows).
	rows *atomic.Bool
}

// baseIters are the base iterators of a view's cursors, which several
// goroutines may create (scan.go).
type baseIters struct {
	mu  sync.Mutex
	its []iterator.Iterator
}

// baseHeight is a view's base height, read once.
type baseHeight struct {
	once   sync.Once
	height int32
}

// height returns the base's height in the view (-1: the view names no
// base, and reads none of it).
func (b mergedBucket) height() int32 {
	b.top.once.Do(func() {
		b.top.height = -1
		if _, h, ok := decodeTipVal(b.meta.Get(baseKey)); ok {
			b.top.height = h
		}
	})
	return b.top.height
}

// Delete deletes the row of k: in ffldb, and by a tombstone when the base
// may hold it.
func (b mergedBucket) Delete(k []byte) error {
	h, ok := rowHeight(k)
	if ok {
		b.rows.Store(true)
	}
	if ok && h <= b.height() {
		return b.meta.Put(k, tombstone)
	}
	return b.meta.Delete(k)
}

// Put writes a row to ffldb.
func (b mergedBucket) Put(k, v []byte) error {
	if _, ok := rowHeight(k); ok {
		b.rows.Store(true)
	}
	return b.meta.Put(k, v)
}

// ffldbHasRows reports whether ffldb holds a row (or a tombstone) of one of
// the index's tables.
func ffldbHasRows(meta database.Bucket) bool {
	c := meta.Cursor()
	for _, tag := range []byte{tagHist, tagTxid, tagUtxo, tagTx, tagBlk} {
		p := []byte{rowPrefix[0], rowPrefix[1], tag}
		if c.Seek(p) && bytes.HasPrefix(c.Key(), p) {
			return true
		}
	}
	return false
}

// Bucket returns ffldb's nested bucket of the name.
func (b mergedBucket) Bucket(key []byte) database.Bucket { return b.meta.Bucket(key) }

// CreateBucket creates an ffldb bucket.
func (b mergedBucket) CreateBucket(key []byte) (database.Bucket, error) {
	return b.meta.CreateBucket(key)
}

// CreateBucketIfNotExists creates an ffldb bucket unless it exists.
func (b mergedBucket) CreateBucketIfNotExists(key []byte) (database.Bucket, error) {
	return b.meta.CreateBucketIfNotExists(key)
}

// DeleteBucket deletes an ffldb bucket.
func (b mergedBucket) DeleteBucket(key []byte) error { return b.meta.DeleteBucket(key) }

// ForEachBucket calls fn for each of ffldb's nested buckets.
func (b mergedBucket) ForEachBucket(fn func(k []byte) error) error { return b.meta.ForEachBucket(fn) }

// ForEach calls fn with each row of ffldb and the base, merged (the rows of
// nested buckets are not visited).
func (b mergedBucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for ok := c.First(); ok; ok = c.Next() {
		if b.meta.Bucket(c.Key()) != nil {
			continue
		}
		if err := fn(c.Key(), c.Value()); err != nil {
			return err
		}
	}
	return nil
}

// Writable reports whether ffldb's transaction is writable.
func (b mergedBucket) Writable() bool { return b.meta.Writable() }

// Get returns the value of k: ffldb's row, or the base's when ffldb has
// none; nil when neither has one or ffldb's is a tombstone.
func (b mergedBucket) Get(k []byte) []byte {
	if v := b.meta.Get(k); v != nil {
		if isTombstone(v) {
			return nil
		}
		return v
	}
	if h, ok := rowHeight(k); !ok || h > b.height() {
		return nil
	}
	v, err := b.base.Get(k, nil)
	if err != nil {
		return nil
	}
	return v
}

// Cursor returns a cursor over ffldb's rows and the base's, merged.
func (b mergedBucket) Cursor() database.Cursor {
	it := b.base.NewIterator(nil, nil)
	b.its.mu.Lock()
	b.its.its = append(b.its.its, it)
	b.its.mu.Unlock()
	return &mergedCursor{b: b, f: b.meta.Cursor(), l: it}
}

// release releases the base iterators of the bucket's cursors; the
// cursors must not be used afterwards.
func (b mergedBucket) release() {
	b.its.mu.Lock()
	defer b.its.mu.Unlock()
	for _, it := range b.its.its {
		it.Release()
	}
	b.its.its = nil
}

// mergedCursor walks ffldb's rows and the base's in key order. On a key
// both hold, ffldb's row is the one (a tombstone hides both).
type mergedCursor struct {
	b      mergedBucket
	f      database.Cursor
	l      iterator.Iterator
	fOK    bool
	lOK    bool
	useF   bool // the current row is ffldb's
	valid  bool
	rev    bool
	keyBuf []byte
}

// Bucket returns the bucket the cursor was created for.
func (c *mergedCursor) Bucket() database.Bucket { return c.b }

// Delete is not supported: the index deletes by key.
func (c *mergedCursor) Delete() error { return errBaseReadOnly }

// First moves to the first row.
func (c *mergedCursor) First() bool {
	c.rev = false
	c.fOK, c.lOK = c.f.First(), c.l.First()
	return c.settle()
}

// Last moves to the last row.
func (c *mergedCursor) Last() bool {
	c.rev = true
	c.fOK, c.lOK = c.f.Last(), c.l.Last()
	return c.settle()
}

// Seek moves to the first row whose key is at least seek.
func (c *mergedCursor) Seek(seek []byte) bool {
	c.rev = false
	c.fOK, c.lOK = c.f.Seek(seek), c.l.Seek(seek)
	return c.settle()
}

// Next moves to the next row.
func (c *mergedCursor) Next() bool {
	if !c.valid {
		return false
	}
	k := c.hold()
	if c.rev {
		// Turn around: both sides to the first key after k.
		c.rev = false
		c.fOK, c.lOK = c.f.Seek(k), c.l.Seek(k)
	}
	if c.fOK && bytes.Equal(c.f.Key(), k) {
		c.fOK = c.f.Next()
	}
	if c.lOK && bytes.Equal(c.l.Key(), k) {
		c.lOK = c.l.Next()
	}
	return c.settle()
}

// Prev moves to the previous row.
func (c *mergedCursor) Prev() bool {
	if !c.valid {
		return false
	}
	k := c.hold()
	if !c.rev {
		// Turn around: both sides to the last key before k.
		c.rev = true
		c.fOK = c.before(c.f.Seek(k), c.f.Key, c.f.Prev, c.f.Last, k)
		c.lOK = c.before(c.l.Seek(k), c.l.Key, c.l.Prev, c.l.Last, k)
		return c.settle()
	}
	if c.fOK && bytes.Equal(c.f.Key(), k) {
		c.fOK = c.f.Prev()
	}
	if c.lOK && bytes.Equal(c.l.Key(), k) {
		c.lOK = c.l.Prev()
	}
	return c.settle()
}

// before moves a side sought to k onto the last key below k.
func (c *mergedCursor) before(ok bool, key func() []byte, prev, last func() bool, k []byte) bool {
	if !ok {
		return last()
	}
	if bytes.Compare(key(), k) >= 0 {
		return prev()
	}
	return true
}

// hold copies the current key, which moving a side may overwrite.
func (c *mergedCursor) hold() []byte {
	c.keyBuf = append(c.keyBuf[:0], c.Key()...)
	return c.keyBuf
}

// settle picks the current row from the two sides' positions, stepping
// over tombstones (and the base rows they hide) in the cursor's direction.
func (c *mergedCursor) settle() bool {
	for {
		// The base's entries that are not rows of the view's base:
		// its own bookkeeping, and rows above the base's height.
		for c.lOK {
			if h, ok := rowHeight(c.l.Key()); ok && h <= c.b.height() {
				break
			}
			if c.rev {
				c.lOK = c.l.Prev()
			} else {
				c.lOK = c.l.Next()
			}
		}
		if !c.fOK && !c.lOK {
			c.valid = false
			return false
		}
		switch {
		case !c.lOK:
			c.useF = true
		case !c.fOK:
			c.useF = false
		default:
			cmp := bytes.Compare(c.f.Key(), c.l.Key())
			if c.rev {
				cmp = -cmp
			}
			c.useF = cmp <= 0
		}
		if !c.useF || !isTombstone(c.f.Value()) {
			c.valid = true
			return true
		}
		// A tombstone: step over it and the base row it hides.
		c.keyBuf = append(c.keyBuf[:0], c.f.Key()...)
		k := c.keyBuf
		step := c.f.Next
		lstep := c.l.Next
		if c.rev {
			step, lstep = c.f.Prev, c.l.Prev
		}
		c.fOK = step()
		if c.lOK && bytes.Equal(c.l.Key(), k) {
			c.lOK = lstep()
		}
	}
}

// Key returns the current row's key.
func (c *mergedCursor) Key() []byte {
	if !c.valid {
		return nil
	}
	if c.useF {
		return c.f.Key()
	}
	return c.l.Key()
}

// Value returns the current row's value.
func (c *mergedCursor) Value() []byte {
	if !c.valid {
		return nil
	}
	if c.useF {
		return c.f.Value()
	}
	return c.l.Value()
}

// baseKey is ffldb's entry naming the block up to which the index's rows
// are in the base: its height and hash. An index without it has no base.
var baseKey = []byte("Exm")

// baseTipKey is the base's own tip while it is built: the block its rows
// end at, with the transaction count and the index's size there. It sorts
// before every row.
var baseTipKey = []byte("\x00electrum base tip")

// SetBasePath sets the directory of the index's base (base.go). A new
// index, built by the catch-up at start, is then written into it; an index
// built with a base reads it from there. Empty (the default): the index
// keeps every row in ffldb. Call it before the index is prepared.
func (idx *ElectrumIndex) SetBasePath(dir string) { idx.basePath = dir }

// CloseBase closes the base, if the index has one open.
func (idx *ElectrumIndex) CloseBase() {
	idx.mu.Lock()
	base, building := idx.base, idx.building
	idx.base, idx.building = nil, nil
	idx.mu.Unlock()
	if base != nil {
		base.Close()
	}
	// An extension builds into the base itself (trailExtend).
	if building != nil && building != base {
		building.Close()
	}
}

// encodeBaseTip and decodeBaseTip are the value of baseTipKey.
func encodeBaseTip(t memTip) []byte {
	v := make([]byte, 0, chainhash.HashSize+4+8+64)
	v = append(v, t.hash[:]...)
	v = binary.BigEndian.AppendUint32(v, uint32(t.height))
	v = binary.BigEndian.AppendUint64(v, t.txCount)
	return append(v, encodeStats(t.stats)...)
}

func decodeBaseTip(v []byte) (memTip, bool) {
	if len(v) < chainhash.HashSize+12 {
		return memTip{}, false
	}
	var t memTip
	copy(t.hash[:], v)
	t.height = int32(binary.BigEndian.Uint32(v[chainhash.HashSize:]))
	t.txCount = binary.BigEndian.Uint64(v[chainhash.HashSize+4:])
	t.stats = decodeStats(v[chainhash.HashSize+12:])
	t.valid = true
	return t, true
}

// baseOptions are the base's leveldb options. The build writes the whole
// index at once, in large transactions whose keys span the key space:
// with goleveldb's defaults (4 MiB write buffer and tables, 10 MiB in level
// 1, a compaction at 4 tables in level 0) it spent most of its time
// rewriting tables from level to level, and a build of the 3M chain took
// 66 s; with larger tables, levels and write buffer, and compactions at 8
// tables in level 0, 27 s (docs/BENCHMARKS.md).
func baseOptions() *opt.Options {
	return &opt.Options{
		Compression:            opt.NoCompression,
		WriteBuffer:            32 << 20,
		CompactionTableSize:    8 << 20,
		CompactionTotalSize:    64 << 20,
		CompactionL0Trigger:    8,
		WriteL0SlowdownTrigger: 16,
		WriteL0PauseTrigger:    24,
	}
}

// openBase opens the base for an index being prepared. An index that
// names a base block reads its base; an empty index is built into the base
// (resuming the build a crash or a shutdown stopped, when the base's tip
// is still in the main chain); any other index has no base.
func (idx *ElectrumIndex) openBase(chain *blockchain.BlockChain) error {
	if idx.basePath == "" {
		return nil
	}
	var (
		top   int32
		named bool
		empty bool
	)
	err := idx.db.View(func(dbTx database.Tx) error {
		if v := dbTx.Metadata().Get(baseKey); v != nil {
			_, h, ok := decodeTipVal(v)
			if !ok {
				return fmt.Errorf("electrum index: malformed base entry")
			}
			top, named = h, true
		}
		empty = readTip(dbTx).Height < 0
		if named && ffldbHasRows(dbTx.Metadata()) {
			idx.ffldbRows.Store(true)
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case named:
		o := baseOptions()
		o.ErrorIfMissing = true
		ldb, err := leveldb.OpenFile(idx.basePath, o)
		if err != nil {
			return fmt.Errorf("electrum index: opening its base %s: %w", idx.basePath, err)
		}
		idx.base, idx.baseTop = ldb, top
		// Deletes of batches whose naming a crash let through, but not
		// their application.
		if err := idx.applyPending(ldb, top); err != nil {
			ldb.Close()
			idx.base = nil
			return fmt.Errorf("electrum index: its base's pending deletes: %w", err)
		}
		if ok, _ := ldb.Has(baseDirtyKey, nil); ok {
			idx.baseDirty = true
			return nil
		}
		// An extension whose naming a crash took leaves the base's own
		// tip above the height ffldb names (trail.go, trailExtend): its
		// rows are those of the blocks up to that tip, which the next
		// extension takes up if the chain still has it.
		if v, err := ldb.Get(baseTipKey, nil); err == nil {
			bt, ok := decodeBaseTip(v)
			switch {
			case !ok:
				idx.markBaseDirty()
			case bt.height > top:
				idx.baseAhead = bt
				log.Infof("Electrum index: its base holds blocks up to height %d, above the %d it is named for",
					bt.height, top)
			}
		}
		return nil
	case !empty:
		return nil
	}
	ldb, err := leveldb.OpenFile(idx.basePath, baseOptions())
	if err != nil {
		return fmt.Errorf("electrum index: opening its base %s: %w", idx.basePath, err)
	}
	v, err := ldb.Get(baseTipKey, nil)
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
		// Nothing was committed: a new base (a crash before the first
		// commit leaves nothing leveldb keeps).
	case err != nil:
		ldb.Close()
		return err
	default:
		t, ok := decodeBaseTip(v)
		if ok && chain.MainChainHasBlock(&t.hash) {
			log.Infof("Electrum index: resuming its build from height %d", t.height)
			idx.buildFrom = t
			break
		}
		log.Infof("Electrum index: the build under way ended off the main chain; starting it again")
		ldb.Close()
		if err := os.RemoveAll(idx.basePath); err != nil {
			return err
		}
		return idx.openBase(chain)
	}
	idx.building = ldb
	return nil
}

// finishBase ends the build of the base: one ffldb transaction makes the
// base's tip the index tip and names the base's block. From then on the
// base is read, and only read.
func (idx *ElectrumIndex) finishBase() error {
	if idx.building == nil {
		return nil
	}
	idx.mu.Lock()
	t := idx.buildTip
	idx.mu.Unlock()
	if !t.valid {
		// Nothing was built (a chain without blocks): no base.
		idx.CloseBase()
		return os.RemoveAll(idx.basePath)
	}
	if err := idx.db.Update(func(dbTx database.Tx) error { return idx.nameBase(dbTx, t) }); err != nil {
		return err
	}
	log.Infof("Electrum index: built into %s up to height %d", idx.basePath, t.height)
	if err := idx.Init(); err != nil {
		return err
	}
	idx.goHoldHeavy()
	return nil
}

// nameBase makes the base's tip t the index tip in dbTx and names the
// base's block, and makes the base being built the one the index reads,
// up to t. idx.mu is not held.
func (idx *ElectrumIndex) nameBase(dbTx database.Tx, t memTip) error {
	return idx.nameTip(dbTx, t, true)
}

// nameExtension is nameBase for an extension beside the chain, which goes
// on building into the base.
func (idx *ElectrumIndex) nameExtension(dbTx database.Tx, t memTip) error {
	return idx.nameTip(dbTx, t, false)
}

// nameTip is nameBase, ending the build or not.
func (idx *ElectrumIndex) nameTip(dbTx database.Tx, t memTip, end bool) error {
	meta := dbTx.Metadata()
	if err := meta.Put(statsKey, encodeStats(t.stats)); err != nil {
		return err
	}
	if err := meta.Put(baseKey, tipVal(&t.hash, t.height)); err != nil {
		return err
	}
	if err := putTip(meta, &t.hash, t.height); err != nil {
		return err
	}
	idx.mu.Lock()
	if end {
		idx.base, idx.building = idx.building, nil
		idx.buildTip = memTip{}
	}
	idx.baseTop = t.height
	idx.setTip(t)
	// The tip moves without the held rows (held.go).
	idx.forgetHeld()
	idx.mu.Unlock()
	return nil
}

// markBaseDirty records that the base holds rows above its height that no
// named extension covers (an extension given up, or cut short by a crash):
// hidden from every view, but not what a later extension would write, so
// the base is never extended again.
func (idx *ElectrumIndex) markBaseDirty() {
	idx.mu.Lock()
	idx.baseDirty = true
	idx.mu.Unlock()
	if idx.base != nil {
		if err := idx.base.Put(baseDirtyKey, []byte{1}, nil); err != nil {
			log.Warnf("Electrum index: marking its base: %v", err)
		}
	}
}

// baseDirtyKey marks a base markBaseDirty marked.
var baseDirtyKey = []byte("\x00electrum base dirty")

// padKey is the key of forceDurable's padding row.
var padKey = []byte("electrumdurabilitypadding")

// padBytes is the padding's size: with it in ffldb's write cache, the cache
// counts more than two thirds of its 100 MiB, and btcd v0.26.2's ffldb
// writes the whole cache to leveldb at the next commit.
const padBytes = 70 << 20

// pad is the padding's value. ffldb keeps the slices it is given until it
// writes them out; this one is never written to.
var pad = sync.OnceValue(func() []byte { return make([]byte, padBytes) })

// forceDurable returns once every transaction committed to db before it
// was called is written to leveldb, as after a clean close: ffldb keeps
// commits in a write cache it writes out only when the cache is large or
// five minutes have passed, and a crash loses what it holds. It commits a
// padding row and deletes it: the delete's commit finds the cache over
// ffldb's mark and writes it out (or the padding's commit does, when
// another commit came between the two, or when five minutes have passed).
// TestForceDurable checks it on a copy of the database's files taken
// without closing it.
func forceDurable(db database.DB) error {
	if err := db.Update(func(dbTx database.Tx) error { return dbTx.Metadata().Put(padKey, pad()) }); err != nil {
		return err
	}
	return db.Update(func(dbTx database.Tx) error { return dbTx.Metadata().Delete(padKey) })
}

// pendingPrefix starts the keys of the base's pending deletes: an extension
// beside the chain (trail.go, trailExtend) does not delete the rows its
// blocks spend when it commits a batch into the base, since readers of the
// height named before it still see them, and a crash may yet take that
// naming from ffldb. It writes their keys under pendingPrefix and the
// batch's height instead, and deletes them once the batch's naming is
// durable (applyPending).
var pendingPrefix = []byte("\x00electrum pending ")

// pendingChunk is the most keys one record of pending deletes holds.
const pendingChunk = 16384

// pendingKey is the key of the chunk-th record of the pending deletes of
// the batch ending at height.
func pendingKey(height int32, chunk int) []byte {
	k := binary.BigEndian.AppendUint32(bytes.Clone(pendingPrefix), uint32(height))
	return binary.BigEndian.AppendUint32(k, uint32(chunk))
}

// putPending writes the keys of deletes (utxoKeyLen each) pending at height.
func putPending(t *leveldb.Transaction, height int32, deletes []byte) error {
	for chunk := 0; len(deletes) > 0; chunk++ {
		n := min(len(deletes), pendingChunk*utxoKeyLen)
		if err := t.Put(pendingKey(height, chunk), deletes[:n], nil); err != nil {
			return err
		}
		deletes = deletes[n:]
	}
	return nil
}

// applyPending deletes the rows of every batch of pending deletes up to
// height upTo, whose naming is durable, and the batches' records.
func (idx *ElectrumIndex) applyPending(base *leveldb.DB, upTo int32) error {
	it := base.NewIterator(util.BytesPrefix(pendingPrefix), nil)
	defer it.Release()
	var tr *leveldb.Transaction
	for it.Next() {
		k := it.Key()
		if len(k) != len(pendingPrefix)+8 || int32(binary.BigEndian.Uint32(k[len(pendingPrefix):])) > upTo {
			continue
		}
		if tr == nil {
			var err error
			if tr, err = base.OpenTransaction(); err != nil {
				return err
			}
			defer tr.Discard()
		}
		v := it.Value()
		for off := 0; off+utxoKeyLen <= len(v); off += utxoKeyLen {
			if err := tr.Delete(v[off:off+utxoKeyLen], nil); err != nil {
				return err
			}
		}
		if err := tr.Delete(k, nil); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if tr == nil {
		return nil
	}
	return tr.Commit()
}

// removeBase deletes the base (the index is dropped).
func (idx *ElectrumIndex) removeBase() error {
	if idx.basePath == "" {
		return nil
	}
	idx.CloseBase()
	idx.baseTop = 0
	return os.RemoveAll(idx.basePath)
}

// baseTx is a rowWriter into a leveldb transaction: each row goes straight
// into the transaction's memory table (a batch would copy it twice more).
// With pending set, deletes are appended to it instead (pendingPrefix).
type baseTx struct {
	t       *leveldb.Transaction
	pending *[]byte
}

func (w baseTx) Put(k, v []byte) error { return w.t.Put(k, v, nil) }

func (w baseTx) Delete(k []byte) error {
	if w.pending != nil {
		*w.pending = append(*w.pending, k...)
		return nil
	}
	return w.t.Delete(k, nil)
}

package indexers

import (
	"fmt"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// The index's store: a goleveldb database of its own in a directory beside
// btcd's block database. The writer (writer.go) is its only writer; every
// block, catch-up batch and undo moves the rows and the index tip together
// in one atomic batch. Readers read a snapshot, which holds a tip and the
// rows of exactly that tip.

// DefaultCacheMiB is the store's block cache unless Options say otherwise.
const DefaultCacheMiB = 64

// storeOptions are goleveldb's options for the index (docs/BENCHMARKS.md has
// the measurements): a level 1 of 640 MiB holds an index of that size, so a
// build does not rewrite tables level to level; the memtable is small, as a
// tip block's inserts cost more the more it holds; blocks are 16 KiB, so the
// first read of a long history is a file read a block (bulkView).
func storeOptions(cacheMiB int) *opt.Options {
	if cacheMiB <= 0 {
		cacheMiB = DefaultCacheMiB
	}
	return &opt.Options{
		Compression:            opt.NoCompression,
		BlockSize:              16 << 10,
		BlockCacheCapacity:     cacheMiB << 20,
		WriteBuffer:            8 << 20,
		CompactionTableSize:    8 << 20,
		CompactionTotalSize:    64 << 20,
		CompactionL0Trigger:    8,
		WriteL0SlowdownTrigger: 16,
		WriteL0PauseTrigger:    24,
	}
}

// openStore opens (creating) the store in dir.
func openStore(dir string, cacheMiB int) (*leveldb.DB, error) {
	return leveldb.OpenFile(dir, storeOptions(cacheMiB))
}

// kvReader is what the read paths and undo read rows through: a store
// snapshot (snapView), or one that reads around the block cache
// (bulkView).
type kvReader interface {
	// Get returns the value of k, nil when there is none.
	Get(k []byte) []byte
	// Cursor returns a cursor over all rows; the reader releases it.
	Cursor() cursor
	// Bulk returns a reader of the same rows for a read that touches
	// more blocks than the store's cache should keep for it.
	Bulk() kvReader
	// Err is the first read that failed (a disk's error): a row that could
	// not be read is that error, never a row that is not there.
	Err() error
}

// cursor steps through rows in key order. Key and Value are valid until
// the next move.
type cursor interface {
	Seek(k []byte) bool
	Next() bool
	Key() []byte
	Value() []byte
}

// snapView is a kvReader over one snapshot of the store. Its cursors are
// released by release; they may be used from several goroutines at once,
// one goroutine per cursor.
type snapView struct {
	snap *leveldb.Snapshot
	its  []iterator.Iterator
	mu   chan struct{} // guards its; a one-slot semaphore
	// done lets go of the snapshot; nil: release it.
	done func()
	fail atomic.Pointer[error] // Err
}

func newSnapView(db *leveldb.DB) (*snapView, error) {
	s, err := db.GetSnapshot()
	if err != nil {
		return nil, err
	}
	v := &snapView{snap: s, mu: make(chan struct{}, 1)}
	return v, nil
}

func (v *snapView) Get(k []byte) []byte { return v.get(k, nil) }

func (v *snapView) get(k []byte, ro *opt.ReadOptions) []byte {
	val, err := v.snap.Get(k, ro)
	if err != nil && err != leveldb.ErrNotFound {
		v.failed(err)
	}
	if err != nil {
		return nil // goleveldb may return a value with ErrNotFound
	}
	return val
}

func (v *snapView) failed(err error) {
	err = fmt.Errorf("%w: %w", errStoreRead, err)
	v.fail.CompareAndSwap(nil, &err)
}

func (v *snapView) Err() error {
	if p := v.fail.Load(); p != nil {
		return *p
	}
	return nil
}

func (v *snapView) Cursor() cursor { return v.cursor(nil) }

func (v *snapView) cursor(ro *opt.ReadOptions) cursor {
	it := v.snap.NewIterator(nil, ro)
	v.mu <- struct{}{}
	v.its = append(v.its, it)
	<-v.mu
	return iterCursor{it, v}
}

func (v *snapView) Bulk() kvReader { return bulkView{v} }

// bulkView reads v's snapshot around the block cache: a block it reads
// comes from goleveldb's buffer pool and goes back to it after use. Its
// cursors are released with v's.
type bulkView struct{ v *snapView }

var bulkRead = &opt.ReadOptions{DontFillCache: true}

func (b bulkView) Cursor() cursor      { return b.v.cursor(bulkRead) }
func (b bulkView) Bulk() kvReader      { return b }
func (b bulkView) Get(k []byte) []byte { return b.v.get(k, bulkRead) }
func (b bulkView) Err() error          { return b.v.Err() }

// release releases the snapshot and every cursor handed out.
func (v *snapView) release() {
	for _, it := range v.its {
		it.Release()
	}
	if v.done != nil {
		v.done()
		return
	}
	v.snap.Release()
}

// pubSnap is a snapshot the writer took right after a commit, with the tip
// that commit wrote: every read that starts before the next commit shares
// it (no snapshot, no tip row of its own). It is released when it is no
// longer the latest and its last reader is done.
type pubSnap struct {
	snap *leveldb.Snapshot
	tip  Tip
	refs atomic.Int32 // its readers, plus one while it is the latest
}

func (p *pubSnap) unref() {
	if p.refs.Add(-1) == 0 {
		p.snap.Release()
	}
}

// publish makes the store as it is now, holding tip, the snapshot new reads
// use. Only the writer writes the store, and it calls publish after each
// write that moves the tip, so the snapshot holds exactly tip.
func (idx *ElectrumIndex) publish(tip Tip) {
	s, err := idx.store.GetSnapshot()
	if err != nil {
		// The store is closed: there is nothing newer to read.
		return
	}
	p := &pubSnap{snap: s, tip: tip}
	p.refs.Store(1)
	if old := idx.pub.Swap(p); old != nil {
		old.unref()
	}
}

// acquire returns the latest published snapshot with a reference for the
// caller; nil when the index is closed. A snapshot whose count reached
// zero was released after a newer one replaced it, so the loop finds that
// one.
func (idx *ElectrumIndex) acquire() *pubSnap {
	for {
		p := idx.pub.Load()
		if p == nil {
			return nil
		}
		if n := p.refs.Load(); n > 0 && p.refs.CompareAndSwap(n, n+1) {
			return p
		}
	}
}

// iterCursor is a cursor over a goleveldb iterator; a failed move ends it, its error v's.
type iterCursor struct {
	it iterator.Iterator
	v  *snapView
}

func (c iterCursor) Seek(k []byte) bool { return c.ok(c.it.Seek(k)) }
func (c iterCursor) Next() bool         { return c.ok(c.it.Next()) }
func (c iterCursor) ok(moved bool) bool {
	if err := c.it.Error(); !moved && err != nil {
		c.v.failed(err)
	}
	return moved
}
func (c iterCursor) Key() []byte   { return c.it.Key() }
func (c iterCursor) Value() []byte { return c.it.Value() }

// batchWriter is a rowWriter into a goleveldb batch; the batch copies every
// key and value it is given.
type batchWriter struct{ b *leveldb.Batch }

func (w batchWriter) Put(k, v []byte) error { w.b.Put(k, v); return nil }
func (w batchWriter) Delete(k []byte) error { w.b.Delete(k); return nil }
func (w batchWriter) copiesRows()           {}

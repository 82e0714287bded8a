package indexers

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb"
	lerrors "github.com/syndtr/goleveldb/leveldb/errors"
)

// ElectrumIndexName is the human-readable name of the index.
const ElectrumIndexName = "electrum index"

// DefaultUndoBlocks is how many of the newest blocks keep an undo record.
const DefaultUndoBlocks = 288

// DefaultBatchBytes is the size of a catch-up batch (its rows' keys and
// values and their bookkeeping, assembly.size).
const DefaultBatchBytes = 16 << 20

// DefaultProgressInterval is the interval of the catch-up's progress line.
const DefaultProgressInterval = 10 * time.Second

// Options configure an ElectrumIndex. The zero value of every field but Dir
// is usable.
type Options struct {
	// Dir is the directory of the index's store (created when missing).
	Dir string
	// CacheMiB is the store's block cache (DefaultCacheMiB when 0).
	CacheMiB int
	// UndoBlocks is how many of the newest blocks keep an undo record
	// (DefaultUndoBlocks when 0). A block with none is undone from the
	// block itself, with its spent outputs rebuilt from the index.
	UndoBlocks int
	// BatchBytes is the size of a catch-up batch (DefaultBatchBytes when 0).
	BatchBytes int
	// CatchUpMemory is the memory in MiB a large catch-up may take on top of
	// what the process holds when it starts (DefaultCatchUpMemory when 0).
	CatchUpMemory int
	// ProgressInterval is the interval of the catch-up's progress line
	// (DefaultProgressInterval when 0).
	ProgressInterval time.Duration
	// OnCommit, when set, is called by the writer after every commit that
	// moved the index tip, outside any lock of the index. It must not
	// block for long, nor wait for Sync, which waits for it to return.
	OnCommit func(Commit)
	// OnBlock, when set, receives the pass of every block the writer
	// indexes (observe.go).
	OnBlock func(BlockPass)
	// Interrupt, once closed, stops NewElectrumIndex's wipe of a store of
	// another schema version with an error; the next start finishes it.
	Interrupt <-chan struct{}
}

// Commit is what one commit of the writer changed.
type Commit struct {
	// Tip is the new index tip.
	Tip Tip
	// Touched are the scripts whose confirmed history the committed
	// blocks changed, when All is false.
	Touched []ScriptHash
	// Confirmed are the transactions of the committed blocks, when All is
	// false: btcd's pool may still hold them for a moment.
	Confirmed map[chainhash.Hash]struct{}
	// All is true when the commit disconnected blocks (an undo is
	// published with the commit after it) or connected too many to list:
	// every script may have changed.
	All bool
}

// ElectrumIndex is the Electrum index: a store of its own that one writer
// keeps following btcd's main chain, and the read API over it (read.go).
// Create it with NewElectrumIndex and hand it to NewManager.
type ElectrumIndex struct {
	db    database.DB // btcd's database: blocks and spend journals
	opts  Options
	store *leveldb.DB

	// stuck is set when a write of the store failed (storeFailed): the
	// writer writes nothing more in this run, and Close leaves the store to
	// the process's exit.
	stuck atomic.Bool
	// pub is a snapshot of the store taken after the writer's last commit,
	// with the tip it holds (store.go); nil before the store is loaded.
	pub atomic.Pointer[pubSnap]
	// statuses caches SHA-256 midstates of long confirmed histories.
	statuses *statusCache
	// scanSplit is how many unspent rows (scan.go) or history entries
	// (readHistory) of a script one cursor reads before the rest is read
	// by several.
	scanSplit int

	w        *writer
	progress progressState

	closeOnce sync.Once
}

// NewElectrumIndex opens the index's store in opts.Dir. db is btcd's
// database, which the index reads blocks and spend journals from.
func NewElectrumIndex(db database.DB, opts Options) (*ElectrumIndex, error) {
	if opts.Dir == "" {
		return nil, errors.New("electrum index: no store directory")
	}
	for remade := false; ; remade = true {
		store, err := openStore(opts.Dir, opts.CacheMiB)
		damaged := lerrors.IsCorrupted(err)
		if err == nil {
			var idx *ElectrumIndex
			if idx, err = newIndexOn(db, opts, store); err == nil {
				return idx, nil
			}
			damaged = lerrors.IsCorrupted(err)
		} else {
			err = fmt.Errorf("electrum index: open store %s: %w", opts.Dir, err)
		}
		// A store whose files fail goleveldb's checks (a torn manifest, a
		// table's checksum) is made anew and the index built again, as
		// any index that fails verification: the chain is intact.
		if remade || !damaged {
			return nil, err
		}
		log.Warnf("Electrum index store %s is damaged (%v): deleting it to build the index again", opts.Dir, err)
		if err := removeStore(opts.Dir); err != nil {
			return nil, fmt.Errorf("electrum index: delete damaged store %s: %w", opts.Dir, err)
		}
	}
}

// newIndexOn makes the index on an open store (closed if that fails),
// options at their defaults where zero.
func newIndexOn(db database.DB, opts Options, store *leveldb.DB) (*ElectrumIndex, error) {
	opts.UndoBlocks = cmp.Or(max(opts.UndoBlocks, 0), DefaultUndoBlocks)
	opts.BatchBytes = cmp.Or(max(opts.BatchBytes, 0), DefaultBatchBytes)
	opts.CatchUpMemory = cmp.Or(max(opts.CatchUpMemory, 0), DefaultCatchUpMemory)
	opts.ProgressInterval = cmp.Or(max(opts.ProgressInterval, 0), DefaultProgressInterval)
	idx := &ElectrumIndex{db: db, opts: opts, store: store,
		statuses: newStatusCache(statusCacheEntries), scanSplit: scanSplitAfter}
	if err := idx.prepareStore(opts.Interrupt); err != nil {
		store.Close()
		return nil, err
	}
	return idx, nil
}

// Close stops the writer and closes the store. Call it before btcd's
// database is closed: the writer reads blocks from it.
func (idx *ElectrumIndex) Close() error {
	var err error
	idx.closeOnce.Do(func() {
		if idx.w != nil {
			idx.w.stop()
		}
		if p := idx.pub.Swap(nil); p != nil {
			p.unref()
		}
		if idx.stuck.Load() {
			// A failed write may keep the store's write lock (a failed
			// OpenTransaction), which Close would wait for; the process's
			// exit closes the files, and the next start reconciles.
			log.Errorf("Electrum index: the store is left open after its failed write")
			return
		}
		err = idx.store.Close()
	})
	return err
}

// prepareStore writes the schema version of a new store and wipes one of
// another version, or whose tip is damaged, to build it again. A store
// without a version is new, or its wipe was interrupted: it is wiped.
func (idx *ElectrumIndex) prepareStore(stop <-chan struct{}) error {
	v, err := idx.store.Get(versionKey, nil)
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
	case err != nil:
		return err
	case len(v) == 4 && binary.BigEndian.Uint32(v) == schemaVersion:
		t, err := idx.loadTip()
		if err == nil {
			idx.publish(t.tip())
			return nil
		}
		if !errors.As(err, new(*CorruptError)) {
			return err
		}
		log.Warnf("%v: rebuilding the Electrum index", err)
	default:
		log.Infof("Electrum index has another schema version, rebuilding it")
	}
	if err := idx.wipe(stop); err != nil {
		return err
	}
	b := new(leveldb.Batch)
	ver := make([]byte, 4)
	binary.BigEndian.PutUint32(ver, schemaVersion)
	b.Put(versionKey, ver)
	b.Put(tipKey, tipVal(&chainhash.Hash{}, -1))
	b.Put(statsKey, encodeStats(sizeStats{}))
	if err := idx.store.Write(b, nil); err != nil {
		return err
	}
	idx.publish(Tip{Height: -1})
	return nil
}

// wipe deletes every row of the store, the schema version first: a wipe
// a crash or stop interrupts is finished at the next start (prepareStore).
func (idx *ElectrumIndex) wipe(stop <-chan struct{}) error {
	if err := idx.store.Delete(versionKey, nil); err != nil {
		return err
	}
	it := idx.store.NewIterator(nil, nil)
	defer it.Release()
	b := new(leveldb.Batch)
	for it.Next() {
		b.Delete(it.Key())
		if b.Len() >= 100000 {
			if interrupted(stop) {
				return errInterrupted
			}
			if err := idx.store.Write(b, nil); err != nil {
				return err
			}
			b.Reset()
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return idx.store.Write(b, nil)
}

// memTip is the index tip with its cumulative transaction count and size.
type memTip struct {
	hash    chainhash.Hash
	height  int32
	txCount uint64
	stats   sizeStats
}

func (t memTip) tip() Tip { return Tip{Hash: t.hash, Height: t.height} }

// loadTip reads the index tip, its transaction count and size from the
// store, which only the caller writes. A row that cannot be read is that
// error; one missing or malformed is a CorruptError.
func (idx *ElectrumIndex) loadTip() (memTip, error) {
	var rerr error
	get := func(k []byte) []byte {
		v, err := idx.store.Get(k, nil)
		if err != nil && !errors.Is(err, leveldb.ErrNotFound) && rerr == nil {
			rerr = err
		}
		return v
	}
	hash, height, tipOK := decodeTipVal(get(tipKey))
	t := memTip{hash: hash, height: height, stats: decodeStats(get(statsKey))}
	blkOK := height < 0
	if tipOK && !blkOK {
		count, bhash, ok := decodeBlkVal(get(blkKey(height)))
		t.txCount, blkOK = count, ok && bhash == hash
	}
	switch {
	case rerr != nil:
		return memTip{}, rerr
	case !tipOK:
		return memTip{}, corruptf("malformed tip entry")
	case !blkOK:
		return memTip{}, corruptf("no block row for tip %v at height %d", hash, height)
	}
	return t, nil
}

// Size returns the index's rows at its tip and their key and value bytes.
func (idx *ElectrumIndex) Size() (rows, bytes int64, err error) {
	v, err := idx.store.Get(statsKey, nil)
	if err != nil {
		return 0, 0, err
	}
	s := decodeStats(v)
	return s.Rows, s.Bytes, nil
}

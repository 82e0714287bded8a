package indexers

import (
	"errors"
	"runtime"
	"strings"
	"sync"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/comparer"
)

// Internals exposed to connect_test.go.

// StoreSpy watches every key comparison the index's store makes, with the
// stack that made it, to tell which code reads the store. Every read of a
// goleveldb database that finds anything (a Get, a Has, an iterator's seek
// or step, over the memtable or the tables) compares keys; so does every
// write (it inserts into a memtable), under one of storeWrites.
type StoreSpy struct {
	mu sync.Mutex
	// blockReads are the stacks of comparisons made for the writer's block
	// path (fetching, planning, assembling and committing blocks) outside
	// a write of the store: reads.
	blockReads []string
	// blockWrites counts the comparisons of the block path's commits.
	blockWrites int
	// undoReads counts the comparisons made for the writer's undo.
	undoReads int
}

// indexersPkg is the prefix of this package's function names.
const indexersPkg = "github.com/btcd-electrum/btcd-electrum/indexers."

// blockPathFuncs are the functions of the writer's block path: a stack
// through any of them is the block path's.
var blockPathFuncs = []string{
	"(*writer).catchUp",
	"(*writer).fetcher",
	"(*writer).fetchAndPlan",
	"(*writer).fetchBlock",
	"(*writer).assemble",
	"(*writer).commit",
	"planBlockRaw",
	"applyConnect",
	"undoRecord",
}

// storeWrites are goleveldb's writes: a batch, or a transaction's puts,
// deletes and commit. They are the only store calls the block path may
// make.
var storeWrites = map[string]bool{
	"github.com/syndtr/goleveldb/leveldb.(*DB).Write":            true,
	"github.com/syndtr/goleveldb/leveldb.(*DB).OpenTransaction":  true,
	"github.com/syndtr/goleveldb/leveldb.(*Transaction).Put":     true,
	"github.com/syndtr/goleveldb/leveldb.(*Transaction).Delete":  true,
	"github.com/syndtr/goleveldb/leveldb.(*Transaction).Write":   true,
	"github.com/syndtr/goleveldb/leveldb.(*Transaction).Commit":  true,
	"github.com/syndtr/goleveldb/leveldb.(*Transaction).Discard": true,
}

func (s *StoreSpy) observe() {
	var pcs [160]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	var block, write, undo bool
	var stack []string
	for {
		f, more := frames.Next()
		stack = append(stack, f.Function)
		switch {
		case storeWrites[f.Function]:
			write = true
		case strings.HasPrefix(f.Function, indexersPkg+"(*writer).undoTip"):
			undo = true
		case strings.HasPrefix(f.Function, indexersPkg):
			name := strings.TrimPrefix(f.Function, indexersPkg)
			for _, fn := range blockPathFuncs {
				if strings.HasPrefix(name, fn) {
					block = true
				}
			}
		}
		if !more {
			break
		}
	}
	if !block && !undo {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case block && write:
		s.blockWrites++
	case block:
		if len(s.blockReads) < 8 {
			s.blockReads = append(s.blockReads, strings.Join(stack, "\n\t"))
		} else {
			s.blockReads = append(s.blockReads, "")
		}
	}
	if undo {
		s.undoReads++
	}
}

// Take returns what the spy saw since the last Take and forgets it: the
// number of the block path's reads and the stacks of the first of them,
// the comparisons of the block path's writes, and of the undo's.
func (s *StoreSpy) Take() (blockReads int, stacks []string, blockWrites, undoReads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.blockReads {
		if st != "" {
			stacks = append(stacks, st)
		}
	}
	blockReads, blockWrites, undoReads = len(s.blockReads), s.blockWrites, s.undoReads
	s.blockReads, s.blockWrites, s.undoReads = nil, 0, 0
	return blockReads, stacks, blockWrites, undoReads
}

// spyComparer is goleveldb's bytewise comparer (it keeps its name, so the
// store opens with it) reporting each comparison to a spy.
type spyComparer struct{ spy *StoreSpy }

func (c spyComparer) Compare(a, b []byte) int {
	c.spy.observe()
	return comparer.DefaultComparer.Compare(a, b)
}
func (c spyComparer) Name() string { return comparer.DefaultComparer.Name() }
func (c spyComparer) Separator(dst, a, b []byte) []byte {
	return comparer.DefaultComparer.Separator(dst, a, b)
}
func (c spyComparer) Successor(dst, b []byte) []byte {
	return comparer.DefaultComparer.Successor(dst, b)
}

// SpyOnStore reopens the index's store with a spy on its comparisons. Call
// it before the index's manager is initialised (the writer not started).
func (idx *ElectrumIndex) SpyOnStore() (*StoreSpy, error) {
	if idx.w != nil {
		return nil, errors.New("the writer is running")
	}
	if err := idx.store.Close(); err != nil {
		return nil, err
	}
	spy := &StoreSpy{}
	o := storeOptions(idx.opts.CacheMiB)
	o.Comparer = spyComparer{spy}
	o.ErrorIfMissing = true
	store, err := leveldb.OpenFile(idx.opts.Dir, o)
	if err != nil {
		return nil, err
	}
	idx.store = store
	return spy, nil
}

// WriterIdle reports whether the writer runs no pass and has no wake-up
// pending: it then stays idle until something wakes it.
func (idx *ElectrumIndex) WriterIdle() bool {
	w := idx.w
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.wake) == 0 && w.started == w.finished
}

// WriterPasses returns the number of passes the writer's goroutine began.
func (idx *ElectrumIndex) WriterPasses() uint64 {
	w := idx.w
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started
}

// SchemaVersion is the version of the store's layout.
const SchemaVersion = schemaVersion

// TipBench runs the writer's block path on the chain's tip block, over and
// over, for BenchmarkConnectBlock: the index holds the chain up to the
// block's parent, and each Connect indexes the block as the writer does at
// the tip (plan, assembly into one batch with the undo record, commit);
// Undo takes it away again, from that record.
type TipBench struct {
	w      *writer
	height int32
	stop   chan struct{}
}

// NewTipBench brings the index (whose writer must not run) to the chain's
// tip, then undoes the tip block.
func (idx *ElectrumIndex) NewTipBench(chain *blockchain.BlockChain) (*TipBench, error) {
	if idx.w != nil {
		return nil, errors.New("the writer is running")
	}
	t, err := idx.loadTip()
	if err != nil {
		return nil, err
	}
	b := &TipBench{w: newWriter(idx, chain, t), height: chain.BestSnapshot().Height, stop: make(chan struct{})}
	if err := b.w.pass(b.stop); err != nil {
		return nil, err
	}
	if err := b.Undo(); err != nil {
		return nil, err
	}
	// The writer of a node gives the block btcd connects at the tip an
	// undo record: start the writer at the block's parent, so that the
	// block is not one btcd had on disk at its start.
	b.w.start = b.w.tip.tip()
	return b, nil
}

// Connect indexes block, the chain's tip block, with its spent outputs
// handed over as btcd's hook hands them.
func (b *TipBench) Connect(block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	if b.w.tip.height != b.height-1 {
		return errors.New("the index is not at the tip's parent")
	}
	b.w.hand(block, stxos)
	if err := b.w.catchUp(b.height, b.height, b.stop); err != nil {
		return err
	}
	if b.w.tip.height != b.height {
		return errors.New("the block was not indexed")
	}
	return nil
}

// Undo removes the tip block from the index.
func (b *TipBench) Undo() error { return b.w.undoTip() }

// republish publishes the store as it is, with the tip its tip row names
// (height -1 when the row is malformed), for tests that write rows into the
// store behind the writer's back.
func (idx *ElectrumIndex) republish() {
	tip := Tip{Height: -1}
	if hash, height, ok := decodeTipVal(get(idx.store, tipKey)); ok {
		tip = Tip{Hash: hash, Height: height}
	}
	idx.publish(tip)
}

// get returns the value of k in store, nil when there is none.
func get(store *leveldb.DB, k []byte) []byte {
	v, err := store.Get(k, nil)
	if err != nil {
		return nil
	}
	return v
}

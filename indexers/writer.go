package indexers

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/syndtr/goleveldb/leveldb"
)

// The writer: the one goroutine that writes the store. btcd's hooks hand it
// each connected block with its spent outputs and btcd's notifications wake
// it (manager.go), so it never runs inside the chain's transaction. Every
// batch holds its blocks' rows, their undo records and the new tip, so the
// store always holds exactly the rows of its tip, and a crash at any moment
// leaves a tip the next pass reconciles from (pass, pipeline.go).

var (
	// errInterrupted stops a pass on the interrupt or at Close; what was
	// committed stays and the next pass resumes from it.
	errInterrupted = errors.New("electrum index: interrupt requested")
	// errChainMoved stops a catch-up whose next block no longer extends
	// the index tip: the chain reorganized under it. The next pass
	// reconciles.
	errChainMoved = errors.New("electrum index: chain moved during catch-up")
	// errStoreFailed ends every pass after a failed write of the store.
	errStoreFailed = errors.New("electrum index: a write of its store failed; it writes nothing more " +
		"until the node is restarted, and then resumes from its last commit")
	// errStoreRead fails the answer or pass a read was for; the next tries again.
	errStoreRead = errors.New("electrum index: a read of its store failed")
)

// storeWrite runs write, a write of the store. A failed write may leave
// goleveldb unable to write again (its write lock kept, its journal torn),
// so the first failure stops the writer for the rest of the run: logged
// once, the index serves its last commit, and the next start reconciles.
func (idx *ElectrumIndex) storeWrite(write func() error) error {
	if idx.stuck.Load() {
		return errStoreFailed
	}
	if err := write(); err != nil {
		idx.stuck.Store(true)
		log.Criticalf("Electrum index: writing its store failed: %v. The index stays at its last commit "+
			"until the node is restarted (free disk space or repair the disk first); it then resumes from there", err)
		return fmt.Errorf("%w: %v", errStoreFailed, err)
	}
	return nil
}

// interrupted reports whether the channel is closed.
func interrupted(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// handoffBlocks bounds the blocks the hooks hand to the writer; beyond it the
// oldest are dropped and the writer reads them from btcd's database.
const handoffBlocks = 64

// handed is a connected block and its spent outputs, as btcd's hook gave them.
type handed struct {
	block *btcutil.Block
	stxos []blockchain.SpentTxOut
}

// writer owns every write to the store. A pass runs on its goroutine (the
// first one before the goroutine starts) and commits through a committer
// goroutine of its own (pipeline.go), which updates tip, spare and batch;
// the pass reads them once the committer has finished.
type writer struct {
	idx   *ElectrumIndex
	chain *blockchain.BlockChain
	tip   memTip
	// start is the chain's tip when the writer started: it and the blocks
	// below it were on disk then (undo.go). recent are the undo records
	// this run wrote.
	start  Tip
	recent []undoRef
	// spare is the last pass's committed batch, whose buffers the next
	// pass reuses: at the tip and in an initial download, where a pass is
	// a block, its rows, maps and sorts are not allocated anew.
	spare *assembly
	// batch is the committer's scratch leveldb.Batch, kept between passes
	// for the same reason; one committer runs at a time.
	batch *leveldb.Batch
	// undone: blocks were undone (first at undoneAt) and not yet
	// published. They are with the pass's next commit, or at its end
	// after awaitChain: wallets are not shown the tip between two
	// branches, where a transaction both confirm is in neither.
	undone   bool
	undoneAt time.Time
	settle   time.Duration

	wake chan struct{}
	quit chan struct{}
	done chan struct{}

	// mu guards the pass counters and the handoff.
	mu       sync.Mutex
	passed   *sync.Cond
	started  uint64 // passes begun
	finished uint64 // passes ended
	events   uint64 // commits and ends of passes, for Sync
	// handled is the tip of the last commit whose OnCommit has returned.
	handled Tip
	lastErr error
	handoff map[chainhash.Hash]handed
	order   []chainhash.Hash
}

func newWriter(idx *ElectrumIndex, chain *blockchain.BlockChain, tip memTip) *writer {
	best := chain.BestSnapshot()
	w := &writer{idx: idx, chain: chain, tip: tip, start: Tip{Hash: best.Hash, Height: best.Height}, wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}), handoff: make(map[chainhash.Hash]handed)}
	w.passed = sync.NewCond(&w.mu)
	return w
}

// start runs the first pass on the calling goroutine (the chain is not
// connecting blocks yet, so the index reaches the chain tip before the node
// serves), then the writer's goroutine.
func (idx *ElectrumIndex) start(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	t, err := idx.loadTip()
	if err != nil {
		return err
	}
	w := newWriter(idx, chain, t)
	if err := w.pass(interrupt); err != nil {
		return err
	}
	if err := w.pruneOldUndo(); err != nil {
		return err
	}
	// The first pass's commits ran OnCommit before the writer was idx.w;
	// the chain was still then, and from now on undos await its connects.
	w.handled, w.settle = w.tip.tip(), undoSettle
	idx.w = w
	go w.loop()
	return nil
}

// loop runs a pass after every wake-up until stop.
func (w *writer) loop() {
	defer close(w.done)
	for {
		select {
		case <-w.quit:
			return
		case <-w.wake:
		}
		w.mu.Lock()
		w.started++
		n := w.started
		w.mu.Unlock()
		err := w.pass(w.quit)
		if err != nil && !errors.Is(err, errInterrupted) && !errors.Is(err, errStoreFailed) {
			log.Errorf("Electrum index: %v", err)
		}
		if errors.Is(err, errStoreRead) {
			time.AfterFunc(time.Second, w.poke) // a disk's moment: try again soon
		}
		// A pass may have begun again while it waited (awaitChain).
		w.signal(func() { w.finished, w.lastErr = max(n, w.started), err })
	}
}

// stop ends the writer after its current batch.
func (w *writer) stop() {
	close(w.quit)
	<-w.done
	w.signal(func() { w.finished, w.lastErr = ^uint64(0), errInterrupted })
}

// poke wakes the writer; it never blocks.
func (w *writer) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// hand keeps a connected block for the writer. It runs inside btcd's hook,
// before btcd moves its tip: it only takes the handoff's lock.
func (w *writer) hand(block *btcutil.Block, stxos []blockchain.SpentTxOut) {
	w.mu.Lock()
	h := *block.Hash()
	if _, ok := w.handoff[h]; !ok {
		w.order = append(w.order, h)
	}
	w.handoff[h] = handed{block: block, stxos: stxos}
	for len(w.order) > handoffBlocks {
		delete(w.handoff, w.order[0])
		w.order = w.order[1:]
	}
	w.mu.Unlock()
}

// take returns and forgets the handed block with this hash.
func (w *writer) take(hash *chainhash.Hash) (handed, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	hb, ok := w.handoff[*hash]
	if ok {
		delete(w.handoff, *hash)
		for i := range w.order {
			if w.order[i] == *hash {
				w.order = append(w.order[:i], w.order[i+1:]...)
				break
			}
		}
	}
	return hb, ok
}

// Sync waits until the index holds the chain's tip as of the call and
// OnCommit has returned for it (should the chain have become shorter: the
// chain's tip once a pass begun after the call ends). It returns the error of
// the first such pass that failed; blocks arriving meanwhile do not hold it up.
func (idx *ElectrumIndex) Sync() error {
	w := idx.w
	if w == nil {
		return errors.New("electrum index: not started")
	}
	want := w.chain.BestSnapshot().Height
	for {
		w.mu.Lock()
		target := w.started + 1
		w.mu.Unlock()
		w.poke()
		for {
			w.mu.Lock()
			seen, ended, err, t := w.events, w.finished >= target, w.lastErr, w.handled
			w.mu.Unlock()
			if t.Height >= want && w.chain.MainChainHasBlock(&t.Hash) {
				return nil
			}
			if ended {
				if err != nil {
					return err
				}
				if t.Hash == w.chain.BestSnapshot().Hash {
					return nil
				}
				break
			}
			w.mu.Lock()
			for w.events == seen {
				w.passed.Wait()
			}
			w.mu.Unlock()
		}
	}
}

// signal wakes Sync's waiters after a commit or the end of a pass.
func (w *writer) signal(f func()) {
	w.mu.Lock()
	if f != nil {
		f()
	}
	w.events++
	w.passed.Broadcast()
	w.mu.Unlock()
}

// pass reconciles the index with the chain: undo while the tip is off the
// main chain, then catch up, until the index tip is the chain tip.
func (w *writer) pass(stop <-chan struct{}) error {
	defer func() {
		if w.undone { // stuck or not: a restart resumes from them
			w.undone = false
			w.idx.committed(Commit{Tip: w.tip.tip(), All: true})
		}
	}()
	for {
		if interrupted(stop) {
			return errInterrupted
		}
		if w.idx.stuck.Load() {
			return errStoreFailed
		}
		for w.tip.height >= 0 && !w.chain.MainChainHasBlock(&w.tip.hash) {
			if interrupted(stop) {
				return errInterrupted
			}
			if err := w.undoTip(); errors.Is(err, errStoreFailed) || errors.Is(err, errStoreRead) {
				return err
			} else if err != nil {
				log.Warnf("Electrum index tip %v at height %d is not in the main chain and "+
					"cannot be undone (%v): rebuilding the index", w.tip.hash, w.tip.height, err)
				if err := w.rebuild(stop); err != nil {
					return err
				}
			}
		}
		best := w.chain.BestSnapshot()
		if best.Height <= w.tip.height { // at the chain's tip, or it is reorganizing
			if w.awaitChain(stop) {
				continue
			}
			return nil
		}
		err := w.catchUp(w.tip.height+1, best.Height, stop)
		if err != nil && !errors.Is(err, errChainMoved) {
			return err
		}
	}
}

// undoSettle bounds awaitChain: btcd notifies a reorganization's
// disconnects, then at once its connects (it validated the branch before).
const undoSettle = 250 * time.Millisecond

// awaitChain waits, while undos are not published, until settle after the
// first, a wake-up (true: look at the chain again; it counts as a pass
// begun, for Sync), or stop.
func (w *writer) awaitChain(stop <-chan struct{}) bool {
	left := time.Until(w.undoneAt.Add(w.settle))
	if !w.undone || left <= 0 {
		return false
	}
	select {
	case <-w.wake:
		w.mu.Lock()
		w.started++
		w.mu.Unlock()
		return true
	case <-time.After(left):
	case <-stop:
	}
	return false
}

// rebuild empties the index; the pass then builds it from the genesis
// block. A store without its version is wiped by prepareStore, at the next
// start too should this one crash.
func (w *writer) rebuild(stop <-chan struct{}) error {
	if err := w.idx.store.Delete(versionKey, nil); err != nil {
		return err
	}
	if err := w.idx.prepareStore(stop); err != nil {
		return err
	}
	t, err := w.idx.loadTip()
	if err != nil {
		return err
	}
	w.tip, w.recent, w.undone = t, nil, false
	w.idx.committed(Commit{Tip: t.tip(), All: true})
	return nil
}

// committed publishes a new tip: the store as committed to readers, then
// OnCommit.
func (idx *ElectrumIndex) committed(c Commit) {
	idx.publish(c.Tip)
	if idx.opts.OnCommit != nil {
		idx.opts.OnCommit(c)
	}
	if w := idx.w; w != nil {
		w.signal(func() { w.handled = c.Tip })
	}
}

// fetchBlock returns the main-chain block at height with its spent
// outputs: the ones btcd's hook handed over, or read from btcd's database.
func (w *writer) fetchBlock(height int32) (*btcutil.Block, []byte, []blockchain.SpentTxOut, error) {
	hash, err := w.chain.BlockHashByHeight(height)
	if err != nil {
		return nil, nil, nil, errChainMoved
	}
	if hb, ok := w.take(hash); ok {
		return hb.block, nil, hb.stxos, nil
	}
	block, err := w.chain.BlockByHash(hash)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("block %d: %w", height, err)
	}
	block.SetHeight(height)
	var stxos []blockchain.SpentTxOut
	if height > 0 {
		stxos, err = w.chain.FetchSpendJournal(block)
		if err != nil {
			if !w.chain.MainChainHasBlock(hash) {
				return nil, nil, nil, errChainMoved
			}
			return nil, nil, nil, fmt.Errorf("spend journal of block %d: %w", height, err)
		}
	}
	raw, err := block.Bytes()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("block %d: %w", height, err)
	}
	return block, raw, stxos, nil
}

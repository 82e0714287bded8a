package indexers

import (
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
)

// Trailing: the index during initial block download.
//
// Written block by block, the index costs far more than the block it
// indexes: every row goes through ffldb's write cache, a persistent treap
// that copies a path of nodes for every key it merges, at every block's
// commit. The catch-up writes the same rows in large batches, sorted (the
// treap's inserts are cheaper in key order) and with outputs created and
// spent inside a batch cancelled before they reach the database. So while
// the chain connects old blocks (initial block download), the index trails
// it: the hooks leave such blocks alone and a background worker brings the
// index up to the chain in catch-up batches, each committed in its own
// database transaction with the index tip. At the tip (a block younger than
// the trail age, --electrumtrailage) every block is indexed inside the
// chain's own transaction, as always.
//
// The worker runs when the chain pauses (no old block for trailIdle: at the
// end of a download, or while the node waits for peers) or when the lag
// passes trailMinTxs. A run beside a downloading chain costs more than one
// after it: each batch's commit holds ffldb's write lock for seconds, which
// the chain waits for, and both want the same cores. Measured on the
// mainnet-shaped 1M chain (docs/BENCHMARKS.md), runs whenever the lag
// reached 150,000 transactions made a replay 2.25 times as long as without
// the index (79 CPU-seconds); runs in the pauses make it 1.6-1.8 times
// (59-68), and block by block it is 2.9 times.
//
// An index whose tip is its base's (a new index, built into its base at
// start) is extended instead: the worker's run writes into the base, takes
// no lock the chain waits for, and so starts at a lag of trailBaseTxs and
// follows the chain (trailExtend). That replay takes 1.10-1.13 times as
// long as without the index.
//
// Nothing of the index's atomicity is lost. The index tip is always a block
// of the main chain whose rows are all committed with it; a crash while
// trailing leaves an index at an older tip, which the next start catches
// up. The hooks and the worker's commits are serialized by ffldb's write
// lock, and decide on the in-memory tip, which moves only together with the
// rows:
//
//   - A connected block extending the index tip is indexed in the chain's
//     transaction unless it is old; any other connected block (above the
//     index tip) is left to the worker.
//   - A disconnected block at the index tip is unindexed in the chain's
//     transaction; one above the index tip was never indexed. Either way
//     its hash goes into the set of disconnected blocks, which it leaves
//     when it is connected again.
//   - The worker reads blocks by height while the chain may reorganize
//     (btcd's view of the chain by height moves just after the database
//     commits). A batch's blocks must link up, and it commits only if its
//     first block extends the index tip as it is when the batch's
//     transaction holds the write lock, and none of its blocks is in the
//     set of disconnected blocks: every block was in the main chain when
//     it was read, and one that left it since is in the set. Otherwise
//     the run stops and the worker starts again from the index tip.
//
// Readers are unaffected: every answer comes from one view with the index
// tip it holds. While trailing, that tip is behind the chain's, and the
// Electrum server answers for it (node/ reports the index tip as the
// server's tip).

// DefaultTrailAge is the age above which a connected block is left to the
// trailing worker: the horizon within which btcd considers its chain
// current.
const DefaultTrailAge = 24 * time.Hour

const (
	// trailMinTxs is the lag, in transactions, at which the worker starts a
	// run while blocks keep coming: it bounds how far the index falls
	// behind a download that never pauses (a run of this lag takes a few
	// minutes on 2 cores).
	trailMinTxs = 10_000_000
	// trailBaseTxs is that lag while the worker extends the base
	// (trailExtend): a run writes no ffldb row and takes no lock the
	// chain waits for, so it goes on beside the download, each run
	// building what came during the last.
	trailBaseTxs = 250_000
	// trailPromote bounds how far the index tip readers see falls behind
	// an extension: after it, the extension names what it has built at
	// its next batch, one flush of ffldb's write cache.
	trailPromote = 5 * time.Minute
	// trailPatience is how long the rows a crash left in the base above
	// its named height (baseAhead) wait for a chain below them that
	// connects no block, before they are given up and the index trails
	// through ffldb: a restarted node usually downloads those blocks
	// again within seconds.
	trailPatience = 30 * time.Second
	// trailIdle is how long the worker waits for the next old block before
	// it catches up a smaller lag.
	trailIdle = time.Second
	// trailRetry is the pause before the worker retries a failed run.
	trailRetry = time.Second
	// goneKeep bounds the set of disconnected block hashes.
	goneKeep = 4096
)

// errTrailMoved stops a trailing run whose batch no longer extends the
// index tip on the main chain.
var errTrailMoved = errors.New("electrum index: chain reorganized under a trailing batch")

// trailer is the state of trailing.
type trailer struct {
	age time.Duration
	// minTxs and idle are trailMinTxs and trailIdle (tests make them
	// small so that runs overlap the chain's reorganizations).
	minTxs  int64
	baseTxs int64
	idle    time.Duration
	// promote is how long an extension goes on before it names what it
	// built (trailPromote).
	promote time.Duration

	kick  chan bool // true: catch up now, whatever the lag
	quit  chan struct{}
	done  chan struct{}
	chain *blockchain.BlockChain

	// onCaughtUp, when set, is called after a run that committed blocks.
	onCaughtUp func()

	// patience is how long the base's rows above its named height wait
	// for a chain that connects no block (trailPatience).
	patience time.Duration

	// Guarded by ElectrumIndex.mu:
	// lastBlock is when the worker started, or the chain last connected
	// a block.
	lastBlock time.Time
	// skipped, runs and moved count blocks the hooks left to the worker,
	// runs that committed blocks, and runs stopped by a reorganization.
	skipped, runs, moved int
	// disconnects counts the blocks disconnected, for an extension of
	// the base beside the chain (trailExtend).
	disconnects int
	gone        map[chainhash.Hash]struct{}
	goneOrder   []chainhash.Hash
	waiters     []chan struct{}
}

// SetTrailing makes the index trail the chain during initial block download
// (blocks older than age; 0 turns trailing off, as it is by default).
// onCaughtUp, when not nil, is called after the worker has committed blocks
// (on its goroutine): the scripts those blocks touched were never reported
// by Touched. Call it before the chain is created with the index's manager.
func (idx *ElectrumIndex) SetTrailing(age time.Duration, onCaughtUp func()) {
	if age <= 0 {
		idx.trail = nil
		return
	}
	idx.trail = &trailer{
		age:        age,
		minTxs:     trailMinTxs,
		baseTxs:    trailBaseTxs,
		promote:    trailPromote,
		patience:   trailPatience,
		lastBlock:  time.Now(),
		idle:       trailIdle,
		kick:       make(chan bool, 1),
		quit:       make(chan struct{}),
		done:       make(chan struct{}),
		onCaughtUp: onCaughtUp,
		gone:       make(map[chainhash.Hash]struct{}),
	}
}

// startTrailing starts the worker once the index has caught up at start.
func (idx *ElectrumIndex) startTrailing(chain *blockchain.BlockChain) {
	t := idx.trail
	if t == nil || t.chain != nil {
		return
	}
	t.chain = chain
	idx.mu.Lock()
	t.lastBlock = time.Now()
	idx.mu.Unlock()
	go idx.trailLoop()
	// The catch-up at start may have been left to the worker
	// (extendAtStart, waiting for the chain).
	t.poke(true)
}

// StopTrailing stops the worker, waiting for a batch being committed. The
// node calls it before closing the database; the next start catches up
// what is left.
func (idx *ElectrumIndex) StopTrailing() {
	t := idx.trail
	if t == nil || t.chain == nil {
		return
	}
	select {
	case <-t.quit:
	default:
		close(t.quit)
	}
	<-t.done
}

// old reports whether a block is left to the worker.
func (t *trailer) old(block *btcutil.Block) bool {
	return time.Since(block.MsgBlock().Header.Timestamp) > t.age
}

// poke wakes the worker; now asks it to catch up whatever the lag.
func (t *trailer) poke(now bool) {
	select {
	case t.kick <- now:
	default:
		if now {
			// A pending plain kick is upgraded.
			select {
			case <-t.kick:
			default:
			}
			select {
			case t.kick <- true:
			default:
			}
		}
	}
}

// trailsConnect decides, inside the chain's transaction and with idx.mu
// held, whether a connected block is left to the worker.
func (idx *ElectrumIndex) trailsConnect(block *btcutil.Block) bool {
	t := idx.trail
	if t == nil || t.chain == nil || !idx.tip.valid {
		return false
	}
	t.lastBlock = time.Now()
	// A block connected again (reconsidered, or a reorganization back to
	// its branch) is in the main chain once more.
	delete(t.gone, *block.Hash())
	prev := block.MsgBlock().Header.PrevBlock
	extends := idx.tip.hash == prev && idx.tip.height == block.Height()-1
	old := t.old(block)
	switch {
	case extends && !old:
		return false
	case extends || idx.tip.height < block.Height()-1:
		t.skipped++
		t.poke(!old)
		return true
	}
	// The index is at or above the block's height: not a trailing state
	// (ConnectBlock's own checks decide).
	return false
}

// trailsDisconnect records a disconnected block and decides, inside the
// chain's transaction and with idx.mu held, whether the index never held it.
func (idx *ElectrumIndex) trailsDisconnect(block *btcutil.Block) bool {
	t := idx.trail
	if t == nil || t.chain == nil {
		return false
	}
	t.disconnects++
	h := *block.Hash()
	if _, ok := t.gone[h]; !ok {
		t.gone[h] = struct{}{}
		t.goneOrder = append(t.goneOrder, h)
		if len(t.goneOrder) > goneKeep {
			// The oldest disconnects are long settled: no batch read
			// before them is still on its way.
			delete(t.gone, t.goneOrder[0])
			t.goneOrder = t.goneOrder[1:]
		}
	}
	return idx.tip.valid && block.Height() > idx.tip.height
}

// trailCommit commits a trailing batch's transaction dbTx if the batch's
// blocks, whose first is at height first on parent prev, extend the index
// tip and are all still in the main chain, and moves the in-memory tip to
// tip with it. It runs while dbTx holds ffldb's write lock, so no hook runs
// meanwhile; the in-memory tip moves before the commit, so none runs between
// the commit and it either. A failed commit would leave the in-memory tip
// ahead of the database, which the hooks rely on: like a failed write
// inside them, it stops the process, and the next start catches up from
// the committed tip.
func (idx *ElectrumIndex) trailCommit(dbTx database.Tx, prev chainhash.Hash, first int32,
	hashes []chainhash.Hash, tip memTip) error {

	idx.mu.Lock()
	ok := idx.tip.hash == prev && idx.tip.height == first-1
	for _, h := range hashes {
		if _, gone := idx.trail.gone[h]; gone {
			ok = false
		}
	}
	if !ok {
		idx.mu.Unlock()
		_ = dbTx.Rollback()
		return errTrailMoved
	}
	idx.setTip(tip)
	// The tip moves without the held rows (held.go).
	idx.forgetHeld()
	idx.mu.Unlock()
	if err := dbTx.Commit(); err != nil {
		panic(fmt.Sprintf("electrum index: commit of a trailing batch failed: %v", err))
	}
	return nil
}

// trailLoop is the worker: it waits for kicks and runs catch-ups while the
// index is behind the chain.
func (idx *ElectrumIndex) trailLoop() {
	t := idx.trail
	defer close(t.done)
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	for {
		now := false
		select {
		case <-t.quit:
			idx.releaseWaiters()
			return
		case now = <-t.kick:
		case <-idle.C:
			now = true
		}
		idx.mu.Lock()
		have := idx.tip.txCount
		idx.mu.Unlock()
		best := t.chain.BestSnapshot()
		lag := int64(best.TotalTxns) - int64(have)
		min := t.minTxs
		extend, ahead := idx.extendable()
		if extend {
			min = t.baseTxs
		}
		if !now && (lag < min || ahead.valid && best.Height < ahead.height) {
			// Blocks are still coming: wait for more (up to the
			// base's own tip, for an extension a crash cut short),
			// or for a pause.
			idle.Reset(t.idle)
			continue
		}
		idle.Stop()
		if err := idx.trailRun(); err != nil {
			if interrupted(t.quit) {
				idx.releaseWaiters()
				return
			}
			if !errors.Is(err, errTrailMoved) {
				log.Warnf("Electrum index: trailing catch-up: %v; retrying", err)
			}
			select {
			case <-time.After(trailRetry):
			case <-t.quit:
				idx.releaseWaiters()
				return
			}
			t.poke(true)
			continue
		}
		if idx.behind() {
			// Blocks came meanwhile: they wait for a lag worth a
			// batch, or for a pause, like any others.
			t.poke(false)
		} else {
			idx.releaseWaiters()
			idx.goHoldHeavy()
		}
	}
}

// extendable reports whether the worker's runs extend the base: while the
// index tip is the base's, ffldb holds no row of the index (ffldbRows) and
// the base holds no rows of blocks that left the chain (baseDirty). ahead
// is the base's own tip when an extension's naming was lost to a crash.
func (idx *ElectrumIndex) extendable() (ok bool, ahead memTip) {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	ok = idx.base != nil && !idx.baseDirty && !idx.ffldbRows.Load() && idx.tip.valid && idx.tip.height == idx.baseTop
	if ok {
		ahead = idx.baseAhead
	}
	return ok, ahead
}

// trailRun runs one catch-up from the index tip to the chain's tip: an
// extension of the base (trailExtend) while ffldb holds no row above it.
func (idx *ElectrumIndex) trailRun() error {
	t := idx.trail
	idx.mu.Lock()
	from := idx.tip.height
	idx.mu.Unlock()
	extend, _ := idx.extendable()
	var err error
	if extend {
		err = idx.trailExtend()
	}
	if errors.Is(err, errBaseOffChain) {
		// The base is no longer extended: this run goes through ffldb.
		extend = false
	}
	if !extend {
		err = idx.catchUpWith(t.chain, t.quit, catchUpTrailing)
	}
	idx.mu.Lock()
	moved := idx.tip.height != from
	if moved {
		t.runs++
	}
	if errors.Is(err, errTrailMoved) {
		t.moved++
	}
	idx.mu.Unlock()
	if moved && t.onCaughtUp != nil {
		t.onCaughtUp()
	}
	return err
}

// errBaseOffChain: the base's own tip, above the height ffldb names, is not
// in the main chain.
var errBaseOffChain = errors.New("electrum index: its base holds blocks that left the main chain")

// trailExtend extends the base beside the chain, during initial block
// download, while ffldb holds no row above it (the index tip is the base's).
// It is one catch-up (catchUpExtend) that follows the chain as it connects
// blocks and ends when the chain pauses. After each batch it commits into
// the base, one ffldb transaction names the new height; holding ffldb's
// write lock, it runs between two blocks of the chain, and only if the
// index tip is still the one last named and no block was disconnected since
// the run began (counted by trailsDisconnect). Until then the new rows are
// above the height every view reads the base to.
//
// A crash can take the naming, and the blocks, from ffldb (its write cache
// holds the commits of up to five minutes) but not the rows from the base,
// whose own tip then stays above the named height (baseAhead). Those rows
// are the rows of the blocks up to that tip, each batch having been checked
// to link up with the last: once the chain has that tip again, the next
// extension starts from it. If the chain has another block at its height,
// or reaches the network's tip below it, the rows are those of blocks no
// longer in the chain, and the base is never extended again
// (markBaseDirty); the index then trails through ffldb as before. An
// extension stopped by a reorganization leaves the same state.
func (idx *ElectrumIndex) trailExtend() error {
	return idx.extend(idx.trail.chain, idx.trail.quit)
}

// extend is trailExtend over chain, stopped by quit: the trailing worker's,
// or the catch-up at start's (extendAtStart).
func (idx *ElectrumIndex) extend(chain *blockchain.BlockChain, quit <-chan struct{}) error {
	t := idx.trail
	idx.mu.Lock()
	disc := t.disconnects
	from := idx.tip
	start := idx.baseAhead
	idx.mu.Unlock()
	best := chain.BestSnapshot()
	if start.valid {
		switch idx.aheadState(chain, start) {
		case aheadWait:
			return nil
		case aheadGone:
			idx.markBaseDirty()
			return errBaseOffChain
		}
	} else if best.Height <= from.height {
		return nil
	} else {
		start = from
	}
	idx.mu.Lock()
	idx.building, idx.buildTip = idx.base, start
	idx.baseAhead = memTip{}
	idx.mu.Unlock()
	last := from
	promoted := time.Now()
	// name names tip, the base's tip, as the index tip and applies the
	// deletes pending up to it.
	name := func(tip memTip) error {
		// No reader runs from the naming until the batch's deletes are
		// applied: readers of the new height would see the rows its
		// blocks spent.
		idx.named.Lock()
		defer idx.named.Unlock()
		named := false
		err := idx.db.Update(func(dbTx database.Tx) error {
			cur := readTip(dbTx)
			idx.mu.Lock()
			moved := t.disconnects != disc || cur.Hash != last.hash || cur.Height != last.height
			idx.mu.Unlock()
			if moved {
				return errTrailMoved
			}
			named = true
			return idx.nameExtension(dbTx, tip)
		})
		if err != nil && named {
			// As for a trailing batch: the in-memory state is ahead of
			// a database whose commit failed.
			panic(fmt.Sprintf("electrum index: commit of its base's height failed: %v", err))
		}
		if err != nil {
			return err
		}
		last = tip
		// The deletes wait for the naming to be durable: a crash that
		// took it from ffldb's write cache would leave the base without
		// rows the named height has. Readers wait for them: like a
		// failed commit, a failure stops the process, and the next
		// start applies them.
		t0 := time.Now()
		if err := forceDurable(idx.db); err != nil {
			panic(fmt.Sprintf("electrum index: making its base's height durable failed: %v", err))
		}
		t1 := time.Now()
		if err := idx.applyPending(idx.base, tip.height); err != nil {
			panic(fmt.Sprintf("electrum index: deletes of its base failed: %v", err))
		}
		log.Debugf("Electrum index: base named at height %d; ffldb's cache written out in %v, deletes applied in %v",
			tip.height, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
		promoted = time.Now()
		return nil
	}
	// After each batch committed into the base: a naming costs a flush of
	// ffldb's write cache, which the chain waits for, so the batches of a
	// run are named together at its end, or when t.promote has passed.
	committed := func(tip memTip) error {
		if idx.beforeName != nil {
			idx.beforeName()
		}
		if time.Since(promoted) < t.promote {
			return nil
		}
		return name(tip)
	}
	err := idx.catchUpTo(chain, quit, catchUpExtend, best, committed)
	if err == nil {
		idx.mu.Lock()
		tip := idx.buildTip
		idx.mu.Unlock()
		if tip.height > last.height {
			err = name(tip)
		}
	}
	idx.mu.Lock()
	// What the run committed is linked to its start: if the run stopped
	// before naming all of it, the next run takes it up if the chain
	// still has it.
	if err != nil && idx.buildTip.height > last.height {
		idx.baseAhead = idx.buildTip
	}
	idx.building, idx.buildTip = nil, memTip{}
	idx.mu.Unlock()
	if err != nil {
		return err
	}
	if last.height > from.height {
		log.Infof("Electrum index: base extended to height %d beside the chain's download", last.height)
	}
	return nil
}

// The states of a base whose own tip is above its named height.
const (
	// aheadInChain: the chain has the base's tip; an extension takes it up.
	aheadInChain = iota
	// aheadWait: the chain is below the base's tip and still downloading
	// (it connected a block in the last trailPatience).
	aheadWait
	// aheadGone: the base's tip is not the chain's block at its height,
	// or the chain stopped below it: at the network's tip, or for longer
	// than trailPatience (or it does not trail).
	aheadGone
)

// aheadState says what becomes of the base's rows above its named height,
// up to its own tip ahead.
func (idx *ElectrumIndex) aheadState(chain *blockchain.BlockChain, ahead memTip) int {
	best := chain.BestSnapshot()
	if best.Height < ahead.height {
		if idx.trail == nil {
			return aheadGone
		}
		hdr, err := chain.HeaderByHash(&best.Hash)
		idx.mu.Lock()
		last := idx.trail.lastBlock
		idx.mu.Unlock()
		if err == nil && time.Since(hdr.Timestamp) > idx.trail.age && time.Since(last) < idx.trail.patience {
			return aheadWait
		}
		return aheadGone
	}
	h, err := chain.BlockHashByHeight(ahead.height)
	if err != nil || *h != ahead.hash {
		return aheadGone
	}
	log.Infof("Electrum index: taking up the extension of its base from height %d", ahead.height)
	return aheadInChain
}

// extendAtStart runs the catch-up at start of a trailing node as an
// extension of the base while the index tip is the base's: through ffldb,
// the base would not be extended again. It reports whether it ran; a base
// whose own tip is above its named height waits for the trailing worker
// while the chain is below it (wait), or is marked dirty when that tip is
// off the chain.
func (idx *ElectrumIndex) extendAtStart(chain *blockchain.BlockChain, interrupt <-chan struct{}) (ran, wait bool, err error) {
	if idx.trail == nil {
		return false, false, nil
	}
	ok, ahead := idx.extendable()
	if !ok {
		return false, false, nil
	}
	if ahead.valid {
		switch idx.aheadState(chain, ahead) {
		case aheadGone:
			idx.markBaseDirty()
			return false, false, nil
		case aheadWait:
			log.Infof("Electrum index: its base holds blocks up to height %d; waiting for the chain to reach it",
				ahead.height)
			return false, true, nil
		}
	} else {
		idx.mu.Lock()
		tip := idx.tip
		idx.mu.Unlock()
		if chain.BestSnapshot().Height <= tip.height {
			return false, false, nil
		}
	}
	return true, false, idx.extend(chain, interrupt)
}

// behind reports whether the chain has blocks the index has not committed.
// It reads the committed tip: the in-memory one moves just before a
// trailing batch commits.
func (idx *ElectrumIndex) behind() bool {
	best := idx.trail.chain.BestSnapshot()
	tip, err := idx.Tip()
	return err != nil || tip.Hash != best.Hash
}

// releaseWaiters wakes every WaitCaughtUp.
func (idx *ElectrumIndex) releaseWaiters() {
	idx.mu.Lock()
	ws := idx.trail.waiters
	idx.trail.waiters = nil
	idx.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// WaitCaughtUp asks a trailing index to catch up with the chain now and
// waits until it has, or until timeout. Without trailing it returns at
// once.
func (idx *ElectrumIndex) WaitCaughtUp(timeout time.Duration) error {
	t := idx.trail
	if t == nil || t.chain == nil {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		if !idx.behind() {
			return nil
		}
		w := make(chan struct{})
		idx.mu.Lock()
		t.waiters = append(t.waiters, w)
		idx.mu.Unlock()
		t.poke(true)
		select {
		case <-w:
		case <-time.After(time.Until(deadline)):
			return fmt.Errorf("electrum index: not caught up with the chain after %v", timeout)
		case <-t.done:
			return errors.New("electrum index: trailing stopped")
		}
	}
}

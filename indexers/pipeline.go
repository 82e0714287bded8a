package indexers

import (
	"bytes"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/syndtr/goleveldb/leveldb"
)

// The pipeline the writer indexes blocks with, at the tip and behind it
// alike: a fetcher reads blocks and spent outputs and plans their rows on
// every core, ahead of an assembler that takes the plans in height order into
// a batch, and the batch is committed with the new tip when it is full or
// the blocks run out. At the tip a batch is one block; behind it, a batch
// is BatchBytes of rows.

// fetched is one planned block, or why it could not be.
type fetched struct {
	plan *blockPlan
	took time.Duration
	err  error
}

// maxTouched bounds the scripts a commit lists; a commit touching more
// reports All.
const maxTouched = 50000

// largeCatchUp is the number of transactions from which a catch-up writes
// its batches as leveldb transactions (assembly).
const largeCatchUp = 100000

// fetcher plans the blocks from..to in parallel and delivers them in
// order on out. It stops early when stop closes.
func (w *writer) fetcher(from, to int32, stop <-chan struct{}) <-chan chan fetched {
	workers := runtime.GOMAXPROCS(0)
	out := make(chan chan fetched, 2*workers+2)
	go func() {
		defer close(out)
		sem := make(chan struct{}, workers)
		for h := from; h <= to; h++ {
			c := make(chan fetched, 1)
			select {
			case out <- c:
			case <-stop:
				return
			}
			sem <- struct{}{}
			go func(h int32) {
				defer func() { <-sem }()
				c <- w.fetchAndPlan(h)
			}(h)
		}
	}()
	return out
}

// fetchAndPlan reads the block at height and plans its rows.
func (w *writer) fetchAndPlan(height int32) fetched {
	start := time.Now()
	block, raw, stxos, err := w.fetchBlock(height)
	if err != nil {
		return fetched{err: err}
	}
	p := planBlockRaw(block, raw, stxos, height == 0, planPool.Get().(*planBufs))
	return fetched{plan: p, took: time.Since(start)}
}

// assembly is the batch being assembled and what it will commit. It is the
// rowWriter of its blocks: unspent rows wait in utxo until the commit, so
// that an output created and spent inside the batch is never written, and
// then go in key order, which leveldb inserts faster.
//
// A batch at the tip is a leveldb.Batch, written with the store's journal.
// A large catch-up writes each batch into a leveldb transaction as it is
// assembled (tr): its rows go to new tables as they fill, not to the
// journal, and none is visible before the commit.
type assembly struct {
	b       *leveldb.Batch
	tr      *leveldb.Transaction
	large   bool
	err     error // the first write error of tr
	written int   // bytes put or deleted in this batch
	ops     int   // rows put or deleted in this batch
	utxo    map[[utxoKeyLen]byte]utxoOp
	tip     memTip
	began   time.Time // when the first block of the batch was fetched
	blocks  int
	txs     uint64
	touched map[ScriptHash]struct{}
	txids   map[chainhash.Hash]struct{}
	all     bool
}

// utxoOp is the batch's last write of an unspent row: a put of val, or a
// delete.
type utxoOp struct {
	put bool
	val [utxoValLen]byte
}

// utxoOpBytes is what an entry of assembly.utxo counts toward BatchBytes.
const utxoOpBytes = utxoKeyLen + utxoValLen

func (a *assembly) copiesRows() {}

// put and del write into the batch or the transaction.
func (a *assembly) put(k, v []byte) {
	a.written += len(k) + len(v)
	a.ops++
	if a.tr == nil {
		a.b.Put(k, v)
	} else if err := a.tr.Put(k, v, nil); err != nil && a.err == nil {
		a.err = err
	}
}

func (a *assembly) del(k []byte) {
	a.written += len(k)
	a.ops++
	if a.tr == nil {
		a.b.Delete(k)
	} else if err := a.tr.Delete(k, nil); err != nil && a.err == nil {
		a.err = err
	}
}

// open starts a batch: a transaction when the catch-up is large.
func (a *assembly) open(store *leveldb.DB) error {
	if !a.large || a.tr != nil {
		return nil
	}
	tr, err := store.OpenTransaction()
	a.tr = tr
	return err
}

// write commits the batch.
func (a *assembly) write(store *leveldb.DB) error {
	if a.tr == nil {
		return store.Write(a.b, nil)
	}
	tr := a.tr
	a.tr = nil
	if a.err != nil {
		tr.Discard()
		return a.err
	}
	return tr.Commit()
}

// discard drops an open transaction.
func (a *assembly) discard() {
	if a.tr != nil {
		a.tr.Discard()
		a.tr = nil
	}
}

func (a *assembly) Put(k, v []byte) error {
	if len(k) != utxoKeyLen || k[2] != tagUtxo || len(v) != utxoValLen {
		a.put(k, v)
		return nil
	}
	op := utxoOp{put: true}
	copy(op.val[:], v)
	a.utxo[[utxoKeyLen]byte(k)] = op
	return nil
}

func (a *assembly) Delete(k []byte) error {
	if len(k) != utxoKeyLen || k[2] != tagUtxo {
		a.del(k)
		return nil
	}
	key := [utxoKeyLen]byte(k)
	if op, ok := a.utxo[key]; ok && op.put {
		// Created in this batch: the row was never written.
		delete(a.utxo, key)
		return nil
	}
	a.utxo[key] = utxoOp{}
	return nil
}

// size is what the batch holds, as BatchBytes counts it.
func (a *assembly) size() int { return a.written + len(a.utxo)*utxoOpBytes }

// flushUtxo moves the unspent rows into the batch, in key order.
func (a *assembly) flushUtxo() {
	keys := make([][utxoKeyLen]byte, 0, len(a.utxo))
	for k := range a.utxo {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y [utxoKeyLen]byte) int { return bytes.Compare(x[:], y[:]) })
	for i := range keys {
		op := a.utxo[keys[i]]
		if op.put {
			a.put(keys[i][:], op.val[:])
		} else {
			a.del(keys[i][:])
		}
	}
	clear(a.utxo)
}

// catchUp indexes the main chain's blocks from..to onto the index tip. It
// returns errChainMoved when a block no longer extends the tip. A large
// catch-up runs under a soft memory limit, lifted once its batches are
// garbage.
func (w *writer) catchUp(from, to int32, stop <-chan struct{}) error {
	var targetTxs uint64
	if best := w.chain.BestSnapshot(); best.Height == to && best.TotalTxns > w.tip.txCount {
		targetTxs = best.TotalTxns - w.tip.txCount
	}
	if targetTxs >= largeCatchUp {
		defer limitMemory(w.idx.opts.CatchUpMemory)()
	}
	return w.catchUpTxs(from, to, targetTxs, stop)
}

// catchUpTxs is catchUp of blocks holding targetTxs transactions.
func (w *writer) catchUpTxs(from, to int32, targetTxs uint64, stop <-chan struct{}) error {
	quit := make(chan struct{})
	defer close(quit)
	halt := make(chan struct{})
	go func() {
		select {
		case <-stop:
		case <-quit:
		}
		close(halt)
	}()
	futures := w.fetcher(from, to, halt)
	w.idx.progress.begin(from, to, targetTxs)
	defer w.idx.progress.end()

	a := &assembly{b: new(leveldb.Batch), utxo: make(map[[utxoKeyLen]byte]utxoOp), tip: w.tip,
		large: targetTxs >= largeCatchUp, touched: make(map[ScriptHash]struct{}),
		txids: make(map[chainhash.Hash]struct{})}
	defer a.discard()
	var err error
	for c := range futures {
		f := <-c
		if f.err == nil && interrupted(stop) {
			f.err = errInterrupted
		}
		if f.err != nil {
			err = f.err
			if f.plan != nil {
				planPool.Put(f.plan.bufs)
			}
			break
		}
		p := f.plan
		if p.prev != a.tip.hash || p.height != a.tip.height+1 {
			planPool.Put(p.bufs)
			err = errChainMoved
			break
		}
		if err = a.open(w.idx.store); err != nil {
			planPool.Put(p.bufs)
			return err
		}
		w.assemble(a, p, f.took)
		planPool.Put(p.bufs)
		if a.blocks > 0 && (a.size() >= w.idx.opts.BatchBytes || p.height == to) {
			if cerr := w.commit(a); cerr != nil {
				return cerr
			}
		}
	}
	// Drain the planned blocks still in flight.
	go func() {
		for c := range futures {
			if f := <-c; f.plan != nil {
				planPool.Put(f.plan.bufs)
			}
		}
	}()
	if a.blocks > 0 {
		if cerr := w.commit(a); cerr != nil {
			return cerr
		}
	}
	return err
}

// onDiskAtStart reports whether the block was on disk when the writer
// started: it is in the main chain, and so is the chain tip of then, at or
// above it.
func (w *writer) onDiskAtStart(p *blockPlan) bool {
	return p.height <= w.start.Height && w.chain.MainChainHasBlock(&w.start.Hash) &&
		w.chain.MainChainHasBlock(&p.hash)
}

// assemble adds a planned block to the batch: its rows, and its undo
// record unless it is a block btcd had on disk when the writer started
// (undo.go says why).
func (w *writer) assemble(a *assembly, p *blockPlan, fetchTook time.Duration) {
	start := time.Now()
	delta := applyConnect(a, p, a.tip.txCount)
	if !w.onDiskAtStart(p) {
		a.put(undoKey(p.height), undoRecord(p))
		w.recent = append(w.recent, undoRef{height: p.height, at: start})
	}
	if a.blocks == 0 {
		a.began = start.Add(-fetchTook)
	}
	a.tip = memTip{valid: true, hash: p.hash, height: p.height,
		txCount: a.tip.txCount + uint64(len(p.txs)), stats: a.tip.stats.add(delta)}
	a.blocks++
	a.txs += uint64(len(p.txs))
	if !a.all {
		for i := range p.txs {
			a.txids[p.txs[i].txid] = struct{}{}
			for _, sh := range p.txs[i].scripts {
				a.touched[sh] = struct{}{}
			}
		}
		if len(a.touched) > maxTouched {
			a.all, a.touched, a.txids = true, make(map[ScriptHash]struct{}), make(map[chainhash.Hash]struct{})
		}
	}
	if w.idx.opts.OnBlock != nil {
		w.idx.opts.OnBlock(BlockPass{Height: p.height, Txs: len(p.txs), Plan: fetchTook,
			Write: time.Since(start), Rows: delta.Rows, Bytes: delta.Bytes,
			Writes: p.writes, WriteBytes: p.writeBytes})
	}
}

// commit writes the batch with the new tip and size and publishes them.
func (w *writer) commit(a *assembly) error {
	start := time.Now()
	a.flushUtxo()
	w.pruneUndo(a.del, a.tip.height, start)
	a.put(tipKey, tipVal(&a.tip.hash, a.tip.height))
	a.put(statsKey, encodeStats(a.tip.stats))
	if err := a.write(w.idx.store); err != nil {
		return err
	}
	w.tip = a.tip
	c := Commit{Tip: a.tip.tip(), All: a.all}
	if !a.all {
		c.Touched = make([]ScriptHash, 0, len(a.touched))
		for sh := range a.touched {
			c.Touched = append(c.Touched, sh)
		}
		c.Confirmed = a.txids
		a.txids = make(map[chainhash.Hash]struct{})
	}
	w.idx.progress.committed(a.tip.height, a.txs, a.ops)
	if !w.idx.progress.long() {
		// From reading the first block to the commit's end.
		took := time.Since(a.began).Round(time.Microsecond)
		if a.blocks == 1 {
			log.Infof("Indexed block %d (%d tx) in %v", a.tip.height, a.txs, took)
		} else {
			log.Infof("Indexed blocks to %d (%d tx) in %v", a.tip.height, a.txs, took)
		}
	}
	w.idx.progress.maybeLog(w.idx.opts.ProgressInterval)
	w.idx.committed(c)
	a.b.Reset()
	a.blocks, a.txs, a.all, a.written, a.ops = 0, 0, false, 0, 0
	clear(a.touched)
	return nil
}

// progressState is the catch-up's progress, read by Progress.
type progressState struct {
	mu      sync.Mutex
	p       CatchUpProgress
	lastLog time.Time
}

// CatchUpProgress describes the writer's catch-up: the one running, or the
// last one that ran. Every figure counts committed work only.
type CatchUpProgress struct {
	// Running is true while blocks are being caught up.
	Running bool
	// From and Target are the first and last heights of the catch-up.
	From, Target int32
	// Height is the last height committed to the store.
	Height int32
	// Txs is the number of transactions committed, TargetTxs the number
	// the catch-up indexes in all, Writes the rows put or deleted, Batches
	// the batches committed.
	Txs, TargetTxs, Writes uint64
	Batches                int
	// Rate is the transactions committed per second since the start; ETA
	// is how long the rest takes at that rate (zero while unknown).
	Rate float64
	ETA  time.Duration
	// Started and Finished bound the catch-up (Finished is zero while it
	// runs).
	Started, Finished time.Time
}

// Duration returns how long the catch-up ran, or has been running.
func (p CatchUpProgress) Duration() time.Duration {
	if p.Started.IsZero() {
		return 0
	}
	if p.Finished.IsZero() {
		return time.Since(p.Started)
	}
	return p.Finished.Sub(p.Started)
}

// Progress returns the state of the writer's latest catch-up of more than
// one block.
func (idx *ElectrumIndex) Progress() CatchUpProgress {
	idx.progress.mu.Lock()
	defer idx.progress.mu.Unlock()
	p := idx.progress.p
	if d := p.Duration().Seconds(); d > 0 {
		p.Rate = float64(p.Txs) / d
	}
	if p.Running && p.Rate > 0 && p.TargetTxs > p.Txs {
		p.ETA = time.Duration(float64(p.TargetTxs-p.Txs) / p.Rate * float64(time.Second))
	}
	return p
}

// begin starts a catch-up's progress; a single block at the tip leaves the
// last catch-up's figures alone.
func (s *progressState) begin(from, to int32, targetTxs uint64) {
	if to == from {
		return
	}
	s.mu.Lock()
	s.p = CatchUpProgress{Running: true, From: from, Target: to, Height: from - 1, TargetTxs: targetTxs,
		Started: time.Now()}
	s.lastLog = s.p.Started
	s.mu.Unlock()
}

func (s *progressState) end() {
	s.mu.Lock()
	p := s.p
	if p.Running {
		s.p.Running, s.p.Finished = false, time.Now()
	}
	s.mu.Unlock()
	if p.Running {
		log.Infof("Electrum index: caught up to height %d (%d tx in %v)", p.Height, p.Txs,
			time.Since(p.Started).Round(time.Millisecond))
	}
}

// long reports whether a catch-up of many blocks is running.
func (s *progressState) long() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p.Running
}

func (s *progressState) committed(height int32, txs uint64, writes int) {
	s.mu.Lock()
	if s.p.Running {
		s.p.Height = height
		s.p.Txs += txs
		s.p.Writes += uint64(writes)
		s.p.Batches++
	}
	s.mu.Unlock()
}

// maybeLog logs the progress line when the interval has passed.
func (s *progressState) maybeLog(every time.Duration) {
	s.mu.Lock()
	p := s.p
	due := p.Running && time.Since(s.lastLog) >= every
	if due {
		s.lastLog = time.Now()
	}
	s.mu.Unlock()
	if !due {
		return
	}
	rate := 0.0
	if d := p.Duration().Seconds(); d > 0 {
		rate = float64(p.Txs) / d
	}
	log.Infof("Electrum index: height %d/%d committed (%d tx), %.0f tx/s", p.Height, p.Target, p.Txs, rate)
}

// DefaultCatchUpMemory is the memory, in MiB, a large catch-up may take on
// top of what the process holds when it starts, unless Options say
// otherwise.
const DefaultCatchUpMemory = 320

// limitMemory runs a large catch-up under a soft memory limit of what the
// process holds now plus mib, unless a limit is set already (GOMEMLIMIT, or
// the node's while it serves). Without one the garbage collector lets the
// heap grow to twice what the catch-up keeps live. The returned function
// lifts the limit and returns the memory to the system.
func limitMemory(mib int) func() {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	held := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	debug.SetMemoryLimit(held + int64(mib)<<20)
	return func() {
		debug.SetMemoryLimit(math.MaxInt64)
		debug.FreeOSMemory()
	}
}

package indexers

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"os"
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

// largeCatchUp is the number of transactions from which a catch-up runs
// under a memory limit (limitMemory).
const largeCatchUp = 100000

// fetcher plans the blocks from..to in parallel and delivers them in
// order on out. It starts no fetch once stop closes.
func (w *writer) fetcher(from, to int32, stop <-chan struct{}) <-chan chan fetched {
	workers := runtime.GOMAXPROCS(0)
	out := make(chan chan fetched, 2*workers+2)
	go func() {
		defer close(out)
		sem := make(chan struct{}, workers)
		for h := from; h <= to && !interrupted(stop); h++ {
			c := make(chan fetched, 1)
			select {
			case out <- c:
			case <-stop:
				return
			}
			select {
			case sem <- struct{}{}:
			case <-stop:
				c <- fetched{err: errInterrupted}
				return
			}
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

// assembly is a batch being assembled, then committed; the rowWriter of its
// blocks. Rows are written at the commit in key order, which leveldb's
// memtable takes about twice as fast as block order: unspent-output rows in
// a map, so that one created and spent inside the batch is never written,
// the others in rows. A full batch (BatchBytes) is written as a leveldb
// transaction, straight to tables; any other (a tip block, a catch-up's last)
// as a leveldb.Batch. A pass's last batch holding one block (lone, as at the
// tip) puts its unspent rows in spent as they come: the plan left out those
// the block creates and spends, so none cancel.
type assembly struct {
	rows    rowBuf
	utxo    map[[utxoKeyLen]byte]utxoOp
	spent   []utxoWrite // the unspent-output rows, from seal on (lone: as added)
	order   []keyRef    // spent's key order
	lone    bool
	full    bool // set by seal
	tip     memTip
	began   time.Time // when the first block of the batch was fetched
	blocks  int
	txs     uint64
	touched map[ScriptHash]struct{}
	txids   map[chainhash.Hash]struct{}
	all     bool
	undone  bool // it publishes the undos before it too (writer.undone)
}

// utxoOp is the batch's last write of an unspent row: a put of val, or a
// delete.
type utxoOp struct {
	put bool
	val [utxoValLen]byte
}

// utxoWrite is an unspent-output row of a sorted batch.
type utxoWrite struct {
	key [utxoKeyLen]byte
	op  utxoOp
}

// utxoOpBytes is what an unspent-output row of a batch counts toward BatchBytes.
const utxoOpBytes = utxoKeyLen + utxoValLen

// newAssembly returns an empty batch on tip, with the buffers of spare (a
// committed batch, or nil) reused.
func newAssembly(tip memTip, spare *assembly) *assembly {
	if spare == nil {
		return &assembly{utxo: make(map[[utxoKeyLen]byte]utxoOp), tip: tip,
			touched: make(map[ScriptHash]struct{}), txids: make(map[chainhash.Hash]struct{})}
	}
	spare.rows.reset()
	spare.spent, spare.order = spare.spent[:0], spare.order[:0]
	clear(spare.utxo)
	clear(spare.touched)
	spare.txids = make(map[chainhash.Hash]struct{})
	spare.tip, spare.full, spare.lone = tip, false, false
	spare.blocks, spare.txs, spare.all, spare.undone = 0, 0, false, false
	return spare
}

// spareBytes bounds the rows a batch kept for the next pass may hold
// (writer.spare): a block's, not a full batch's.
const spareBytes = 8 << 20

func (a *assembly) copiesRows() {}

func (a *assembly) Put(k, v []byte) error {
	if len(k) != utxoKeyLen || k[2] != tagUtxo || len(v) != utxoValLen {
		a.rows.add(k, v, false)
		return nil
	}
	op := utxoOp{put: true}
	copy(op.val[:], v)
	if a.lone {
		a.spent = append(a.spent, utxoWrite{key: [utxoKeyLen]byte(k), op: op})
		return nil
	}
	a.utxo[[utxoKeyLen]byte(k)] = op
	return nil
}

func (a *assembly) Delete(k []byte) error {
	if len(k) != utxoKeyLen || k[2] != tagUtxo {
		a.rows.add(k, nil, true)
		return nil
	}
	key := [utxoKeyLen]byte(k)
	if a.lone {
		a.spent = append(a.spent, utxoWrite{key: key})
		return nil
	}
	if op, ok := a.utxo[key]; ok && op.put {
		// Created in this batch: the row was never written.
		delete(a.utxo, key)
		return nil
	}
	a.utxo[key] = utxoOp{}
	return nil
}

// del deletes a row outside the unspent-output table.
func (a *assembly) del(k []byte) { a.rows.add(k, nil, true) }

// size is what the batch holds, as BatchBytes counts it.
func (a *assembly) size() int { return a.rows.size() + (len(a.utxo)+len(a.spent))*utxoOpBytes }

// ops is the number of rows the batch puts or deletes.
func (a *assembly) ops() int { return len(a.rows.recs) + len(a.utxo) + len(a.spent) }

// sort puts the batch's rows in key order, the unspent-output rows in
// spent (the map is emptied) and their order in order, for write.
func (a *assembly) sort() {
	// The two sorts share nothing: the rows are sorted on another core.
	done := make(chan struct{})
	go func() {
		a.rows.sort()
		close(done)
	}()
	defer func() { <-done }()
	a.order = a.order[:0]
	if !a.lone {
		a.spent = a.spent[:0]
		for k, op := range a.utxo {
			a.spent = append(a.spent, utxoWrite{key: k, op: op})
		}
		clear(a.utxo)
	}
	for i := range a.spent {
		a.order = append(a.order, keyRef{pfx: keyPrefix(a.spent[i].key[:]), i: uint32(i)})
	}
	slices.SortFunc(a.order, func(x, y keyRef) int {
		if c := cmp.Compare(x.pfx, y.pfx); c != 0 {
			return c
		}
		return bytes.Compare(a.spent[x.i].key[:], a.spent[y.i].key[:])
	})
}

// keyRef is a row of a batch being sorted: the first eight bytes of its
// key as an integer (keyPrefix) and where the row is. Keys of one table
// share their three-byte prefix and go on with hash or height bytes, so
// the integers settle almost every comparison without reading the keys.
type keyRef struct {
	pfx uint64
	i   uint32
}

// keyPrefix returns the first eight bytes of k as a big-endian integer, a
// shorter key padded with zeros: x < y when keyPrefix(x) < keyPrefix(y),
// and equal integers leave the order to the keys.
func keyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// write writes the sorted batch's rows into a transaction when the batch
// is full, else into b and then the store, and commits them.
func (a *assembly) write(store *leveldb.DB, b *leveldb.Batch) error {
	if !a.full {
		b.Reset()
		a.each(b.Put, b.Delete)
		return store.Write(b, nil)
	}
	tr, err := store.OpenTransaction()
	if err != nil {
		return err
	}
	a.each(func(k, v []byte) {
		if err == nil {
			err = tr.Put(k, v, nil)
		}
	}, func(k []byte) {
		if err == nil {
			err = tr.Delete(k, nil)
		}
	})
	if err == nil {
		err = tr.Commit()
	}
	if err != nil {
		// A failed Commit keeps the transaction, and the store's write
		// lock, for a retry.
		tr.Discard()
	}
	return err
}

// each passes the sorted batch's rows to put and del.
func (a *assembly) each(put func(k, v []byte), del func(k []byte)) {
	a.rows.each(put, del)
	for _, r := range a.order {
		if u := &a.spent[r.i]; u.op.put {
			put(u.key[:], u.op.val[:])
		} else {
			del(u.key[:])
		}
	}
}

// rowBuf holds rows in one arena without pointers, for the garbage
// collector not to scan, and a record per row to sort them by.
type rowBuf struct {
	arena []byte
	recs  []rowRec
}

// rowRec is a row of a rowBuf: its key at arena[off:], its value right
// after the key, and the key's keyPrefix. Rows are added at growing
// offsets, so off also orders two writes of one key.
type rowRec struct {
	pfx  uint64
	off  uint32
	vlen uint32
	klen uint8
	del  bool
}

// rowRecBytes is what a rowRec counts toward BatchBytes.
const rowRecBytes = 24

// maxRowBuf bounds a rowBuf's arena, which uint32 offsets address; a batch
// is committed before it grows past it.
const maxRowBuf = 1 << 31

func (r *rowBuf) add(k, v []byte, del bool) {
	r.recs = append(r.recs, rowRec{pfx: keyPrefix(k), off: uint32(len(r.arena)), vlen: uint32(len(v)),
		klen: uint8(len(k)), del: del})
	r.arena = append(append(r.arena, k...), v...)
}

func (r *rowBuf) key(x rowRec) []byte { return r.arena[x.off : x.off+uint32(x.klen)] }

func (r *rowBuf) size() int { return len(r.arena) + len(r.recs)*rowRecBytes }

func (r *rowBuf) reset() { r.arena, r.recs = r.arena[:0], r.recs[:0] }

// sort orders the rows by key, and two writes of one key as they were
// made.
func (r *rowBuf) sort() {
	slices.SortFunc(r.recs, func(x, y rowRec) int {
		if c := cmp.Compare(x.pfx, y.pfx); c != 0 {
			return c
		}
		if c := bytes.Compare(r.key(x), r.key(y)); c != 0 {
			return c
		}
		return cmp.Compare(x.off, y.off)
	})
}

// each passes the rows in their order to put and del.
func (r *rowBuf) each(put func(k, v []byte), del func(k []byte)) {
	for _, x := range r.recs {
		k := r.key(x)
		if x.del {
			del(k)
		} else {
			end := x.off + uint32(x.klen) + x.vlen
			put(k, r.arena[x.off+uint32(x.klen):end:end])
		}
	}
}

// catchUp indexes the main chain's blocks from..to onto the index tip. It
// returns errChainMoved when a block no longer extends the tip. A large
// catch-up runs under a soft memory limit (limitMemory).
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

// catchUpTxs is catchUp of blocks holding targetTxs transactions. The
// blocks are assembled into batches here while a committer writes the
// batches before them.
func (w *writer) catchUpTxs(from, to int32, targetTxs uint64, stop <-chan struct{}) error {
	quit := make(chan struct{})
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
	defer func() {
		// Wait for the fetches in flight: none reads btcd's database
		// once the pass, and so Close, has returned.
		close(quit)
		for c := range futures {
			if f := <-c; f.plan != nil {
				planPool.Put(f.plan.bufs)
			}
		}
	}()

	cm := w.startCommitter()
	a := newAssembly(w.tip, w.spare)
	w.spare = nil
	// The first batch carries the undos not yet published: committed (the
	// tip moved), it has published them.
	a.undone = w.undone
	defer func(from memTip) { w.undone = w.undone && w.tip == from }(w.tip)
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
		w.assemble(a, p, f.took, p.height == to)
		planPool.Put(p.bufs)
		if a.size() >= w.idx.opts.BatchBytes || len(a.rows.arena) >= maxRowBuf/2 || p.height == to {
			if !cm.send(w.seal(a)) {
				a = nil
				break
			}
			a = newAssembly(a.tip, cm.spare())
		}
	}
	if a != nil && a.blocks > 0 {
		cm.send(w.seal(a))
	}
	if cerr := cm.finish(); cerr != nil {
		return cerr
	}
	if sp := cm.spare(); sp != nil && cap(sp.rows.arena) <= spareBytes {
		w.spare = sp
	}
	return err
}

// seal completes a batch with the undo records it prunes, the tip and the
// index's size, and sorts it, here rather than in the committer, which
// has the most work of the pipeline.
func (w *writer) seal(a *assembly) *assembly {
	a.full = a.size() >= w.idx.opts.BatchBytes
	w.pruneUndo(a.del, a.tip.height, time.Now())
	a.rows.add(tipKey, tipVal(&a.tip.hash, a.tip.height), false)
	a.rows.add(statsKey, encodeStats(a.tip.stats), false)
	a.sort()
	return a
}

// committer commits sealed batches in order on a goroutine of its own, so
// that a batch is written while the next is assembled, and hands their
// buffers back: a batch is sent once the one before it is written, so two
// live at most. After a failed commit it commits no more.
type committer struct {
	in     chan *assembly
	spares chan *assembly
	failed chan struct{}
	done   chan error
}

func (w *writer) startCommitter() *committer {
	c := &committer{in: make(chan *assembly), spares: make(chan *assembly, 1),
		failed: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		var err error
		if w.batch == nil {
			w.batch = new(leveldb.Batch)
		}
		b := w.batch
		for a := range c.in {
			if err != nil {
				continue
			}
			if err = w.commit(a, b); err != nil {
				close(c.failed)
				continue
			}
			select {
			case c.spares <- a:
			default:
			}
		}
		if len(b.Dump()) > spareBytes {
			w.batch = nil
		}
		c.done <- err
	}()
	return c
}

// send queues a sealed batch; false when an earlier commit failed.
func (c *committer) send(a *assembly) bool {
	select {
	case <-c.failed:
		return false
	default:
	}
	select {
	case c.in <- a:
		return true
	case <-c.failed:
		return false
	}
}

// spare returns a committed batch to reuse, or nil.
func (c *committer) spare() *assembly {
	select {
	case a := <-c.spares:
		return a
	default:
		return nil
	}
}

// finish waits for the queued batches' commits and returns the first
// error.
func (c *committer) finish() error {
	close(c.in)
	return <-c.done
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
// (undo.go says why). last says the batch is sealed after this block.
func (w *writer) assemble(a *assembly, p *blockPlan, fetchTook time.Duration, last bool) {
	start := time.Now()
	if a.blocks == 0 && last {
		a.lone = true
	}
	// The undo record and the commit's scripts and txids read the plan
	// only: they are made on another core while the rows are added.
	var undo chan []byte
	noted := make(chan struct{})
	if !w.onDiskAtStart(p) {
		undo = make(chan []byte, 1)
	}
	go func() {
		a.note(p)
		close(noted)
		if undo != nil {
			undo <- undoRecord(p)
		}
	}()
	delta := applyConnect(a, p, a.tip.txCount)
	if a.blocks == 0 {
		a.began = start.Add(-fetchTook)
	}
	a.tip = memTip{hash: p.hash, height: p.height,
		txCount: a.tip.txCount + uint64(len(p.txs)), stats: a.tip.stats.add(delta)}
	a.blocks++
	a.txs += uint64(len(p.txs))
	<-noted
	if undo != nil {
		a.rows.add(undoKey(p.height), <-undo, false)
		w.recent = append(w.recent, undoRef{height: p.height, at: start})
	}
	if w.idx.opts.OnBlock != nil {
		w.idx.opts.OnBlock(BlockPass{Height: p.height, Txs: len(p.txs), Plan: fetchTook,
			Write: time.Since(start), Rows: delta.Rows, Bytes: delta.Bytes,
			Writes: p.writes, WriteBytes: p.writeBytes})
	}
}

// note adds the block's scripts and txids to those the commit reports.
func (a *assembly) note(p *blockPlan) {
	if a.all {
		return
	}
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

// commit writes a sealed batch and publishes its tip. It runs on the
// committer's goroutine; b is its scratch leveldb.Batch.
func (w *writer) commit(a *assembly, b *leveldb.Batch) error {
	ops := a.ops()
	if err := w.idx.storeWrite(func() error { return a.write(w.idx.store, b) }); err != nil {
		return err
	}
	w.tip = a.tip
	c := Commit{Tip: a.tip.tip(), All: a.all || a.undone}
	if !a.all {
		c.Touched = make([]ScriptHash, 0, len(a.touched))
		for sh := range a.touched {
			c.Touched = append(c.Touched, sh)
		}
		c.Confirmed = a.txids
	}
	w.idx.progress.committed(a.tip.height, a.txs, ops)
	if !w.idx.progress.get().Running {
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
func (idx *ElectrumIndex) Progress() CatchUpProgress { return idx.progress.get() }

func (s *progressState) get() CatchUpProgress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.p
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

// end ends the catch-up's progress and logs where it ended: short of its
// target when it was interrupted, failed or met a reorganization.
func (s *progressState) end() {
	s.mu.Lock()
	p := s.p
	if p.Running {
		s.p.Running, s.p.Finished = false, time.Now()
	}
	s.mu.Unlock()
	took := time.Since(p.Started).Round(time.Millisecond)
	switch {
	case p.Running && p.Height < p.Target:
		log.Infof("Electrum index: stopped at height %d of %d (%d tx in %v)", p.Height, p.Target, p.Txs, took)
	case p.Running:
		log.Infof("Electrum index: caught up to height %d (%d tx in %v)", p.Height, p.Txs, took)
	}
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
	due := s.p.Running && time.Since(s.lastLog) >= every
	if due {
		s.lastLog = time.Now()
	}
	s.mu.Unlock()
	if due {
		p := s.get()
		log.Infof("Electrum index: height %d/%d committed (%d tx), %.0f tx/s", p.Height, p.Target, p.Txs, p.Rate)
	}
}

// DefaultCatchUpMemory is the memory, in MiB, a large catch-up may take on
// top of what the process holds when it starts, unless Options say
// otherwise.
const DefaultCatchUpMemory = 320

// limitMemory runs a large catch-up under a soft memory limit of what the
// process holds now plus mib, unless GOMEMLIMIT is set ("off" included) or a
// limit is (the node's while it serves): without one the collector lets the
// heap grow to twice what is live. The returned function lifts it, unless
// another was set meanwhile, and frees the memory.
func limitMemory(mib int) func() {
	if os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	limit := int64(s[0].Value.Uint64()-s[1].Value.Uint64()) + int64(mib)<<20
	debug.SetMemoryLimit(limit)
	return func() {
		if debug.SetMemoryLimit(-1) == limit {
			debug.SetMemoryLimit(math.MaxInt64)
		}
		debug.FreeOSMemory()
	}
}

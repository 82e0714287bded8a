package indexers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb"
)

// errInterrupted is returned when catch-up stops on the interrupt channel;
// everything committed until then is kept and the next start resumes.
var errInterrupted = errors.New("electrum index: interrupt requested")

// interrupted reports whether the interrupt channel is closed.
func interrupted(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Catch-up tuning.
const (
	// batchBytes is the size of a merged batch as ffldb counts its write
	// cache: each row's key and value plus its bucket id and treap node
	// (rowCost). ffldb merges a committed transaction into that cache
	// (a persistent treap), and the next commit writes the cache and
	// itself straight to leveldb once the cache holds more than two thirds
	// of its 100 MiB. So batches alternate: a merged batch a little above
	// that mark, then a direct batch some merged batches large (how many
	// follows the memory budget, catchUpSizes). Every merge starts from
	// an empty cache, only the merged batches' rows take the dearer merge
	// path, and the committer's transactions stay few (docs/BENCHMARKS.md
	// has the measurements).
	batchBytes = 72 << 20
	// maxDirectBatches bounds a direct batch in merged batches: beyond it
	// the merged rows saved no longer pay for the memory.
	maxDirectBatches = 3
	// partsPerBatch is how many parts a merged batch is handed to the
	// committer in: it puts each part into the batch's open transaction
	// while the next one is assembled, so it starts a fraction of a batch
	// after the assembler does and only the commit itself waits for the
	// batch's last block.
	partsPerBatch = 4
	// maxQueuedParts bounds the queue of parts between assembler and
	// committer.
	maxQueuedParts = 12
	// progressEvery is the interval of the progress log line.
	progressEvery = 10 * time.Second
	// rateWindow is how far back the catch-up's rate looks.
	rateWindow = 30 * time.Second
)

// DefaultCatchUpMemory is the memory, in MiB, a catch-up may take on top of
// what the process holds when it starts, unless SetCatchUpMemory says
// otherwise. With btcd's default UTXO cache (whose map btcd allocates in
// full at start) the node stays under about 500 MB.
const DefaultCatchUpMemory = 320

// MinCatchUpMemory is the smallest budget worth giving a catch-up (MiB):
// below it the rows a catch-up must hold at once (ffldb's cache of a merged
// batch while the next transaction is built) fill it, and the garbage
// collector runs all the time.
const MinCatchUpMemory = 200

// liveShare is the share of the budget the catch-up's rows may take while
// they are live; the rest is room for the garbage collector (the budget is
// the process's soft memory limit during catch-up, and a heap that lives
// close to its limit is collected all the time).
const liveShare = 0.6

// liveBytesPerCost is how many bytes of Go heap a row in flight takes per
// byte of rowCost: the treap node ffldb counts, plus the bucketed key
// ffldb copies, our own row entries and the allocators' rounding
// (measured with runtime/metrics at the peak of a catch-up).
const liveBytesPerCost = 1.3

// catchUpSizes are the batch and queue sizes of a catch-up, derived from its
// memory budget.
type catchUpSizes struct {
	merged int // rowCost of a merged batch
	direct int // rowCost of a direct batch
	part   int // rowCost of a part
	queue  int // parts queued between assembler and committer
}

// limit returns the size of a direct or merged batch.
func (z catchUpSizes) limit(direct bool) int {
	if direct {
		return z.direct
	}
	return z.merged
}

// b2i is 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sizesFor derives the sizes from a memory budget in bytes. At its peak a
// catch-up holds ffldb's cache (a merged batch), the open transaction of a
// direct batch, the queue and the part being assembled; the direct batch
// and the queue take what the budget leaves beside the merged batch, never
// less than one merged batch and two parts.
func sizesFor(budget int64, merged int) catchUpSizes {
	z := catchUpSizes{merged: merged, part: max(merged/partsPerBatch, 1)}
	rows := int64(float64(budget) * liveShare / liveBytesPerCost)
	left := rows - int64(merged) - 2*int64(z.part)
	k := int(min(max(left/int64(merged)-1, 1), maxDirectBatches))
	z.direct = k * merged
	left -= int64(z.direct)
	z.queue = int(min(max(left/int64(z.part)+1, 2), maxQueuedParts))
	return z
}

// batch is a part of the rows of many consecutive blocks written in one
// database transaction; the transaction is committed with its last part.
// Rows of unspent outputs created and spent inside the transaction cancel
// out in memory and never reach the database: the parts of one transaction
// share one unspent-output map, which the last part carries to the
// database.
//
// Rows are kept per table so that a sealed part is in key order without
// one big sort: block and transaction rows arrive in key order already
// (heights only grow), the history and txid tables are sorted apart, and
// the unspent-output map is sorted when the last part is sealed. The
// tables' tags order them: "Exb" < "Exh" < "Exi" < "Ext" < "Exu".
type batch struct {
	blk, tx []kv
	// History rows are keys with their values' places in histVals: no
	// pointers for the garbage collector to follow. ffldb keeps the
	// values it is given (and copies keys), so values have a buffer of
	// their own, which is all a part pins in ffldb's cache; it is never
	// reused.
	hist     []histRec
	histVals []byte
	txid     []txidRow
	utxo     map[[utxoKeyLen]byte]utxoOp // shared by the transaction's parts
	spent    []utxoWrite                 // the unspent-output rows of a sealed last part, in key order
	last     bool                        // the transaction commits after this part
	bytes    int                         // rowCost of the rows outside the unspent-output map
	tip      chainhash.Hash
	hgt      int32
	txs      uint64
	count    uint64    // transactions in the main chain up to tip
	stats    sizeStats // the index's size after the part
	// first and prev are the height and parent of the part's first block,
	// hashes its blocks' hashes: a trailing batch commits only if they
	// still extend the index tip in the main chain.
	first  int32
	prev   chainhash.Hash
	hashes []chainhash.Hash
}

// kv is one row to put.
type kv struct{ k, v []byte }

// Rows of the tables that hold most of a batch are kept in arrays without
// pointers, which the garbage collector does not scan: txid rows have empty
// values, and unspent-output values are 10 bytes.
type (
	txidRow [txidKeyLen]byte
	// histRec is a history row of a part: its key, and where its value
	// lies in the part's histVals.
	histRec struct {
		k      [histKeyLen]byte
		off, n uint32
	}
	// utxoOp is the net effect of a batch on one unspent-output row.
	utxoOp struct {
		v   [utxoValLen]byte
		put bool // false: delete
	}
	utxoWrite struct {
		k [utxoKeyLen]byte
		utxoOp
	}
)

// emptyVal is the value of history and txid rows.
var emptyVal = []byte{}

// newBatch returns an empty part writing unspent-output rows into utxo,
// with room for about as many rows as prev (nil: none) holds: parts are of
// one size, and tables grown by appending would allocate several times
// their size on the way.
func newBatch(utxo map[[utxoKeyLen]byte]utxoOp, prev *batch) *batch {
	b := &batch{utxo: utxo}
	if prev != nil {
		room := func(n int) int { return n + n/8 }
		b.hist = make([]histRec, 0, room(len(prev.hist)))
		b.histVals = make([]byte, 0, room(len(prev.histVals)))
		b.txid = make([]txidRow, 0, room(len(prev.txid)))
		b.tx = make([]kv, 0, room(len(prev.tx)))
		b.blk = make([]kv, 0, room(len(prev.blk)))
	}
	return b
}

// copiesRows marks the batch as a rowWriter that keeps no slice it is
// given, so applyConnect builds every key and value in scratch buffers.
func (b *batch) copiesRows() {}

// rowCost is what ffldb counts in its write cache for a row.
func rowCost(k, v []byte) int { return 76 + len(k) + len(v) }

// utxoCost is rowCost of an unspent-output row.
const utxoCost = 76 + utxoKeyLen + utxoValLen

// seal puts the part in the key order the committer writes it in; the
// last part of a transaction takes the unspent-output rows along.
// Inserting in key order keeps ffldb's treap walks on the same hot path
// from one key to the next, and sorting here runs on the assembler's
// goroutine, off the committer's.
func (b *batch) seal(last bool) {
	if last {
		b.last = true
		b.spent = make([]utxoWrite, 0, len(b.utxo))
		for k, op := range b.utxo {
			b.spent = append(b.spent, utxoWrite{k: k, utxoOp: op})
		}
		slices.SortFunc(b.spent, func(x, y utxoWrite) int { return cmpKeys(x.k[:], y.k[:]) })
	}
	b.utxo = nil
	slices.SortFunc(b.hist, func(x, y histRec) int { return cmpKeys(x.k[:], y.k[:]) })
	slices.SortFunc(b.txid, func(x, y txidRow) int { return cmpKeys(x[:], y[:]) })
}

// cmpKeys orders two keys of one table. All keys of a table share their
// three-byte prefix and the next eight bytes are hash bytes, so comparing
// them as one integer settles almost every comparison.
func cmpKeys(x, y []byte) int {
	a, b := binary.BigEndian.Uint64(x[pfx:]), binary.BigEndian.Uint64(y[pfx:])
	if a != b {
		if a < b {
			return -1
		}
		return 1
	}
	return bytes.Compare(x[pfx+8:], y[pfx+8:])
}

// Put implements rowWriter. It copies every key and value: applyConnect
// hands a batch rows in reused buffers.
func (b *batch) Put(k, v []byte) error {
	switch k[2] {
	case tagUtxo:
		b.utxo[[utxoKeyLen]byte(k)] = utxoOp{v: [utxoValLen]byte(v), put: true}
		return nil
	case tagHist:
		b.hist = append(b.hist, histRec{k: [histKeyLen]byte(k), off: uint32(len(b.histVals)), n: uint32(len(v))})
		b.histVals = append(b.histVals, v...)
	case tagTxid:
		b.txid = append(b.txid, txidRow(k))
	case tagTx:
		b.tx = append(b.tx, kv{bytes.Clone(k), bytes.Clone(v)})
	default:
		b.blk = append(b.blk, kv{bytes.Clone(k), bytes.Clone(v)})
	}
	b.bytes += rowCost(k, v)
	return nil
}

// Delete implements rowWriter. Catch-up only connects blocks, so the only
// deletes are spends: of an output funded in this batch (both vanish) or of
// an older one (a delete reaches the database).
func (b *batch) Delete(k []byte) error {
	a := [utxoKeyLen]byte(k)
	if op, ok := b.utxo[a]; ok && op.put {
		delete(b.utxo, a)
		return nil
	}
	b.utxo[a] = utxoOp{}
	return nil
}

// histRow returns the key and value of the part's i-th history row.
func (b *batch) histRow(i int) (k, v []byte) {
	r := &b.hist[i]
	return r.k[:], b.histVals[r.off : r.off+r.n : r.off+r.n]
}

// writes returns the number of database writes the sealed part makes.
func (b *batch) writes() int {
	n := len(b.blk) + len(b.hist) + len(b.txid) + len(b.tx) + len(b.spent)
	if b.last {
		n += 2
	}
	return n
}

// write applies the sealed part, in key order, to the index's view of the
// transaction; the last part also moves the index tip. The tables' tags
// order them: "Exb" < "Exh" < "Exi" < "Ext" < "Exu".
func (b *batch) write(meta database.Bucket) error {
	if err := b.writeRows(meta); err != nil {
		return err
	}
	if !b.last {
		return nil
	}
	if err := meta.Put(statsKey, encodeStats(b.stats)); err != nil {
		return err
	}
	return putTip(meta, &b.tip, b.hgt)
}

// writeRows applies the sealed part's rows, in key order, to w.
func (b *batch) writeRows(meta rowWriter) error {
	for _, p := range b.blk {
		if err := meta.Put(p.k, p.v); err != nil {
			return err
		}
	}
	for i := range b.hist {
		k, v := b.histRow(i)
		if err := meta.Put(k, v); err != nil {
			return err
		}
	}
	for i := range b.txid {
		if err := meta.Put(b.txid[i][:], emptyVal); err != nil {
			return err
		}
	}
	for _, p := range b.tx {
		if err := meta.Put(p.k, p.v); err != nil {
			return err
		}
	}
	// ffldb keeps the values it is given until its cache is flushed: the
	// unspent-output values go in a buffer of their own, so that they do
	// not pin the part's array of rows, keys included.
	var vals []byte
	for i := range b.spent {
		r := &b.spent[i]
		var err error
		if r.put {
			if len(vals) == 0 {
				vals = make([]byte, utxoValLen*(len(b.spent)-i))
			}
			v := vals[:utxoValLen:utxoValLen]
			vals = vals[utxoValLen:]
			copy(v, r.v[:])
			err = meta.Put(r.k[:], v)
		} else {
			err = meta.Delete(r.k[:])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CatchUpProgress describes the index's catch-up: the one running, or the
// last one that ran. Every figure except Assembled counts committed work
// only, what a reader of the database sees.
type CatchUpProgress struct {
	// Running is true while blocks are being caught up.
	Running bool
	// From and Target are the first and last heights of the catch-up.
	From, Target int32
	// Height is the last height committed to the database.
	Height int32
	// Assembled is the last height handed on to the committer; the blocks
	// between Height and Assembled are in flight and lost on a crash.
	Assembled int32
	// Txs is the number of transactions committed, TargetTxs the number
	// the catch-up indexes in all, and Writes the number of rows put or
	// deleted in the database.
	Txs, TargetTxs, Writes uint64
	// Batches is the number of database transactions committed.
	Batches int
	// Rate is the transactions committed per second over the last 30 s
	// (from the start while it is younger), measured up to the moment of
	// reading; ETA is how long the remaining transactions take at that
	// rate. Both are zero while unknown; once the catch-up has finished,
	// Rate is its average and ETA zero.
	Rate float64
	ETA  time.Duration
	// MemoryLimit is the process's soft memory limit (bytes) the catch-up
	// ran under; zero when it set none (a limit set before, such as
	// GOMEMLIMIT, is left alone).
	MemoryLimit int64
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

// Progress returns the state of the index's catch-up.
func (idx *ElectrumIndex) Progress() CatchUpProgress {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	p := idx.progress
	switch {
	case p.Running:
		p.Rate, p.ETA = idx.committed.rate(time.Now(), p.Txs, p.TargetTxs)
	case !p.Finished.IsZero() && p.Duration() > 0:
		p.Rate = float64(p.Txs) / p.Duration().Seconds()
	}
	return p
}

// commitSample is the number of transactions committed at a moment.
type commitSample struct {
	at  time.Time
	txs uint64
}

// commitWindow holds the catch-up's commits of the last rateWindow, and the
// last one before it (or the start) as the anchor a rate is measured from.
type commitWindow struct{ samples []commitSample }

// add records that txs transactions were committed by at.
func (w *commitWindow) add(at time.Time, txs uint64) {
	w.samples = append(w.samples, commitSample{at, txs})
	for len(w.samples) > 2 && at.Sub(w.samples[1].at) >= rateWindow {
		w.samples = w.samples[1:]
	}
}

// rate returns the transactions committed per second from the newest
// sample at least rateWindow old (the oldest there is, when none is) to
// now, and the time the rest of target takes at that rate. The time since
// the last commit counts: work not committed yet is not progress.
func (w *commitWindow) rate(now time.Time, txs, target uint64) (float64, time.Duration) {
	if len(w.samples) == 0 {
		return 0, 0
	}
	anchor := w.samples[0]
	for i := len(w.samples) - 1; i > 0; i-- {
		if now.Sub(w.samples[i].at) >= rateWindow {
			anchor = w.samples[i]
			break
		}
	}
	el := now.Sub(anchor.at).Seconds()
	if el <= 0 || txs <= anchor.txs {
		return 0, 0
	}
	r := float64(txs-anchor.txs) / el
	var eta time.Duration
	if target > txs {
		eta = time.Duration(float64(target-txs) / r * float64(time.Second))
	}
	return r, eta
}

// logProgress logs the catch-up's committed progress.
func (idx *ElectrumIndex) logProgress() {
	p := idx.Progress()
	eta := "unknown"
	if p.ETA > 0 {
		eta = p.ETA.Round(time.Second).String()
	}
	log.Infof("Electrum index: height %d/%d committed (%d/%d tx), %.0f tx/s, ETA %s; assembled to %d",
		p.Height, p.Target, p.Txs, p.TargetTxs, p.Rate, eta, p.Assembled)
}

// SetCatchUpMemory sets the memory, in MiB, a catch-up may take on top of
// what the process holds when it starts (zero or less: the default,
// DefaultCatchUpMemory). It sizes the catch-up's batches and queue, and the
// process runs under a soft memory limit of its memory at the start plus
// this much while it catches up. More memory buys larger direct batches
// (fewer rows take ffldb's merge path) and a deeper queue.
func (idx *ElectrumIndex) SetCatchUpMemory(mib int) {
	idx.mu.Lock()
	idx.catchUpMiB = mib
	idx.mu.Unlock()
}

// limitMemory derives the catch-up's sizes from its budget and, unless the
// process already has a soft memory limit, sets one for the catch-up. The
// returned function restores the limit and returns the memory the catch-up
// freed to the operating system.
func (idx *ElectrumIndex) limitMemory() (catchUpSizes, int64, func()) {
	idx.mu.Lock()
	mib, merged := idx.catchUpMiB, idx.batchBytes
	idx.mu.Unlock()
	if mib <= 0 {
		mib = DefaultCatchUpMemory
	}
	if merged <= 0 {
		merged = batchBytes
	}
	budget := int64(mib) << 20
	sz := sizesFor(budget, merged)
	old := debug.SetMemoryLimit(-1)
	if old != math.MaxInt64 {
		return sz, 0, func() {}
	}
	// Collect and return what is free first, so the limit starts from
	// what the process holds.
	debug.FreeOSMemory()
	limit := goMemory() + budget
	debug.SetMemoryLimit(limit)
	return sz, limit, func() {
		debug.SetMemoryLimit(old)
		debug.FreeOSMemory()
	}
}

// goMemory returns the memory the Go runtime holds from the operating
// system, as its soft memory limit counts it.
func goMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// fetched is one block read and planned by a catch-up worker.
type fetched struct {
	plan *blockPlan
	err  error
}

// catchUpMode says what a catch-up runs for.
type catchUpMode int

const (
	// catchUpStart brings the index to the chain tip before the chain
	// starts connecting blocks: nothing else writes meanwhile.
	catchUpStart catchUpMode = iota
	// catchUpTrailing runs beside a chain connecting blocks (trail.go):
	// batches are handed to the committer whole, so the database's write
	// lock is held only while one is written, each batch is checked to
	// extend the index tip in the main chain before it commits, and the
	// in-memory tip moves with every commit.
	catchUpTrailing
	// catchUpExtend extends the base beside a chain connecting blocks
	// (trail.go, trailExtend): each batch is checked to link up, and the
	// run follows the chain as it grows, until the chain pauses.
	catchUpExtend
)

const (
	// followPoll is how often an extension looks for the chain's new
	// blocks once it has read up to its tip.
	followPoll = 20 * time.Millisecond
	// followEnd is the pause of the chain after which an extension
	// commits the batch it holds and ends. Each naming costs a flush of
	// ffldb's write cache (trailExtend), so an extension commits only full
	// batches until then.
	followEnd = 500 * time.Millisecond
)

// catchUp brings the index from its tip to the chain tip: parallel workers
// read blocks and spend journals and plan their rows, one goroutine orders
// the plans into large batches, and one committer writes each batch with the
// new tip in a single transaction. An interrupt or a crash loses at most the
// batch in flight; the next start resumes from the last committed tip.
func (idx *ElectrumIndex) catchUp(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	return idx.catchUpWith(chain, interrupt, catchUpStart)
}

// catchUpWith is catchUp for a mode.
func (idx *ElectrumIndex) catchUpWith(chain *blockchain.BlockChain, interrupt <-chan struct{}, mode catchUpMode) error {
	return idx.catchUpTo(chain, interrupt, mode, chain.BestSnapshot(), nil)
}

// catchUpTo is catchUpWith up to the block of best. A build of the base
// (idx.building) starts from the base's tip and leaves the index tip alone;
// an extension (catchUpExtend) follows the chain past best and calls name
// after each commit, with the base's new tip.
func (idx *ElectrumIndex) catchUpTo(chain *blockchain.BlockChain, interrupt <-chan struct{}, mode catchUpMode,
	best *blockchain.BestState, name func(memTip) error) error {

	trailing := mode == catchUpTrailing
	idx.mu.Lock()
	start := idx.tip
	if idx.building != nil {
		start = idx.buildTip
		if !start.valid {
			start = memTip{valid: true, height: -1}
		}
	}
	idx.mu.Unlock()
	from := start.height + 1
	if from > best.Height {
		return nil
	}
	sz, limit, release := idx.limitMemory()
	defer release()
	if trailing {
		// Whole batches only: the committer holds the write lock, which
		// the chain waits for, only while it writes one.
		sz.part = int(^uint(0) >> 1)
		log.Debugf("Electrum index: trailing the chain from height %d to %d (batches of %d and %d MiB, memory limit %s)",
			from, best.Height, sz.merged>>20, sz.direct>>20, limitString(limit))
	} else {
		log.Infof("Electrum index: catching up from height %d to %d (batches of %d and %d MiB, memory limit %s)",
			from, best.Height, sz.merged>>20, sz.direct>>20, limitString(limit))
	}
	now := time.Now()
	idx.mu.Lock()
	idx.progress = CatchUpProgress{Running: true, From: from, Target: best.Height,
		Height: start.height, Assembled: start.height, TargetTxs: best.TotalTxns - start.txCount,
		MemoryLimit: limit, Started: now}
	idx.committed = commitWindow{}
	idx.committed.add(now, 0)
	idx.mu.Unlock()
	defer func() {
		idx.mu.Lock()
		idx.progress.Running = false
		idx.progress.Finished = time.Now()
		idx.mu.Unlock()
	}()

	workers := runtime.GOMAXPROCS(0)
	stop := make(chan struct{})
	defer close(stop)

	// The progress line, from committed work.
	go func() {
		t := time.NewTicker(idx.progressInterval())
		defer t.Stop()
		for {
			select {
			case <-t.C:
				idx.logProgress()
			case <-stop:
				return
			}
		}
	}()

	// Dispatch heights in order; each job carries its own result channel and
	// the queue of those channels keeps the order for the assembler. An
	// extension goes on with the blocks the chain connects meanwhile, until
	// the chain pauses.
	type job struct {
		height int32
		out    chan fetched
	}
	jobs := make(chan job)
	queue := make(chan chan fetched, 4*workers)
	go func() {
		defer close(queue)
		defer close(jobs)
		last := best.Height
		quiet := time.Now()
		for h := from; ; h++ {
			for h > last {
				if mode != catchUpExtend {
					return
				}
				if nb := chain.BestSnapshot(); nb.Height > last {
					last, quiet = nb.Height, time.Now()
					idx.mu.Lock()
					idx.progress.Target = last
					idx.progress.TargetTxs = nb.TotalTxns - start.txCount
					idx.mu.Unlock()
					continue
				}
				if time.Since(quiet) >= followEnd {
					return
				}
				select {
				case <-time.After(followPoll):
				case <-stop:
					return
				case <-interrupt:
					return
				}
			}
			j := job{height: h, out: make(chan fetched, 1)}
			select {
			case queue <- j.out:
			case <-stop:
				return
			}
			select {
			case jobs <- j:
			case <-stop:
				return
			}
		}
	}()
	for w := 0; w < workers; w++ {
		go func() {
			for j := range jobs {
				j.out <- fetchAndPlan(chain, j.height)
			}
		}()
	}

	// The committer puts each part into its transaction while the next one
	// is assembled and commits with a transaction's last part. The queue
	// lets the assembler go on while a batch commits.
	commits := make(chan *batch, sz.queue)
	commitErr := make(chan error, 1)
	go func() {
		var (
			err    error
			dbTx   database.Tx
			txs    uint64
			writes int
			guard  batch // first, prev and hashes of the transaction's parts
			began  time.Time
			locked time.Duration // write lock held, summed over the run
		)
		var (
			ltx *leveldb.Transaction
			// pending: the keys an extension's transaction deletes
			// once it is named (base.go, pendingPrefix).
			pending []byte
		)
		for b := range commits {
			if err != nil {
				continue
			}
			if idx.building != nil && !trailing {
				// Building the base: one leveldb transaction per
				// batch, with the base's tip.
				if ltx == nil {
					if ltx, err = idx.building.OpenTransaction(); err != nil {
						ltx = nil
						continue
					}
				}
				w := baseTx{t: ltx}
				if mode == catchUpExtend {
					w.pending = &pending
				}
				err = b.writeRows(w)
				t := memTip{valid: true, hash: b.tip, height: b.hgt, txCount: b.count, stats: b.stats}
				if err == nil && b.last && len(pending) > 0 {
					err = putPending(ltx, t.height, pending)
					pending = pending[:0]
				}
				if err == nil && b.last {
					err = ltx.Put(baseTipKey, encodeBaseTip(t), nil)
				}
				if err != nil {
					ltx.Discard()
					ltx = nil
					pending = pending[:0]
					continue
				}
				txs += b.txs
				writes += b.writes()
				if !b.last {
					continue
				}
				err = ltx.Commit()
				ltx = nil
				if err == nil {
					idx.mu.Lock()
					// Readers and the hooks go on seeing the index
					// tip: the rows are the index's once nameBase
					// names them (or name, for an extension).
					idx.buildTip = t
					idx.progress.Height = b.hgt
					idx.progress.Txs += txs
					idx.progress.Writes += uint64(writes)
					idx.progress.Batches++
					idx.committed.add(time.Now(), idx.progress.Txs)
					idx.mu.Unlock()
					if name != nil {
						err = name(t)
					}
					if err == nil && idx.afterCommit != nil {
						idx.afterCommit()
					}
				}
				txs, writes = 0, 0
				continue
			}
			if dbTx == nil {
				if dbTx, err = idx.db.Begin(true); err != nil {
					dbTx = nil
					continue
				}
				began = time.Now()
			}
			meta, done := idx.view(dbTx)
			err = b.write(meta)
			done()
			if err != nil {
				_ = dbTx.Rollback()
				dbTx = nil
				continue
			}
			txs += b.txs
			writes += b.writes()
			if len(guard.hashes) == 0 {
				guard.first, guard.prev = b.first, b.prev
			}
			guard.hashes = append(guard.hashes, b.hashes...)
			if !b.last {
				continue
			}
			if trailing {
				// Checked and moved while this transaction holds the
				// write lock, so that no hook runs between the commit
				// and the in-memory tip.
				err = idx.trailCommit(dbTx, guard.prev, guard.first, guard.hashes,
					memTip{valid: true, hash: b.tip, height: b.hgt, txCount: b.count, stats: b.stats})
			} else {
				// The tip moves without the held rows (held.go).
				idx.mu.Lock()
				idx.forgetHeld()
				idx.mu.Unlock()
				err = dbTx.Commit()
			}
			dbTx = nil
			if trailing {
				// While trailing, the chain waits for this lock.
				held := time.Since(began)
				locked += held
				log.Debugf("Electrum index: trailing batch to height %d (%d tx, %d writes) held the database write lock %v",
					b.hgt, txs, writes, held.Round(time.Millisecond))
			}
			if err == nil {
				if idx.afterCommit != nil {
					idx.afterCommit()
				}
				idx.mu.Lock()
				idx.progress.Height = b.hgt
				idx.progress.Txs += txs
				idx.progress.Writes += uint64(writes)
				idx.progress.Batches++
				idx.committed.add(time.Now(), idx.progress.Txs)
				idx.mu.Unlock()
			}
			txs, writes, guard = 0, 0, batch{}
		}
		if dbTx != nil {
			// Only a last part commits; the assembler always sends one.
			_ = dbTx.Rollback()
		}
		if ltx != nil {
			ltx.Discard()
		}
		if trailing && locked > 0 {
			log.Debugf("Electrum index: trailing run held the database write lock %v in all", locked.Round(time.Millisecond))
		}
		commitErr <- err
	}()

	var (
		count   = start.txCount
		stats   = start.stats
		utxo    = make(map[[utxoKeyLen]byte]utxoOp)
		b       = newBatch(utxo, nil)
		mapSize [2]int // the unspent-output maps' sizes of the last merged and direct batches
		sent    = 0    // rowCost of the parts of this transaction already sent
		t0      = time.Now()
		done    = 0
		loopErr error
		direct  = false // whether the transaction being assembled is a direct batch
		parent  = start.hash
	)
	for out := range queue {
		f := <-out
		if f.err != nil {
			loopErr = f.err
			break
		}
		p := f.plan
		if (trailing || mode == catchUpExtend) && p.prev != parent {
			// The chain reorganized while its blocks were read.
			loopErr = errTrailMoved
			break
		}
		parent = p.hash
		stats = stats.add(applyConnect(b, p, count))
		idx.heavy.add(p)
		count += uint64(len(p.txs))
		if len(b.hashes) == 0 {
			b.first, b.prev = p.height, p.prev
		}
		b.hashes = append(b.hashes, p.hash)
		b.tip, b.hgt, b.stats, b.count = p.hash, p.height, stats, count
		b.txs += uint64(len(p.txs))
		// Before the block can reach the committer.
		idx.mu.Lock()
		idx.progress.Assembled = p.height
		idx.mu.Unlock()
		// The batch copied every row: the plan's arrays serve another
		// block.
		planPool.Put(p.bufs)
		done++
		switch {
		case sent+b.bytes+len(utxo)*utxoCost >= sz.limit(direct):
			mapSize[b2i(direct)] = len(utxo)
			b.seal(true)
			next := newBatch(nil, b)
			commits <- b
			direct = !direct
			utxo = make(map[[utxoKeyLen]byte]utxoOp, mapSize[b2i(direct)])
			next.utxo = utxo
			b, sent = next, 0
		case b.bytes >= sz.part:
			b.seal(false)
			next := newBatch(utxo, b)
			commits <- b
			sent += b.bytes
			// The tip so far, should the last part come without blocks.
			next.tip, next.hgt, next.stats, next.count = b.tip, b.hgt, b.stats, b.count
			b = next
		}
		if interrupted(interrupt) {
			loopErr = errInterrupted
			break
		}
	}
	if b.txs > 0 || sent > 0 {
		b.seal(true)
		commits <- b
	}
	close(commits)
	if err := <-commitErr; err != nil {
		return err
	}
	if loopErr != nil {
		if loopErr == errInterrupted && !trailing {
			log.Infof("Electrum index: catch-up interrupted after %d blocks; it resumes on the next start", done)
		}
		return loopErr
	}
	elapsed := time.Since(t0)
	if trailing {
		log.Debugf("Electrum index: trailed %d blocks (%d tx) in %v (%.0f tx/s)", done,
			count-start.txCount, elapsed.Round(time.Millisecond),
			float64(count-start.txCount)/elapsed.Seconds())
		return nil
	}
	log.Infof("Electrum index: caught up %d blocks (%d tx) in %v (%.0f tx/s)", done,
		count-start.txCount, elapsed.Round(time.Millisecond),
		float64(count-start.txCount)/elapsed.Seconds())
	if idx.building != nil {
		// The tip is the base's until finishBase names it in ffldb.
		return nil
	}
	if err := idx.Init(); err != nil {
		return err
	}
	idx.goHoldHeavy()
	return nil
}

// limitString formats a memory limit for the log.
func limitString(limit int64) string {
	if limit <= 0 {
		return "as set before"
	}
	return fmt.Sprintf("%d MiB", limit>>20)
}

// fetchAndPlan reads the main-chain block at height and its spent outputs
// and plans its rows.
func fetchAndPlan(chain *blockchain.BlockChain, height int32) fetched {
	block, err := chain.BlockByHeight(height)
	if err != nil {
		return fetched{err: fmt.Errorf("electrum index catch-up: block %d: %w", height, err)}
	}
	var stxos []blockchain.SpentTxOut
	if height > 0 {
		stxos, err = chain.FetchSpendJournal(block)
		if err != nil {
			return fetched{err: fmt.Errorf("electrum index catch-up: spend journal of block %d: %w", height, err)}
		}
	}
	raw, err := block.Bytes()
	if err != nil {
		return fetched{err: fmt.Errorf("electrum index catch-up: block %d: %w", height, err)}
	}
	return fetched{plan: planBlockRaw(block, raw, stxos, height == 0, planPool.Get().(*planBufs))}
}

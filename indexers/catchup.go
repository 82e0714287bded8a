package indexers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
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
	// that mark, then a direct batch directBatches times its size. Only a
	// quarter of the rows take the merge path, every merge starts from an
	// empty cache, and the committer's transactions stay few
	// (docs/BENCHMARKS.md has the measurements).
	batchBytes = 72 << 20
	// directBatches is the size of a direct batch in merged batches.
	directBatches = 3
	// partsPerBatch is how many parts a merged batch is handed to the
	// committer in: it puts each part into the batch's open transaction
	// while the next one is assembled, so it starts a fraction of a batch
	// after the assembler does and only the commit itself waits for the
	// batch's last block.
	partsPerBatch = 4
	// progressEvery is the interval of the progress log line.
	progressEvery = 10 * time.Second
)

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
	blk, hist, txid, tx []kv
	utxo                map[[utxoKeyLen]byte]utxoOp // shared by the transaction's parts
	spent               []kv                        // the unspent-output rows of a sealed last part, in key order
	last                bool                        // the transaction commits after this part
	bytes               int                         // rowCost of the rows outside the unspent-output map
	tip                 chainhash.Hash
	hgt                 int32
	txs                 uint64
	count               uint64    // transactions in the main chain up to tip
	stats               sizeStats // the index's size after the part
	// first and prev are the height and parent of the part's first block,
	// hashes its blocks' hashes: a trailing batch commits only if they
	// still extend the index tip in the main chain.
	first  int32
	prev   chainhash.Hash
	hashes []chainhash.Hash
}

// kv is one row to put.
type kv struct{ k, v []byte }

// utxoOp is the net effect of a batch on one unspent-output row.
type utxoOp struct {
	k, v []byte // v == nil: delete
}

// newBatch returns an empty part writing unspent-output rows into utxo.
func newBatch(utxo map[[utxoKeyLen]byte]utxoOp) *batch {
	return &batch{utxo: utxo}
}

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
		b.spent = make([]kv, 0, len(b.utxo))
		for _, op := range b.utxo {
			b.spent = append(b.spent, kv{k: op.k, v: op.v})
		}
		sortRows(b.spent)
	}
	b.utxo = nil
	sortRows(b.hist)
	sortRows(b.txid)
}

// sortRows sorts rows of one table by key. All keys of a table share their
// three-byte prefix and the next eight bytes are hash bytes, so comparing
// them as one integer settles almost every comparison.
func sortRows(rows []kv) {
	slices.SortFunc(rows, func(x, y kv) int {
		a, b := binary.BigEndian.Uint64(x.k[pfx:]), binary.BigEndian.Uint64(y.k[pfx:])
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
		return bytes.Compare(x.k[pfx+8:], y.k[pfx+8:])
	})
}

// Put implements rowWriter.
func (b *batch) Put(k, v []byte) error {
	switch k[2] {
	case tagUtxo:
		b.utxo[[utxoKeyLen]byte(k)] = utxoOp{k: k, v: v}
	case tagHist:
		b.hist = append(b.hist, kv{k, v})
	case tagTxid:
		b.txid = append(b.txid, kv{k, v})
	case tagTx:
		b.tx = append(b.tx, kv{k, v})
	default:
		b.blk = append(b.blk, kv{k, v})
	}
	if k[2] != tagUtxo {
		b.bytes += rowCost(k, v)
	}
	return nil
}

// Delete implements rowWriter. Catch-up only connects blocks, so the only
// deletes are spends: of an output funded in this batch (both vanish) or of
// an older one (a delete reaches the database).
func (b *batch) Delete(k []byte) error {
	a := [utxoKeyLen]byte(k)
	if op, ok := b.utxo[a]; ok && op.v != nil {
		delete(b.utxo, a)
		return nil
	}
	b.utxo[a] = utxoOp{k: k}
	return nil
}

// writes returns the number of database writes the sealed part makes.
func (b *batch) writes() int {
	n := len(b.blk) + len(b.hist) + len(b.txid) + len(b.tx) + len(b.spent)
	if b.last {
		n += 2
	}
	return n
}

// write applies the sealed part, in key order, to the transaction; the
// last part also moves the index tip. A nil value is a delete.
func (b *batch) write(dbTx database.Tx) error {
	meta := dbTx.Metadata()
	for _, table := range [][]kv{b.blk, b.hist, b.txid, b.tx, b.spent} {
		for _, p := range table {
			var err error
			if p.v == nil {
				err = meta.Delete(p.k)
			} else {
				err = meta.Put(p.k, p.v)
			}
			if err != nil {
				return err
			}
		}
	}
	if !b.last {
		return nil
	}
	if err := meta.Put(statsKey, encodeStats(b.stats)); err != nil {
		return err
	}
	tips := meta.Bucket(indexTipsBucketName)
	return tips.Put(electrumIndexKey, tipVal(&b.tip, b.hgt))
}

// CatchUpProgress describes the index's catch-up: the one running, or the
// last one that ran.
type CatchUpProgress struct {
	// Running is true while blocks are being caught up.
	Running bool
	// From and Target are the first and last heights of the catch-up.
	From, Target int32
	// Height is the last height committed.
	Height int32
	// Txs is the number of transactions indexed and Writes the number of
	// rows put or deleted in the database.
	Txs, Writes uint64
	// Batches is the number of database transactions committed.
	Batches int
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
	return idx.progress
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
	trailing := mode == catchUpTrailing
	idx.mu.Lock()
	start := idx.tip
	idx.mu.Unlock()
	best := chain.BestSnapshot()
	from := start.height + 1
	if from > best.Height {
		return nil
	}
	if trailing {
		log.Debugf("Electrum index: trailing the chain from height %d to %d", from, best.Height)
	} else {
		log.Infof("Electrum index: catching up from height %d to %d", from, best.Height)
	}
	idx.mu.Lock()
	idx.progress = CatchUpProgress{Running: true, From: from, Target: best.Height,
		Height: start.height, Started: time.Now()}
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

	// Dispatch heights in order; each job carries its own result channel and
	// the queue of those channels keeps the order for the assembler.
	type job struct {
		height int32
		out    chan fetched
	}
	jobs := make(chan job)
	queue := make(chan chan fetched, 4*workers)
	go func() {
		defer close(queue)
		defer close(jobs)
		for h := from; h <= best.Height; h++ {
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
	// holds a direct batch's parts, so the assembler goes on while a merged
	// batch commits.
	commits := make(chan *batch, directBatches*partsPerBatch)
	commitErr := make(chan error, 1)
	go func() {
		var (
			err    error
			dbTx   database.Tx
			txs    uint64
			writes int
			guard  batch // first, prev and hashes of the transaction's parts
		)
		for b := range commits {
			if err != nil {
				continue
			}
			if dbTx == nil {
				if dbTx, err = idx.db.Begin(true); err != nil {
					dbTx = nil
					continue
				}
			}
			if err = b.write(dbTx); err != nil {
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
				if err = idx.trailCommit(dbTx, guard.prev, guard.first, guard.hashes,
					memTip{valid: true, hash: b.tip, height: b.hgt, txCount: b.count, stats: b.stats}); err != nil {
					dbTx = nil
					continue
				}
			} else {
				err = dbTx.Commit()
			}
			dbTx = nil
			if err == nil {
				idx.mu.Lock()
				idx.progress.Height = b.hgt
				idx.progress.Txs += txs
				idx.progress.Writes += uint64(writes)
				idx.progress.Batches++
				idx.mu.Unlock()
			}
			txs, writes, guard = 0, 0, batch{}
		}
		if dbTx != nil {
			// Only a last part commits; the assembler always sends one.
			_ = dbTx.Rollback()
		}
		commitErr <- err
	}()

	var (
		count     = start.txCount
		stats     = start.stats
		utxo      = make(map[[utxoKeyLen]byte]utxoOp)
		b         = newBatch(utxo)
		sent      = 0 // rowCost of the parts of this transaction already sent
		t0        = time.Now()
		lastLog   = t0
		done      = 0
		loopErr   error
		lastTxs   = count
		lastLogAt = t0
		merged    = batchBytes
		limit     = batchBytes
		parent    = start.hash
	)
	if idx.batchBytes > 0 {
		merged, limit = idx.batchBytes, idx.batchBytes
	}
	parts := merged / partsPerBatch
	if trailing {
		// Whole batches only: the committer holds the write lock, which
		// the chain waits for, only while it writes one.
		parts = int(^uint(0) >> 1)
	}
	for out := range queue {
		f := <-out
		if f.err != nil {
			loopErr = f.err
			break
		}
		p := f.plan
		if trailing && p.prev != parent {
			// The chain reorganized while its blocks were read.
			loopErr = errTrailMoved
			break
		}
		parent = p.hash
		stats = stats.add(applyConnect(b, p, count))
		count += uint64(len(p.txs))
		if len(b.hashes) == 0 {
			b.first, b.prev = p.height, p.prev
		}
		b.hashes = append(b.hashes, p.hash)
		b.tip, b.hgt, b.stats, b.count = p.hash, p.height, stats, count
		b.txs += uint64(len(p.txs))
		done++
		switch {
		case sent+b.bytes+len(utxo)*utxoCost >= limit:
			b.seal(true)
			commits <- b
			utxo = make(map[[utxoKeyLen]byte]utxoOp)
			b, sent = newBatch(utxo), 0
			if limit == merged {
				limit = directBatches * merged
			} else {
				limit = merged
			}
		case b.bytes >= parts:
			b.seal(false)
			commits <- b
			sent += b.bytes
			next := newBatch(utxo)
			// The tip so far, should the last part come without blocks.
			next.tip, next.hgt, next.stats, next.count = b.tip, b.hgt, b.stats, b.count
			b = next
		}
		if now := time.Now(); now.Sub(lastLog) >= idx.progressInterval() {
			rate := float64(count-lastTxs) / now.Sub(lastLogAt).Seconds()
			eta := "unknown"
			if rate > 0 && best.TotalTxns > count {
				eta = (time.Duration(float64(best.TotalTxns-count)/rate) * time.Second).Round(time.Second).String()
			}
			log.Infof("Electrum index: height %d/%d, %.0f tx/s, ETA %s", p.height, best.Height, rate, eta)
			lastLog, lastLogAt, lastTxs = now, now, count
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
	return idx.Init()
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
	return fetched{plan: planBlock(block, stxos, height == 0)}
}

package indexers

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
)

// A script with tens of thousands of unspent outputs takes tens of
// milliseconds to read with one cursor, most of it leveldb stepping from
// row to row and loading table blocks. Such lists are read by several
// cursors of the same snapshot at once, each over its own range of heights.
const (
	// scanSplitAfter is how many rows one cursor reads before the rest of
	// the list is split; shorter lists pay for no goroutine.
	scanSplitAfter = 4096
	// scanRanges is how many height ranges the rest is split into; the
	// cursors take ranges in turn, so an uneven spread of heights still
	// keeps them all busy.
	scanRanges = 16
	// maxScanWorkers bounds the cursors of one scan.
	maxScanWorkers = 4
)

// scanWorkers is the number of cursors a split scan runs.
func scanWorkers() int { return min(runtime.GOMAXPROCS(0), maxScanWorkers) }

// utxoScan reads the unspent-output rows of one script from one view, in
// parts: part 0 holds the rows read before the split, part i the rows of
// the i-th height range after it. Parts are in key order, and so is every
// row within a part.
type utxoScan struct {
	r     kvReader
	hx    *hashX
	top   int32 // highest height a row may have: the view's tip
	limit int   // stop when more rows than this exist (0: no limit)
	split int   // rows read by one cursor before the split

	rows atomic.Int64 // rows read so far, across all cursors
	over atomic.Bool  // more than limit rows exist
}

// run calls row(part, r) for every decodable row; s.over tells afterwards
// whether the scan stopped because the list is over the limit. Part 0
// exists from the start; newPart(n) is called once with the number of
// parts, before any row of part 1 or later is handed to row. row is called
// concurrently for different parts, never for one part.
func (s *utxoScan) run(c cursor, newPart func(n int), row func(part int, r *utxoRow)) {
	first, more := s.readHead(c, row)
	if !more {
		newPart(1)
		return
	}
	span := int64(s.top) - int64(first) + 1
	ranges := int(min(max(span, 1), scanRanges))
	newPart(1 + ranges)
	bound := func(i int) int32 {
		if i >= ranges {
			return -1 // open
		}
		return first + int32(span*int64(i)/int64(ranges))
	}
	var (
		next atomic.Int32
		wg   sync.WaitGroup
	)
	work := func(c cursor) {
		defer wg.Done()
		for {
			i := int(next.Add(1)) - 1
			if i >= ranges || s.over.Load() {
				return
			}
			s.readRange(c, bound(i), bound(i+1), func(r *utxoRow) { row(1+i, r) })
		}
	}
	workers := scanWorkers()
	wg.Add(workers)
	for w := 1; w < workers; w++ {
		go work(s.r.Cursor())
	}
	work(c)
	wg.Wait()
}

// readHead reads part 0 with c: the first s.split rows and the rest of the
// height they end in. more reports that rows remain, from height first on,
// with c positioned at the first of them.
func (s *utxoScan) readHead(c cursor, row func(part int, r *utxoRow)) (first int32, more bool) {
	pre := utxoPrefix(s.hx)
	first = -1 // height of the first row after the split
	n := 0
	for ok := c.Seek(pre); ok; ok = c.Next() {
		k := c.Key()
		if !bytes.HasPrefix(k, pre) {
			break
		}
		yieldEvery(n)
		r, ok := decodeUtxo(k, c.Value())
		if !ok {
			continue
		}
		if n >= s.split && r.height != first {
			if first >= 0 {
				// r is the first row of a later height: split here.
				first = r.height
				break
			}
			// Finish the height being read, then split.
			first = r.height
		}
		if !s.count(1) {
			return 0, false
		}
		row(0, &r)
		n++
	}
	if n < s.split || first < 0 || s.over.Load() {
		return 0, false
	}
	// Did the loop stop on a row of a later height, or at the end?
	k := c.Key()
	if k == nil || !bytes.HasPrefix(k, pre) {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(k[pfx+hashXLen:])), true
}

// readRange reads with c the rows of heights lo up to hi (exclusive; -1:
// open).
func (s *utxoScan) readRange(c cursor, lo, hi int32, row func(r *utxoRow)) {
	pre := utxoPrefix(s.hx)
	key := make([]byte, len(pre)+4)
	copy(key, pre)
	binary.BigEndian.PutUint32(key[len(pre):], uint32(lo))
	rows := 0
	for ok := c.Seek(key); ok; ok = c.Next() {
		k := c.Key()
		if !bytes.HasPrefix(k, pre) {
			break
		}
		rows++
		yieldEvery(rows)
		r, ok := decodeUtxo(k, c.Value())
		if !ok {
			continue
		}
		if hi >= 0 && r.height >= hi {
			break
		}
		if !s.count(1) {
			return
		}
		row(&r)
	}
}

// count adds n rows and reports whether the list is still within the limit.
func (s *utxoScan) count(n int64) bool {
	if s.over.Load() {
		return false
	}
	if t := s.rows.Add(n); s.limit > 0 && t > int64(s.limit) {
		s.over.Store(true)
		return false
	}
	return true
}

// totalUnspent returns the number and the sum of the unspent rows of hx up
// to height top, read with c and, past split rows, several cursors.
func totalUnspent(r kvReader, c cursor, hx *hashX, top int32, split int) (n int, sum int64) {
	s := utxoScan{r: r, hx: hx, top: top, split: split}
	parts := make([][2]int64, 1)
	s.run(c, func(n int) {
		parts = append(parts, make([][2]int64, n-len(parts))...)
	}, func(i int, r *utxoRow) {
		parts[i][0]++
		parts[i][1] += r.value
	})
	for _, p := range parts {
		n, sum = n+int(p[0]), sum+p[1]
	}
	return n, sum
}

// yieldRows is how many rows a long read walks between two yields.
const yieldRows = 1024

// yieldEvery lets other goroutines run when a read has walked another
// yieldRows rows (n counts them): a read of tens of thousands of rows runs
// for milliseconds, which the scheduler preempts only after 10 ms, and a
// small request meanwhile would wait that long.
func yieldEvery(n int) {
	if n > 0 && n%yieldRows == 0 {
		runtime.Gosched()
	}
}

package indexers

import (
	"bytes"
	"errors"
	"math"
	"sort"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"
)

// The read API. Every method answers from one snapshot of the store,
// together with the index tip that snapshot holds, so an answer always
// describes one block.

// read runs fn on a snapshot of the store and the tip it holds: the one the
// writer published after its last commit.
func (idx *ElectrumIndex) read(fn func(r *snapView, tip Tip) error) (Tip, error) {
	p := idx.acquire()
	if p == nil {
		return Tip{Height: -1}, errors.New("electrum index: closed")
	}
	v := &snapView{snap: p.snap, mu: make(chan struct{}, 1), done: p.unref}
	defer v.release()
	err := fn(v, p.tip)
	if rerr := v.Err(); rerr != nil {
		err = rerr
	}
	return p.tip, err
}

// Tip returns the block the index ends at.
func (idx *ElectrumIndex) Tip() (Tip, error) {
	return idx.read(func(*snapView, Tip) error { return nil })
}

// LatestTip returns the block of the writer's last commit without reading
// the store. false before the index is loaded.
func (idx *ElectrumIndex) LatestTip() (Tip, bool) {
	p := idx.pub.Load()
	if p == nil {
		return Tip{Height: -1}, false
	}
	return p.tip, true
}

// historyNumsWith returns the txpos of hx's history after position from (all
// when nil), failing with ErrHistoryTooLarge past room entries (room < 0: no
// bound). Its cursor c is the caller's to go on with: a new one costs more.
func historyNumsWith(c cursor, hx *hashX, from *uint64, room int) ([]uint64, error) {
	pre := histPrefix(hx)
	seek := pre
	if from != nil {
		// The row of from's block holds the entries after it in that block.
		seek = make([]byte, histKeyLen)
		histKey(seek, hx, posHeight(*from))
	}
	var nums []uint64
	var err error
	for ok := c.Seek(seek); ok && err == nil; ok = c.Next() {
		k := c.Key()
		if !bytes.HasPrefix(k, pre) {
			break
		}
		if len(k) != histKeyLen {
			continue
		}
		histPositions(k, c.Value(), func(n uint64) bool {
			if from != nil && n <= *from {
				return true
			}
			yieldEvery(len(nums))
			if room >= 0 && len(nums) >= room {
				err = ErrHistoryTooLarge
				return false
			}
			nums = append(nums, n)
			return true
		})
	}
	if err != nil {
		return nil, err
	}
	return nums, nil
}

// room turns a caller's limit (<= 0: none) and the entries already counted
// into historyNumsWith's bound.
func room(limit, have int) int {
	if limit <= 0 {
		return -1
	}
	return limit - have
}

// txRowAt reads the entry of the transaction at n from its "Ext" chunk.
func txRowAt(meta kvReader, n uint64) (txRow, bool) {
	var k [txKeyLen]byte
	txKey(k[:], n)
	return decodeTxEntry(meta.Get(k[:]), n)
}

// readHistory returns the txids and heights of sh's history positions nums,
// in order.
func readHistory(r kvReader, c cursor, sh ScriptHash, nums []uint64, split int) ([]HistoryEntry, error) {
	out := make([]HistoryEntry, len(nums))
	err := readRuns(r, c, nums, split, func(_ int, r kvReader, c cursor, lo, hi int) error {
		return historyEntries(r, c, sh, nums[lo:hi], func(i int, row *txRow) {
			out[lo+i] = HistoryEntry{TxHash: row.txid, Height: row.height}
		})
	})
	return out, err
}

// readRuns has read(w, r, c, lo, hi) read positions nums[lo:hi] with reader r
// and its cursor c, runs covering nums in order, run 0 on the calling
// goroutine. Past split entries the "Ext" blocks are read around the cache
// (bulkView), a goroutine and a cursor a run, cut between chunks.
func readRuns(r kvReader, c cursor, nums []uint64, split int, read func(w int, r kvReader, c cursor, lo, hi int) error) error {
	if len(nums) <= split {
		return read(0, r, c, 0, len(nums))
	}
	r = r.Bulk()
	c = r.Cursor()
	workers := scanWorkers()
	var cuts []int
	for w := 1; w < workers; w++ {
		i := max(len(nums)*w/workers, 1)
		if len(cuts) > 0 {
			i = max(i, cuts[len(cuts)-1])
		}
		for i < len(nums) && nums[i]&^(txChunk-1) == nums[i-1]&^(txChunk-1) {
			i++
		}
		cuts = append(cuts, i)
	}
	cuts = append(cuts, len(nums))
	errs := make([]error, len(cuts))
	var wg sync.WaitGroup
	lo := 0
	for w, hi := range cuts {
		if w > 0 {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				errs[w] = read(w, r, r.Cursor(), lo, hi)
			}(lo, hi)
		}
		lo = hi
	}
	errs[0] = read(0, r, c, 0, cuts[0])
	wg.Wait()
	return errors.Join(errs...)
}

// historyEntries calls put(i, row) with the "Ext" entry (txid and height) of
// position nums[i]; positions are in chain order, and entries of one chunk
// share a read. A chunk in the same or next block as the last is reached by
// stepping c (a fraction of a seek's cost), a far one with a get, which stops
// at the first table holding the key.
func historyEntries(r kvReader, c cursor, sh ScriptHash, nums []uint64, put func(i int, row *txRow)) error {
	var (
		k     [txKeyLen]byte
		chunk []byte
		base  = ^uint64(0)
		prev  = ^uint64(0) // the chunk last read
		cc    = chunkCursor{c: c}
	)
	read := func(i int, b uint64) []byte {
		txKey(k[:], b)
		next := ^uint64(0)
		for _, m := range nums[i+1:] {
			if mb := m &^ (txChunk - 1); mb != b {
				next = mb
				break
			}
		}
		var v []byte
		switch {
		case prev != ^uint64(0) && nearChunk(prev, b) && cc.at != nil:
			v = cc.step(k[:])
		case next != ^uint64(0) && nearChunk(b, next):
			v = cc.seek(k[:])
		default:
			v = r.Get(k[:])
		}
		prev = b
		return v
	}
	for i, n := range nums {
		yieldEvery(i)
		if b := n &^ (txChunk - 1); b != base {
			base = b
			chunk = read(i, b)
		}
		row, ok := decodeTxEntry(chunk, n)
		if !ok {
			return corruptf("history of %v names missing transaction %d of block %d",
				sh, posIndex(n), posHeight(n))
		}
		put(i, &row)
	}
	return nil
}

// nearChunk reports whether the chunk at txpos b is in the same block as the
// one at a, or in the next.
func nearChunk(a, b uint64) bool {
	ha, hb := posHeight(a), posHeight(b)
	return hb == ha || hb == ha+1
}

// chunkSteps is how many rows a chunkCursor steps over before it seeks.
const chunkSteps = 8

// chunkCursor reads "Ext" chunks in ascending key order with a cursor.
type chunkCursor struct {
	c  cursor
	at []byte // the key the cursor is at; nil when not positioned
}

// step returns the value of key k, at or after the cursor's position,
// stepping a few rows before it falls back to a seek; nil when there is no
// such row. The value is the cursor's: valid until it moves again, which
// is all historyEntries needs of a chunk, so a long history's chunks are
// not copied (for a status of 50,000 entries, about 50 MB).
func (cc *chunkCursor) step(k []byte) []byte {
	for i := 0; i < chunkSteps && cc.at != nil; i++ {
		switch cmp := bytes.Compare(cc.at, k); {
		case cmp == 0:
			return cc.c.Value()
		case cmp > 0:
			return nil
		}
		if !cc.c.Next() {
			cc.at = nil
			return nil
		}
		cc.at = cc.c.Key()
	}
	return cc.seek(k)
}

// seek positions the cursor at k and returns its value, valid until the
// cursor moves; nil when there is no such row.
func (cc *chunkCursor) seek(k []byte) []byte {
	cc.at = nil
	if !cc.c.Seek(k) {
		return nil
	}
	cc.at = cc.c.Key()
	if !bytes.Equal(cc.at, k) {
		return nil
	}
	return cc.c.Value()
}

// History returns the confirmed history of a script: one entry per
// transaction, ordered by height then position in the block. With limit > 0,
// a history of more than limit entries fails with ErrHistoryTooLarge.
func (idx *ElectrumIndex) History(sh ScriptHash, limit int) ([]HistoryEntry, Tip, error) {
	return idx.HistoryPage(sh, nil, math.MaxInt, limit)
}

// HistoryPage returns up to n entries of sh's confirmed history right before
// transaction before's (nil: the end), in history order; none when n <= 0 or
// before is not in it. Only the page's transactions are read. With limit > 0,
// a history of more than limit entries fails with ErrHistoryTooLarge.
func (idx *ElectrumIndex) HistoryPage(sh ScriptHash, before *chainhash.Hash, n, limit int) ([]HistoryEntry, Tip, error) {
	var out []HistoryEntry
	hx := sh.hashX()
	tip, err := idx.read(func(r *snapView, _ Tip) error {
		c := r.Cursor()
		nums, err := historyNumsWith(c, &hx, nil, room(limit, 0))
		if err != nil {
			return err
		}
		end := len(nums)
		if before != nil {
			pos, _, found := locateTx(r, c, before)
			end = sort.Search(len(nums), func(i int) bool { return nums[i] >= pos })
			if !found || end == len(nums) || nums[end] != pos {
				return nil
			}
		}
		out, err = readHistory(r, c, sh, nums[end-min(max(n, 0), end):end], idx.scanSplit)
		return err
	})
	return out, tip, err
}

// historyTxsChunk is how many transactions HistoryTxs reads from btcd's
// block files in one database transaction.
const historyTxsChunk = 1024

// HistoryTxs calls fn with each confirmed transaction of sh's history from
// its from-th entry on, in history order, serialized with witness (raw is
// valid during the call only). History and places are read at one tip, which
// it returns; the transactions many to a database transaction of btcd's, in
// which fn runs: it must return (an error stops), not block.
func (idx *ElectrumIndex) HistoryTxs(sh ScriptHash, from int, fn func(i int, e HistoryEntry, raw []byte) error) (Tip, error) {
	var rows []txRow
	var blocks map[int32]chainhash.Hash
	hx := sh.hashX()
	tip, err := idx.read(func(r *snapView, _ Tip) error {
		c := r.Cursor()
		nums, err := historyNumsWith(c, &hx, nil, -1)
		if err != nil {
			return err
		}
		from = min(max(from, 0), len(nums))
		nums = nums[from:]
		rows = make([]txRow, len(nums))
		var kv kvReader = r
		if len(nums) > idx.scanSplit {
			kv = r.Bulk() // as readHistory
		}
		if err := historyEntries(kv, kv.Cursor(), sh, nums, func(i int, row *txRow) { rows[i] = *row }); err != nil {
			return err
		}
		// The places, from the "Exl" chunks, which ascend as nums do.
		var k [txKeyLen]byte
		loc, base, cc := []byte(nil), ^uint64(0), chunkCursor{c: kv.Cursor()}
		blocks = make(map[int32]chainhash.Hash)
		for i := range rows {
			if b := nums[i] &^ (txChunk - 1); b != base {
				base = b
				locKey(k[:], b)
				loc = cc.step(k[:])
			}
			if !decodeLocEntry(loc, nums[i], &rows[i]) {
				return corruptf("history of %v names transaction %v, which has no place", sh, rows[i].txid)
			}
			h := rows[i].height
			if _, ok := blocks[h]; ok {
				continue
			}
			_, hash, ok := blockTxs(r, h)
			if !ok {
				return corruptf("history of %v names block %d, which has no block row", sh, h)
			}
			blocks[h] = hash
		}
		return nil
	})
	if err != nil {
		return tip, err
	}
	var spans []txSpan
	var regions []database.BlockRegion
	for lo := 0; lo < len(rows); lo += historyTxsChunk {
		hi := min(lo+historyTxsChunk, len(rows))
		spans = spanRows(spans[:0], rows[lo:hi], lo)
		regions = regions[:0]
		for i := range spans {
			hash := blocks[spans[i].height]
			regions = append(regions, database.BlockRegion{Hash: &hash, Offset: spans[i].offset, Len: spans[i].size})
		}
		err := idx.db.View(func(dbTx database.Tx) error {
			raws, err := dbTx.FetchBlockRegions(regions)
			if err != nil {
				return err
			}
			for k, raw := range raws {
				sp := &spans[k]
				for i := sp.first; i < sp.end; i++ {
					row := &rows[i]
					at := row.offset - sp.offset
					if err := fn(from+i, HistoryEntry{TxHash: row.txid, Height: row.height}, raw[at:at+row.size:at+row.size]); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return tip, err
		}
	}
	return tip, nil
}

// spanGap is the widest gap between two transactions of a block that
// HistoryTxs reads in one region: btcd looks up the block's place for each
// region and reads it with a call of its own, which costs about what
// copying 16 KiB more does.
const spanGap = 16 << 10

// txSpan is one region of a block holding the transactions rows[first:end].
type txSpan struct {
	height     int32
	offset     uint32
	size       uint32
	first, end int
}

// spanRows appends to spans the regions that hold rows, which are in chain
// order and numbered from base: transactions of one block at most spanGap
// apart share one.
func spanRows(spans []txSpan, rows []txRow, base int) []txSpan {
	for i := range rows {
		r := &rows[i]
		if n := len(spans); n > 0 {
			sp := &spans[n-1]
			if sp.height == r.height && r.offset >= sp.offset+sp.size && r.offset-(sp.offset+sp.size) <= spanGap {
				sp.size = r.offset + r.size - sp.offset
				sp.end = base + i + 1
				continue
			}
		}
		spans = append(spans, txSpan{height: r.height, offset: r.offset, size: r.size, first: base + i, end: base + i + 1})
	}
	return spans
}

// Status returns a StatusHasher holding the confirmed part of the script's
// status. Long histories resume from a cached SHA-256 midstate, so after a
// new block only the new entries are read and hashed.
func (idx *ElectrumIndex) Status(sh ScriptHash, limit int) (*StatusHasher, Tip, error) {
	var st *StatusHasher
	tip, err := idx.read(func(r *snapView, tip Tip) (err error) {
		st, err = idx.statusIn(r, r.Cursor(), tip, sh, limit)
		return err
	})
	return st, tip, err
}

// Statuses is Status for many scripts, all read in one snapshot with one
// cursor: the notification path recomputes every subscribed script a block
// touched. errs[i] is the error of shs[i] (ErrHistoryTooLarge past limit);
// the returned error is a failure of the read itself.
func (idx *ElectrumIndex) Statuses(shs []ScriptHash, limit int) ([]*StatusHasher, []error, Tip, error) {
	sts := make([]*StatusHasher, len(shs))
	errs := make([]error, len(shs))
	tip, err := idx.read(func(r *snapView, tip Tip) error {
		c := r.Cursor()
		for i, sh := range shs {
			sts[i], errs[i] = idx.statusIn(r, c, tip, sh, limit)
		}
		return nil
	})
	return sts, errs, tip, err
}

// statusIn computes the confirmed part of a status from r, at tip.
func (idx *ElectrumIndex) statusIn(r kvReader, c cursor, tip Tip, sh ScriptHash, limit int) (*StatusHasher, error) {
	hx := sh.hashX()
	var from *uint64
	st := NewStatusHasher()
	resumed := false
	if m := idx.statuses.get(hx); m != nil {
		if inChain(r, m.at) {
			if rs, ok := m.resume(); ok {
				st, resumed = rs, true
				last := m.last
				from = &last
			}
		} else if m.at.Height <= tip.Height {
			// The block it was read at is not in this snapshot's chain;
			// a read of a newer snapshot makes a new one.
			idx.statuses.drop(m)
		}
	}
	if limit > 0 && st.Len() > limit {
		return nil, ErrHistoryTooLarge
	}
	nums, err := historyNumsWith(c, &hx, from, room(limit, st.Len()))
	if err != nil {
		return nil, err
	}
	// Run 0 is hashed as it is read; the other runs are formatted by their
	// own goroutines and hashed after it.
	var runs [maxScanWorkers][]byte
	before := st.Len()
	err = readRuns(r, c, nums, idx.scanSplit, func(w int, r kvReader, c cursor, lo, hi int) error {
		add := st.Add
		if w > 0 {
			runs[w] = make([]byte, 0, (hi-lo)*73) // "txid:height:", heights of up to 7 digits
			add = func(txid chainhash.Hash, h int32) { runs[w] = appendStatusEntry(runs[w], txid, h) }
		}
		return historyEntries(r, c, sh, nums[lo:hi], func(_ int, row *txRow) { add(row.txid, row.height) })
	})
	if err != nil {
		return nil, err
	}
	st.write(len(nums)-(st.Len()-before), runs[1:]...)
	// A new midstate is kept when entries were added to the one resumed,
	// or when there was none to resume.
	if (len(nums) > 0 || !resumed) && st.Len() >= statusCacheMin {
		var last uint64
		switch {
		case len(nums) > 0:
			last = nums[len(nums)-1]
		case from != nil:
			last = *from
		}
		if m := st.midstate(hx, tip, last); m != nil && r.Err() == nil {
			idx.statuses.put(m)
		}
	}
	return st, nil
}

// inChain reports whether r holds block at: the history up to a block is
// fixed for as long as the block stays in the chain.
func inChain(r kvReader, at Tip) bool {
	_, hash, ok := decodeBlkVal(r.Get(blkKey(at.Height)))
	return ok && hash == at.Hash
}

// Unspent returns the confirmed unspent outputs of a script by height,
// position in block and output index, in one prefix scan (the rows carry
// their position). With limit > 0, more than limit fail with ErrHistoryTooLarge.
func (idx *ElectrumIndex) Unspent(sh ScriptHash, limit int) ([]Unspent, Tip, error) {
	var (
		out []Unspent
		pos []uint16
	)
	hx := sh.hashX()
	tip, err := idx.read(func(r *snapView, tip Tip) error {
		s := utxoScan{r: r, hx: &hx, top: tip.Height, limit: limit, split: idx.scanSplit}
		parts := make([]unspentPart, 1)
		s.run(r.Cursor(), func(n int) {
			parts = append(parts, make([]unspentPart, n-len(parts))...)
		}, func(i int, row *utxoRow) {
			p := &parts[i]
			p.us = append(p.us, Unspent{TxHash: row.txid, Vout: row.vout, Height: row.height, Value: row.value})
			p.pos = append(p.pos, row.pos)
		})
		if s.over.Load() {
			return ErrHistoryTooLarge
		}
		n := 0
		for i := range parts {
			n += len(parts[i].us)
		}
		out, pos = make([]Unspent, 0, n), make([]uint16, 0, n)
		for i := range parts {
			out = append(out, parts[i].us...)
			pos = append(pos, parts[i].pos...)
		}
		return nil
	})
	if err != nil {
		return nil, tip, err
	}
	orderUnspent(out, pos)
	return out, tip, nil
}

// unspentPart is the outputs of one part of a split scan, with the
// positions of their transactions.
type unspentPart struct {
	us  []Unspent
	pos []uint16
}

// orderUnspent sorts unspent outputs, which come keyed by height and txid,
// into chain order: outputs of one height by their transaction's position
// pos[i], then by output index. Runs of one height are sorted apart, and a
// run whose positions already ascend is left as it is.
func orderUnspent(us []Unspent, pos []uint16) {
	for i := 0; i < len(us); {
		j := i + 1
		sorted := true
		for j < len(us) && us[j].Height == us[i].Height {
			if pos[j] < pos[j-1] {
				sorted = false
			}
			j++
		}
		if !sorted {
			sort.Stable(unspentRun{us[i:j], pos[i:j]})
		}
		i = j
	}
}

// unspentRun sorts outputs of one height by position; a stable sort keeps
// the outputs of one transaction in output order, as the keys have them.
type unspentRun struct {
	us  []Unspent
	pos []uint16
}

func (r unspentRun) Len() int           { return len(r.us) }
func (r unspentRun) Less(a, b int) bool { return r.pos[a] < r.pos[b] }
func (r unspentRun) Swap(a, b int) {
	r.us[a], r.us[b] = r.us[b], r.us[a]
	r.pos[a], r.pos[b] = r.pos[b], r.pos[a]
}

// UnspentTotals returns the number and the sum (the confirmed balance) of
// a script's unspent outputs, without holding them.
func (idx *ElectrumIndex) UnspentTotals(sh ScriptHash) (n int, sum int64, tip Tip, err error) {
	hx := sh.hashX()
	tip, err = idx.read(func(r *snapView, tip Tip) error {
		n, sum = totalUnspent(r, r.Cursor(), &hx, tip.Height, idx.scanSplit)
		return nil
	})
	return n, sum, tip, err
}

// IsUnspent reports whether output op, paying sh from height, is unspent.
func (idx *ElectrumIndex) IsUnspent(sh ScriptHash, height int32, op wire.OutPoint) (bool, Tip, error) {
	k := (&spendRow{script: sh, height: height, prev: op}).key(make([]byte, utxoKeyLen))
	var found bool
	tip, err := idx.read(func(r *snapView, tip Tip) error {
		found = height <= tip.Height && r.Get(k) != nil
		return nil
	})
	return found, tip, err
}

// locateTx finds, with cursor c of meta, the position and row of a
// confirmed transaction. Of several transactions with the same txid
// (possible before BIP 30) the latest wins. A caller locating many reuses
// one cursor: a view keeps every cursor it hands out until released.
func locateTx(meta kvReader, c cursor, txid *chainhash.Hash) (uint64, txRow, bool) {
	best, row, found := uint64(0), txRow{}, false
	txidMatches(meta, c, txid, func(n uint64, r txRow) bool {
		if !found || n > best {
			best, row, found = n, r, true
		}
		return true
	})
	return best, row, found
}

// txidMatches calls fn with the position and entry of every indexed
// transaction with this txid, in position order, until fn returns false:
// the "Exi" rows of the txid's 8-byte prefix, read with cursor c of meta,
// each confirmed by the full txid in its "Ext" entry.
func txidMatches(meta kvReader, c cursor, txid *chainhash.Hash, fn func(n uint64, r txRow) bool) {
	pre := make([]byte, pfx+txidPrefix)
	putPrefix(pre, tagTxid)
	copy(pre[pfx:], txid[:txidPrefix])
	for ok := c.Seek(pre); ok; ok = c.Next() {
		k := c.Key()
		if !bytes.HasPrefix(k, pre) {
			break
		}
		if len(k) != txidKeyLen {
			continue
		}
		n := getTxPos(k[pfx+txidPrefix:])
		if r, ok := txRowAt(meta, n); ok && r.txid == *txid && !fn(n, r) {
			return
		}
	}
}

// blockTxs returns the number of transactions of the block at height and
// its hash.
func blockTxs(meta kvReader, height int32) (uint32, chainhash.Hash, bool) {
	end, hash, ok := decodeBlkVal(meta.Get(blkKey(height)))
	if !ok || height < 0 {
		return 0, hash, false
	}
	first := uint64(0)
	if height > 0 {
		c, _, ok := decodeBlkVal(meta.Get(blkKey(height - 1)))
		if !ok {
			return 0, hash, false
		}
		first = c
	}
	if end < first || end-first >= maxBlockTxs {
		return 0, hash, false
	}
	return uint32(end - first), hash, true
}

// TxLocation returns where a confirmed transaction sits in the main chain,
// or ErrNotFound.
func (idx *ElectrumIndex) TxLocation(txid chainhash.Hash) (TxLocation, error) {
	var loc TxLocation
	_, err := idx.read(func(r *snapView, _ Tip) (err error) {
		loc, _, err = txLocation(r, r.Cursor(), &txid, false)
		return err
	})
	return loc, err
}

// txLocation is TxLocation inside a view, with its cursor c; it also
// returns the tx row, with the transaction's place in its block when place
// is set.
func txLocation(meta kvReader, c cursor, txid *chainhash.Hash, place bool) (TxLocation, txRow, error) {
	n, r, found := locateTx(meta, c, txid)
	if !found {
		return TxLocation{}, r, ErrNotFound
	}
	var k [txKeyLen]byte
	locKey(k[:], n)
	count, hash, ok := blockTxs(meta, r.height)
	if !ok || posIndex(n) >= count || place && !decodeLocEntry(meta.Get(k[:]), n, &r) {
		return TxLocation{}, r, corruptf("transaction %v has no block row or place at height %d", txid, r.height)
	}
	return TxLocation{Height: r.height, Pos: posIndex(n), BlockHash: hash}, r, nil
}

// BlockTxIDs returns the txids of the main-chain block at height, in block
// order, or ErrNotFound.
func (idx *ElectrumIndex) BlockTxIDs(height int32) ([]chainhash.Hash, error) {
	var out []chainhash.Hash
	_, err := idx.read(func(r *snapView, _ Tip) error {
		count, _, ok := blockTxs(r, height)
		if !ok {
			return ErrNotFound
		}
		out = make([]chainhash.Hash, 0, count)
		var k [txKeyLen]byte
		for first := 0; first < int(count); first += txChunk {
			txKey(k[:], txPos(height, first))
			v := r.Get(k[:])
			if len(v) != chunkLen(first, int(count)) {
				return corruptf("block %d: chunk at %d holds %d bytes", height, first, len(v))
			}
			for i := 0; i < len(v); i += txEntryLen {
				out = append(out, chainhash.Hash(v[i:i+chainhash.HashSize]))
			}
		}
		return nil
	})
	return out, err
}

// Block returns the hash and the number of transactions of the index's
// block at height, or ErrNotFound.
func (idx *ElectrumIndex) Block(height int32) (hash chainhash.Hash, txs uint32, err error) {
	_, err = idx.read(func(r *snapView, _ Tip) error {
		var ok bool
		if txs, hash, ok = blockTxs(r, height); !ok {
			return ErrNotFound
		}
		return nil
	})
	return hash, txs, err
}

// RawTx returns a confirmed transaction as serialized in its block (with
// witness) and where it is, or ErrNotFound. The bytes are one block-region
// read from btcd's block files, which keep a block for as long as the index
// can name it.
func (idx *ElectrumIndex) RawTx(txid chainhash.Hash) ([]byte, TxLocation, error) {
	var (
		raw []byte
		loc TxLocation
		row txRow
	)
	_, err := idx.read(func(r *snapView, _ Tip) (err error) {
		loc, row, err = txLocation(r, r.Cursor(), &txid, true)
		return err
	})
	if err != nil {
		return nil, loc, err
	}
	err = idx.db.View(func(dbTx database.Tx) error {
		b, err := dbTx.FetchBlockRegion(&database.BlockRegion{
			Hash: &loc.BlockHash, Offset: row.offset, Len: row.size,
		})
		if err != nil {
			return err
		}
		raw = append([]byte(nil), b...)
		return nil
	})
	return raw, loc, err
}

package indexers

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// rowWriter is where phase 2 writes: the writer's batch, an undo record, or
// verification's fingerprints.
type rowWriter interface {
	Put(key, value []byte) error
	Delete(key []byte) error
}

// sizedWriter passes rows on and counts what they add to the index.
type sizedWriter struct {
	w rowWriter
	d sizeStats
	// ops and opBytes count the puts and deletes and their bytes (keys
	// and values put, keys deleted): what reaches the database.
	ops, opBytes int64
}

func (s *sizedWriter) Put(k, v []byte) error {
	s.d.Rows++
	s.d.Bytes += int64(len(k) + len(v))
	s.ops++
	s.opBytes += int64(len(k) + len(v))
	return s.w.Put(k, v)
}

func (s *sizedWriter) Delete(k []byte) error { return s.deleteLen(k, valLen(k)) }

// deleteLen deletes a row whose value is vlen bytes long.
func (s *sizedWriter) deleteLen(k []byte, vlen int) error {
	s.d.Rows--
	s.d.Bytes -= int64(len(k) + vlen)
	s.ops++
	s.opBytes += int64(len(k))
	return s.w.Delete(k)
}

// rowCopier is a rowWriter that keeps no key or value slice it is given.
type rowCopier interface{ copiesRows() }

// slab hands out the key or value buffers of one block from a few large
// allocations, for writers that keep the slices they are given.
type slab struct{ buf []byte }

func (s *slab) take(n int) []byte {
	if len(s.buf) < n {
		s.buf = make([]byte, 64*1024+n)
	}
	b := s.buf[:n:n]
	s.buf = s.buf[n:]
	return b
}

// rowBufs returns where a block's keys and values are written: a scratch
// buffer each for a writer that copies rows (rowCopier), else slabs.
func rowBufs(dst rowWriter) (key, val func(n int) []byte) {
	if _, ok := dst.(rowCopier); !ok {
		var ks, vs slab
		return ks.take, vs.take
	}
	var ks [utxoKeyLen]byte
	var vs []byte
	return func(n int) []byte { return ks[:n:n] }, func(n int) []byte {
		if cap(vs) < n {
			vs = make([]byte, n)
		}
		return vs[:n:n]
	}
}

// mustWrite stops the process on a write error of a rowWriter; the writers
// of this package do not fail.
func mustWrite(err error) {
	if err != nil {
		panic(fmt.Sprintf("electrum index: write failed: %v", err))
	}
}

// chunkLen returns the value length of the "Ext" chunk starting at the
// block's transaction first, of a block of n transactions; the "Exl"
// chunk's is locLen.
func chunkLen(first, n int) int { return min(txChunk, n-first) * txEntryLen }
func locLen(first, n int) int   { return min(txChunk, n-first) * locEntryLen }

// putChunks writes the block's transaction chunks, txids and places, with
// keys and values from key and val.
func putChunks(w *sizedWriter, p *blockPlan, key, val func(int) []byte) {
	for first := 0; first < len(p.txs); first += txChunk {
		txs := p.txs[first:min(first+txChunk, len(p.txs))]
		k, v := key(txKeyLen), val(len(txs)*txEntryLen)
		txKey(k, txPos(p.height, first))
		for i := range txs {
			copy(v[i*txEntryLen:], txs[i].txid[:])
		}
		mustWrite(w.Put(k, v))
		k, v = key(txKeyLen), val(len(txs)*locEntryLen)
		locKey(k, txPos(p.height, first))
		for i := range txs {
			putLocEntry(v[i*locEntryLen:], txs[i].offset, txs[i].size)
		}
		mustWrite(w.Put(k, v))
	}
}

// applyConnect is phase 2 of the block pass: all funding rows, then all
// spending rows, then the block's history rows (the plan's sorted entries)
// and its block row; base is the chain's transactions below the block. It
// returns what the block adds to the index's size.
func applyConnect(dst rowWriter, p *blockPlan, base uint64) sizeStats {
	w := &sizedWriter{w: dst}
	key, val := rowBufs(dst)
	empty := []byte{}

	putChunks(w, p, key, val)

	// Funding: txid rows and new unspent outputs.
	for i := range p.txs {
		tp := &p.txs[i]
		txNum := txPos(p.height, i)

		k := key(txidKeyLen)
		txidKey(k, &tp.txid, txNum)
		mustWrite(w.Put(k, empty))

		for j := range tp.funds {
			f := &tp.funds[j]
			hx := f.script.hashX()
			k = key(utxoKeyLen)
			utxoKey(k, &hx, p.height, &tp.txid, f.vout)
			v := val(utxoValLen)
			putUtxoVal(v, f.value, uint32(i))
			mustWrite(w.Put(k, v))
		}
	}

	// Spending: spent outputs go.
	for i := range p.txs {
		tp := &p.txs[i]
		for j := range tp.spends {
			mustWrite(w.Delete(tp.spends[j].key(key(utxoKeyLen))))
		}
	}

	// History: one row per script the block funds or spends.
	eachHistRow(p.hist, func(hx *hashX, run []histEntry) {
		k := key(histKeyLen)
		histKey(k, hx, p.height)
		v := val(len(run) * histPosLen)
		putHistPositions(v, run)
		mustWrite(w.Put(k, v))
	})

	mustWrite(w.Put(blkKey(p.height), blkVal(base+uint64(len(p.txs)), &p.hash)))
	p.writes, p.writeBytes = w.ops, w.opBytes
	return w.d
}

// histEntry is one transaction of a block in the history of a script,
// packed so that entries order by comparing two integers: hi is the first
// eight bytes of the script's hashX, lo its last three and the
// transaction's position in the block.
type histEntry struct{ hi, lo uint64 }

func newHistEntry(hx *hashX, pos int) histEntry {
	return histEntry{
		hi: binary.BigEndian.Uint64(hx[:8]),
		lo: uint64(hx[8])<<40 | uint64(hx[9])<<32 | uint64(hx[10])<<24 | uint64(pos),
	}
}

// hashX returns the entry's script.
func (e histEntry) hashX() hashX {
	var hx hashX
	binary.BigEndian.PutUint64(hx[:8], e.hi)
	hx[8], hx[9], hx[10] = byte(e.lo>>40), byte(e.lo>>32), byte(e.lo>>24)
	return hx
}

// pos returns the entry's position in its block.
func (e histEntry) pos() uint16 { return uint16(e.lo) }

// sameScript reports whether two entries are of one script.
func (e histEntry) sameScript(o histEntry) bool { return e.hi == o.hi && e.lo>>24 == o.lo>>24 }

// blockHistory returns, in buf's array, the history entries of a block:
// every script each transaction funds or spends, ordered by hashX and
// position, each pair once (two scripts of one transaction may share a
// hashX).
func blockHistory(p *blockPlan, buf []histEntry) []histEntry {
	e := buf[:0]
	for i := range p.txs {
		for j := range p.txs[i].scripts {
			hx := p.txs[i].scripts[j].hashX()
			e = append(e, newHistEntry(&hx, i))
		}
	}
	slices.SortFunc(e, func(a, b histEntry) int {
		if a.hi != b.hi {
			return cmp.Compare(a.hi, b.hi)
		}
		return cmp.Compare(a.lo, b.lo)
	})
	return slices.Compact(e)
}

// eachHistRow calls fn with each script of sorted entries e and its run of
// entries: the positions of one history row.
func eachHistRow(e []histEntry, fn func(hx *hashX, run []histEntry)) {
	for i := 0; i < len(e); {
		j := i + 1
		for j < len(e) && e[j].sameScript(e[i]) {
			j++
		}
		hx := e[i].hashX()
		fn(&hx, e[i:j])
		i = j
	}
}

// putHistPositions encodes the positions of run into the value v.
func putHistPositions(v []byte, run []histEntry) {
	for i := range run {
		binary.BigEndian.PutUint16(v[i*histPosLen:], run[i].pos())
	}
}

// applyDisconnect is the exact inverse of applyConnect from the same plan
// (spent outputs' positions filled in by fillSpendPositions): spent outputs
// come back, the block's history rows go, then all else the block funded.
// It returns what the block's removal adds to the index's size (negative).
func applyDisconnect(dst rowWriter, p *blockPlan) sizeStats {
	w := &sizedWriter{w: dst}
	key, val := rowBufs(dst)

	for i := len(p.txs) - 1; i >= 0; i-- {
		tp := &p.txs[i]
		for j := range tp.spends {
			sp := &tp.spends[j]
			v := val(utxoValLen)
			putUtxoVal(v, sp.value, sp.pos)
			mustWrite(w.Put(sp.key(key(utxoKeyLen)), v))
		}
	}
	eachHistRow(p.hist, func(hx *hashX, run []histEntry) {
		k := key(histKeyLen)
		histKey(k, hx, p.height)
		mustWrite(w.deleteLen(k, len(run)*histPosLen))
	})

	for i := len(p.txs) - 1; i >= 0; i-- {
		tp := &p.txs[i]
		txNum := txPos(p.height, i)
		for j := range tp.funds {
			f := &tp.funds[j]
			hx := f.script.hashX()
			k := key(utxoKeyLen)
			utxoKey(k, &hx, p.height, &tp.txid, f.vout)
			mustWrite(w.Delete(k))
		}
		k := key(txidKeyLen)
		txidKey(k, &tp.txid, txNum)
		mustWrite(w.Delete(k))
	}
	for first := 0; first < len(p.txs); first += txChunk {
		k := key(txKeyLen)
		txKey(k, txPos(p.height, first))
		mustWrite(w.deleteLen(k, chunkLen(first, len(p.txs))))
		k = key(txKeyLen)
		locKey(k, txPos(p.height, first))
		mustWrite(w.deleteLen(k, locLen(first, len(p.txs))))
	}

	mustWrite(w.Delete(blkKey(p.height)))
	return w.d
}

// fillSpendPositions looks up, for a block about to be undone from the
// block itself, the position in its block of every transaction whose
// outputs the block spends: the unspent rows put back carry it, and btcd's
// spent outputs do not. One txid lookup per distinct spent transaction.
func fillSpendPositions(r kvReader, p *blockPlan) error {
	c := r.Cursor()
	type txAt struct {
		txid   chainhash.Hash
		height int32
	}
	known := make(map[txAt]uint32)
	for i := range p.txs {
		for j := range p.txs[i].spends {
			sp := &p.txs[i].spends[j]
			at := txAt{sp.prev.Hash, sp.height}
			pos, ok := known[at]
			if !ok {
				pos, ok = txPosAt(r, c, &sp.prev.Hash, sp.height)
				if !ok {
					return fmt.Errorf("undoing block %d: spent transaction %v of height %d is not indexed",
						p.height, sp.prev.Hash, sp.height)
				}
				known[at] = pos
			}
			sp.pos = pos
		}
	}
	return nil
}

// txPosAt returns the index in the block at height of the transaction txid,
// read from the "Exi" rows with cursor c of r.
func txPosAt(r kvReader, c cursor, txid *chainhash.Hash, height int32) (uint32, bool) {
	var pos uint32
	var found bool
	txidMatches(r, c, txid, func(n uint64, _ txRow) bool {
		if posHeight(n) == height {
			pos, found = posIndex(n), true
		}
		return !found
	})
	return pos, found
}

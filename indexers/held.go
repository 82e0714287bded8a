package indexers

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
)

// Held balances: the balances of scripts with many unspent outputs, kept as
// rows of the index.
//
// A balance is the sum of a script's unspent rows. For an exchange's deposit
// address that is tens of thousands of rows, read in tens of milliseconds the
// first time it is asked for (the read cache and the balance log keep it
// after that, in memory). Such a script gets a row of its own:
//
//	"Exa" hashX(11)  ->  balance(8) count(8)
//	      the sum and the number of the script's unspent rows
//	"Exq"            ->  hash(32) height(4, little-endian)
//	      the index tip the rows "Exa" are exact at
//
// The rows are kept in the transactions that move the index tip, from the
// amounts the block path already holds: ConnectBlock and DisconnectBlock add
// each block's change of every held script (memory only, no read) and write
// the new rows and "Exq". The set of held scripts and their balances is in
// memory too (idx.held, guarded by idx.mu, loaded with the tip), an exact
// copy of the rows whenever "Exq" is the tip.
//
// Everything else that moves the tip (a catch-up batch, the walk back of a
// stale tip, a drop) leaves the rows alone and empties the in-memory set in
// the same transaction: "Exq" then names an older block and readers ignore
// the rows, as does the next start. So every write of rows and of "Exq"
// starts from rows exact at the tip. The rows are bookkeeping outside
// "Exs": an index written by a node that does not keep them (an older
// version) only leaves "Exq" behind the tip.
//
// A script is held once a read found it with at least heldMin unspent rows:
// the read hands its sum to a background writer (offerHeld), which adds the
// row in a transaction of its own if the tip is still the read's. After a
// catch-up, the scripts it funded most often (a heavy-hitters count of the
// catch-up's outputs) are read and offered the same way, so the first
// get_balance of a heavy script is answered from its row. A script falls
// out of the set when its unspent rows drop below a quarter of heldMin.

const (
	tagHeld = 'a'

	heldKeyLen = pfx + hashXLen
	heldValLen = 16

	// heldMin is the number of unspent rows from which a script's balance
	// is held: reading that many takes a few milliseconds. A held script
	// is let go below a quarter of it.
	heldMin = 8192
	// heldMax bounds the held scripts (a row and a map entry each).
	heldMax = 1 << 16
	// heldQueue bounds the offers waiting for the background writer.
	heldQueue = 256
	// heavyCounters is the size of the catch-up's heavy-hitters count.
	heavyCounters = 4096
)

// SetHeldMin makes the index hold the balances of scripts with at least n
// unspent rows (heldMin when n is not positive): small test chains exercise
// the held rows with a small n. Call it before the index serves reads.
func (idx *ElectrumIndex) SetHeldMin(n int64) {
	if n <= 0 {
		n = heldMin
	}
	idx.heldMin = n
}

// heldMarkKey holds the tip the held rows are exact at.
var heldMarkKey = []byte("Exq")

// heldEntry is a held script's balance and number of unspent rows.
type heldEntry struct {
	balance, count int64
}

// heldOffer is a balance read at a tip, offered to be held.
type heldOffer struct {
	hx hashX
	at Tip
	e  heldEntry
}

func heldKey(hx *hashX) []byte {
	k := make([]byte, heldKeyLen)
	copy(k, rowPrefix)
	k[2] = tagHeld
	copy(k[pfx:], hx[:])
	return k
}

func heldVal(e heldEntry) []byte {
	v := make([]byte, heldValLen)
	binary.BigEndian.PutUint64(v, uint64(e.balance))
	binary.BigEndian.PutUint64(v[8:], uint64(e.count))
	return v
}

func decodeHeldVal(v []byte) (heldEntry, bool) {
	if len(v) != heldValLen {
		return heldEntry{}, false
	}
	return heldEntry{balance: int64(binary.BigEndian.Uint64(v)), count: int64(binary.BigEndian.Uint64(v[8:]))}, true
}

// isHeldKey reports whether k is a held balance row or the held rows' tip.
func isHeldKey(k []byte) bool {
	return bytes.Equal(k, heldMarkKey) || (len(k) == heldKeyLen && k[2] == tagHeld && bytes.HasPrefix(k, rowPrefix))
}

// heldValid reports whether the held rows of a view are exact at its tip.
func heldValid(meta database.Bucket, tip Tip) bool {
	hash, height, ok := decodeTipVal(meta.Get(heldMarkKey))
	return ok && hash == tip.Hash && height == tip.Height
}

// heldBalance returns the held balance of hx in a view whose tip is tip.
func heldBalance(meta database.Bucket, hx *hashX, tip Tip) (heldEntry, bool) {
	if tip.Height < 0 {
		return heldEntry{}, false
	}
	// Most scripts have no row: one get, then the mark for those that do.
	e, ok := decodeHeldVal(meta.Get(heldKey(hx)))
	if !ok || !heldValid(meta, tip) {
		return heldEntry{}, false
	}
	return e, true
}

// loadHeld sets the in-memory held set from a view whose index tip is tip.
// Called with idx.mu held.
func (idx *ElectrumIndex) loadHeld(meta database.Bucket, tip Tip) {
	clear(idx.held)
	if !heldValid(meta, tip) {
		return
	}
	c := meta.Cursor()
	prefix := []byte{rowPrefix[0], rowPrefix[1], tagHeld}
	for ok := c.Seek(prefix); ok && bytes.HasPrefix(c.Key(), prefix); ok = c.Next() {
		k := c.Key()
		e, ok := decodeHeldVal(c.Value())
		if len(k) != heldKeyLen || !ok {
			continue
		}
		var hx hashX
		copy(hx[:], k[pfx:])
		idx.held[hx] = e
	}
}

// forgetHeld empties the in-memory held set: called with idx.mu held, in a
// transaction that moves the tip without the held rows.
func (idx *ElectrumIndex) forgetHeld() {
	clear(idx.held)
}

// applyHeld adds a connected (sign 1) or disconnected (sign -1) block's
// change of every held script to its row and marks the rows exact at the
// new tip. Memory and writes only: it runs inside the block's transaction,
// with idx.mu held.
func (idx *ElectrumIndex) applyHeld(meta database.Bucket, p *blockPlan, sign int64, tip *chainhash.Hash, height int32) {
	if len(idx.held) == 0 {
		return
	}
	var deltas map[hashX]heldEntry
	add := func(hx hashX, value, n int64) {
		if _, ok := idx.held[hx]; !ok {
			return
		}
		if deltas == nil {
			deltas = make(map[hashX]heldEntry)
		}
		d := deltas[hx]
		d.balance += value
		d.count += n
		deltas[hx] = d
	}
	for i := range p.txs {
		tp := &p.txs[i]
		for j := range tp.funds {
			add(tp.funds[j].script.hashX(), sign*tp.funds[j].value, sign)
		}
		for j := range tp.spends {
			add(tp.spends[j].script.hashX(), -sign*tp.spends[j].value, -sign)
		}
	}
	for hx, d := range deltas {
		e := idx.held[hx]
		e.balance += d.balance
		e.count += d.count
		k := heldKey(&hx)
		if e.count < idx.heldMin/4 {
			delete(idx.held, hx)
			mustWrite(meta.Delete(k))
			continue
		}
		idx.held[hx] = e
		mustWrite(meta.Put(k, heldVal(e)))
	}
	mustWrite(meta.Put(heldMarkKey, tipVal(tip, height)))
}

// offerHeld hands a balance read at tip to the background writer, which
// holds it if the script is not held yet and the tip has not moved. It
// never blocks: an offer that finds the queue full is dropped (the next
// read offers again).
func (idx *ElectrumIndex) offerHeld(o heldOffer) {
	if o.e.count < idx.heldMin || o.at.Height < 0 {
		return
	}
	// A read never waits for a block being written (which holds idx.mu
	// throughout): then the writer sorts the offer out.
	if idx.mu.TryLock() {
		_, have := idx.held[o.hx]
		full := len(idx.held) >= heldMax
		idx.mu.Unlock()
		if have || full {
			return
		}
	}
	select {
	case idx.heldQ <- o:
	default:
		return
	}
	idx.heldMu.Lock()
	start := !idx.heldRunning
	idx.heldRunning = true
	idx.heldMu.Unlock()
	if start {
		idx.heldWG.Add(1)
		go func() {
			defer idx.heldWG.Done()
			idx.heldWriter()
		}()
	}
}

// heldWriter writes the queued offers, several per transaction, and ends
// when the queue is empty.
func (idx *ElectrumIndex) heldWriter() {
	for {
		var batch []heldOffer
	drain:
		for len(batch) < heldQueue {
			select {
			case o := <-idx.heldQ:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		if len(batch) == 0 {
			idx.heldMu.Lock()
			if len(idx.heldQ) > 0 {
				idx.heldMu.Unlock()
				continue
			}
			idx.heldRunning = false
			idx.heldMu.Unlock()
			return
		}
		if err := idx.holdBalances(batch); err != nil {
			log.Debugf("Electrum index: holding %d balances: %v", len(batch), err)
		}
	}
}

// holdBalances adds rows for the offers whose tip is the index tip, in one
// transaction. If the transaction's commit fails, the in-memory set may
// hold scripts whose rows were not written: their balances are right, and
// the next block writes their rows.
func (idx *ElectrumIndex) holdBalances(offers []heldOffer) error {
	return idx.db.Update(func(dbTx database.Tx) error {
		meta, done := idx.view(dbTx)
		defer done()
		tip := readTip(dbTx)
		idx.mu.Lock()
		defer idx.mu.Unlock()
		if tip.Height < 0 || !idx.tip.valid || idx.tip.hash != tip.Hash || idx.tip.height != tip.Height {
			return nil
		}
		fresh := !heldValid(meta, tip)
		n := 0
		for i := range offers {
			o := &offers[i]
			if o.at != tip || len(idx.held) >= heldMax {
				continue
			}
			if _, ok := idx.held[o.hx]; ok {
				continue
			}
			if fresh {
				// Rows of an older tip: gone before the first new one.
				if err := deleteHeldRows(meta); err != nil {
					return err
				}
				clear(idx.held)
				fresh = false
			}
			if err := meta.Put(heldKey(&o.hx), heldVal(o.e)); err != nil {
				return err
			}
			idx.held[o.hx] = o.e
			n++
		}
		if n == 0 {
			return nil
		}
		return meta.Put(heldMarkKey, tipVal(&tip.Hash, tip.Height))
	})
}

// deleteHeldRows deletes every held balance row.
func deleteHeldRows(meta database.Bucket) error {
	prefix := []byte{rowPrefix[0], rowPrefix[1], tagHeld}
	var keys [][]byte
	c := meta.Cursor()
	for ok := c.Seek(prefix); ok && bytes.HasPrefix(c.Key(), prefix); ok = c.Next() {
		keys = append(keys, bytes.Clone(c.Key()))
	}
	for _, k := range keys {
		if err := meta.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// heavyCount finds the scripts a catch-up funds most often, in bounded
// memory. Within a window of heavyWindow outputs it is Misra and Gries'
// frequent items: every script funded more than heavyWindow/heavyCounters
// times keeps a counter, which undercounts it by at most that much. At the
// end of a window the scripts counted at least that often are added to
// totals, which carry them over windows (a mainnet-sized catch-up funds
// billions of outputs: one window over all of them would keep only the few
// scripts with more than a millionth of them).
type heavyCount struct {
	mu     sync.Mutex
	n      map[hashX]int64
	seen   int64
	total  map[hashX]int64
	window int64 // heavyWindow (tests make it smaller)
}

const (
	// heavyWindow is the number of outputs of a window.
	heavyWindow = 1 << 22
	// heavyTotals bounds the scripts carried over windows.
	heavyTotals = 4 * heavyCounters
)

func newHeavyCount() *heavyCount {
	return &heavyCount{n: make(map[hashX]int64, heavyCounters), total: make(map[hashX]int64), window: heavyWindow}
}

// add counts the outputs a block's plan leaves unspent.
func (h *heavyCount) add(p *blockPlan) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range p.txs {
		tp := &p.txs[i]
		h.seen += int64(len(tp.funds))
		for j := range tp.funds {
			hx := tp.funds[j].script.hashX()
			if _, ok := h.n[hx]; ok || len(h.n) < heavyCounters {
				h.n[hx]++
				continue
			}
			for k, c := range h.n {
				if c <= 1 {
					delete(h.n, k)
				} else {
					h.n[k] = c - 1
				}
			}
		}
	}
	if h.seen >= h.window {
		h.fold()
	}
}

// fold ends a window: its frequent scripts go to the totals.
func (h *heavyCount) fold() {
	floor := h.seen / heavyCounters
	for hx, c := range h.n {
		if c < floor {
			continue
		}
		if _, ok := h.total[hx]; ok || len(h.total) < heavyTotals {
			h.total[hx] += c
		}
	}
	clear(h.n)
	h.seen = 0
}

// take returns the scripts counted at least min times and starts again.
func (h *heavyCount) take(min int64) []hashX {
	h.mu.Lock()
	defer h.mu.Unlock()
	for hx, c := range h.n {
		h.total[hx] += c
	}
	var out []hashX
	for hx, c := range h.total {
		if c >= min {
			out = append(out, hx)
		}
	}
	clear(h.n)
	clear(h.total)
	h.seen = 0
	return out
}

// goHoldHeavy runs holdHeavy on a goroutine of its own.
func (idx *ElectrumIndex) goHoldHeavy() {
	idx.heldWG.Add(1)
	go func() {
		defer idx.heldWG.Done()
		idx.holdHeavy()
	}()
}

// holdHeavy reads the balances of the scripts the last catch-up funded most
// often and holds those with at least heldMin unspent rows. It runs on its
// own goroutine after a catch-up; the tip moving meanwhile leaves the
// balances read before it to a later read.
func (idx *ElectrumIndex) holdHeavy() {
	var offers []heldOffer
	for _, hx := range idx.heavy.take(idx.heldMin / 2) {
		idx.mu.Lock()
		_, have := idx.held[hx]
		idx.mu.Unlock()
		if have {
			continue
		}
		o, err := idx.readHeldEntry(hx)
		if err != nil {
			return
		}
		if o.e.count >= idx.heldMin {
			offers = append(offers, o)
		}
	}
	if len(offers) == 0 {
		return
	}
	if err := idx.holdBalances(offers); err != nil {
		log.Debugf("Electrum index: holding %d balances: %v", len(offers), err)
		return
	}
	log.Debugf("Electrum index: holding the balances of %d scripts with many unspent outputs", len(offers))
}

// readHeldEntry reads the balance and number of unspent rows of hx.
func (idx *ElectrumIndex) readHeldEntry(hx hashX) (heldOffer, error) {
	o := heldOffer{hx: hx}
	err := idx.readView(func(dbTx database.Tx) error {
		o.at = readTip(dbTx)
		meta, done := idx.view(dbTx)
		defer done()
		o.e.balance, o.e.count = sumUnspent(meta, meta.Cursor(), &hx, o.at.Height, idx.scanSplit)
		return nil
	})
	return o, err
}

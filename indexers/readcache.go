package indexers

import (
	"bytes"

	"github.com/btcd-electrum/btcd-electrum/internal/lru"
	"github.com/btcsuite/btcd/database"
)

// The read cache keeps the answers of scripts with long histories or many
// unspent outputs: an exchange's deposit address on mainnet has tens of
// thousands of each, and reading them costs one cursor step per row (and a
// chunk read per history entry) where a wallet asks for them again and
// again. An entry records the index tip it was read at, and stays valid
// for later reads without being invalidated by blocks:
//
//   - A history only grows while its blocks stay in the chain, so a
//     cached history read at block T serves any view whose chain holds T:
//     the entries after T are read (one seek, usually finding nothing) and
//     appended.
//   - Unspent outputs and balances change only in blocks that touch the
//     script, and every such block writes a history row for it. A cached
//     list or balance read at T therefore serves any view whose chain holds
//     T and that has no history row of the script above T's height: one
//     block-row read and one seek.
//
// Only answers of at least readCacheMinRows rows are kept; the cache is
// bounded by bytes. Cached slices are shared by every caller and must not
// be modified.

const (
	// readCacheMinRows is the smallest answer worth caching: below it a
	// fresh read costs about as much as the validity check.
	readCacheMinRows = 1000
	// DefaultReadCacheBytes bounds the read cache's entries.
	DefaultReadCacheBytes = 128 << 20

	// Sizes the cache charges: an entry's slices plus its bookkeeping.
	histEntrySize    = 36
	unspentEntrySize = 48
	readEntryCost    = 160
)

// readKind says which answer an entry holds.
type readKind uint8

const (
	readHistory readKind = iota
	readUnspent
	readBalance
)

// readKey names a cached answer.
type readKey struct {
	hx   hashX
	kind readKind
}

// readEntry is one cached answer, read at index tip at.
type readEntry struct {
	key readKey
	at  Tip
	// last is the txpos of the last history entry (histories only).
	last uint64
	// over > 0 records that the list has more than over entries: a read
	// with a limit of at most over fails at once.
	over    int
	hist    []HistoryEntry
	unspent []Unspent
	balance int64
	size    int
}

// readCache is a byte-bounded LRU of readEntry.
type readCache struct {
	c *lru.Cache[readKey, *readEntry]
	// minRows is the smallest answer kept (readCacheMinRows).
	minRows int
}

func newReadCache(maxBytes int) *readCache {
	return &readCache{c: lru.New[readKey, *readEntry](int64(maxBytes)), minRows: readCacheMinRows}
}

// worth reports whether an answer of rows rows is kept.
func (c *readCache) worth(rows int) bool {
	return c != nil && c.c.Max() > 0 && rows >= c.minRows
}

// get returns the entry of k, if any; the caller checks its validity in
// the view it reads.
func (c *readCache) get(k readKey) *readEntry {
	if c == nil {
		return nil
	}
	e, _ := c.c.Get(k)
	return e
}

// put stores e unless the cache holds a newer entry of its key, evicting
// the least recently used entries beyond the cache's size.
func (c *readCache) put(e *readEntry) {
	if c == nil || c.c.Max() <= 0 {
		return
	}
	e.size = readEntryCost + len(e.hist)*histEntrySize + len(e.unspent)*unspentEntrySize
	if int64(e.size) > c.c.Max()/4 {
		return
	}
	c.c.Put(e.key, e, int64(e.size), func(old *readEntry) bool { return old.at.Height > e.at.Height })
}

// unchangedSince reports whether, in the view of meta, the state of hx at
// block at is still its state: at is in the view's chain and no block
// above it touched hx (every block touching a script writes a history row
// for it). c is a cursor of meta.
func unchangedSince(meta database.Bucket, c database.Cursor, hx *hashX, at Tip) bool {
	if !inChain(meta, at) {
		return false
	}
	var k [histKeyLen]byte
	histKey(k[:], hx, at.Height+1)
	return !(c.Seek(k[:]) && bytes.HasPrefix(c.Key(), k[:pfx+hashXLen]))
}

package indexers

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"
	"strconv"

	"github.com/btcd-electrum/btcd-electrum/internal/lru"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// StatusHasher computes an Electrum status (docs/PROTOCOL.md §4.2): the single
// SHA-256 of the concatenated "txid:height:" strings of a script's history,
// confirmed entries first. The index hands one out with the confirmed part
// already hashed; the caller adds the mempool entries and calls Sum.
type StatusHasher struct {
	h hash.Hash
	n int
	// buf holds entries not yet written to h: one write of a few KiB
	// costs less than one per 70-byte entry.
	buf []byte
}

// statusFlush is how many bytes of entries a StatusHasher gathers before it
// writes them to its hash.
const statusFlush = 8 << 10

// NewStatusHasher returns a hasher with no entries.
func NewStatusHasher() *StatusHasher {
	return &StatusHasher{h: sha256.New()}
}

// Add appends one history entry.
func (s *StatusHasher) Add(txid chainhash.Hash, height int32) {
	if s.buf == nil {
		s.buf = make([]byte, 0, statusFlush+128)
	}
	s.buf = appendStatusEntry(s.buf, txid, height)
	s.n++
	if len(s.buf) >= statusFlush {
		s.flush()
	}
}

// appendStatusEntry appends an entry of a status, "txid:height:".
func appendStatusEntry(b []byte, txid chainhash.Hash, height int32) []byte {
	var rev [32]byte
	for i := range rev {
		rev[i] = txid[31-i]
	}
	b = hex.AppendEncode(b, rev[:])
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(height), 10)
	return append(b, ':')
}

// write appends n entries formatted by appendStatusEntry into bufs.
func (s *StatusHasher) write(n int, bufs ...[]byte) {
	s.flush()
	for _, b := range bufs {
		s.h.Write(b)
	}
	s.n += n
}

// flush writes the gathered entries to the hash.
func (s *StatusHasher) flush() {
	if len(s.buf) > 0 {
		s.h.Write(s.buf)
		s.buf = s.buf[:0]
	}
}

// Len returns the number of entries added so far.
func (s *StatusHasher) Len() int { return s.n }

// Sum returns the 32-byte status, or nil for an empty history (status null).
// Entries may be added after it.
func (s *StatusHasher) Sum() []byte {
	if s.n == 0 {
		return nil
	}
	s.flush()
	return s.h.Sum(nil)
}

// statusCacheEntries bounds the number of cached midstates.
const statusCacheEntries = 20000

// statusCacheMin is the history length from which a status midstate is
// worth caching.
const statusCacheMin = 64

// statusCache keeps, for long histories, the SHA-256 midstate after the
// confirmed entries up to a txpos, so a status after a block hashes only the
// new entries. A midstate keeps the tip of its read: the history up to that
// block is fixed, so a read whose view still holds it there may resume.
type statusCache struct {
	c *lru.Cache[hashX, *statusMid]
}

// statusMid is one cached midstate.
type statusMid struct {
	key   hashX
	at    Tip    // index tip of the read that made it
	last  uint64 // txpos of the last hashed entry
	n     int
	state []byte
}

func newStatusCache(max int) *statusCache {
	return &statusCache{c: lru.New[hashX, *statusMid](int64(max))}
}

// get returns the cached midstate of hx, if any; the caller checks that its
// block is in the chain it reads.
func (c *statusCache) get(hx hashX) *statusMid {
	m, _ := c.c.Get(hx)
	return m
}

// drop removes m if it is still the cached midstate of its script.
func (c *statusCache) drop(m *statusMid) {
	c.c.Remove(m.key, func(cur *statusMid) bool { return cur == m })
}

// put stores a midstate, replacing the script's previous one; the cache
// holds at most its bound of them.
func (c *statusCache) put(m *statusMid) { c.c.Put(m.key, m, 1, nil) }

// resume returns a hasher continuing from a cached midstate.
func (m *statusMid) resume() (*StatusHasher, bool) {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(m.state); err != nil {
		return nil, false
	}
	return &StatusHasher{h: h, n: m.n}, true
}

// midstate captures s, made by a read at tip, for the cache.
func (s *StatusHasher) midstate(key hashX, at Tip, last uint64) *statusMid {
	s.flush()
	state, err := s.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil
	}
	return &statusMid{key: key, at: at, last: last, n: s.n, state: state}
}

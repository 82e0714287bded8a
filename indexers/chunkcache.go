package indexers

import (
	"encoding/binary"
	"sync"

	"github.com/btcsuite/btcd/database"
)

// The chunk cache keeps "Ext" chunks (the txids, offsets and sizes of 32
// consecutive transactions) that reads went to the database for. Every
// history entry names its transaction by position, so a get_history or a
// status reads one chunk per block its entries are in; on a chain of a
// million transactions those reads land all over the table and leveldb's
// own block cache (8 MiB, fixed by ffldb) holds a fraction of it, so most
// of them load and checksum a table block. A cached chunk is a map lookup.
//
// Chunks are written once per block and rewritten only when a block is
// disconnected and another takes its height. Every disconnect changes the
// reorg epoch, a row written in the disconnect's own database transaction
// ("Exr"), and a cached chunk serves only views that read the epoch it was
// read with: a view never gets a chunk of a block its chain does not hold,
// whatever the order of commits and reads.

const (
	// DefaultChunkCacheBytes bounds the chunk cache: about 1.5 million
	// transactions' entries.
	DefaultChunkCacheBytes = 64 << 20

	// chunkShards spreads the cache's lock.
	chunkShards = 16
	// chunkEntryCost is what an entry costs beside its value.
	chunkEntryCost = 96
)

// chunkCache is a sharded map of chunks with CLOCK eviction.
type chunkCache struct {
	shards [chunkShards]chunkShard
}

type chunkShard struct {
	mu    sync.Mutex
	max   int
	bytes int
	m     map[uint64]*chunkEntry
	ring  []uint64 // keys in insertion order, swept by hand
	hand  int
}

type chunkEntry struct {
	epoch uint64
	v     []byte
	ref   bool // read since the hand last passed
}

// newChunkCache returns a cache of at most maxBytes; nil (no caching) when
// maxBytes is not positive.
func newChunkCache(maxBytes int) *chunkCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &chunkCache{}
	for i := range c.shards {
		c.shards[i].max = maxBytes / chunkShards
		c.shards[i].m = make(map[uint64]*chunkEntry)
	}
	return c
}

func (c *chunkCache) shard(n uint64) *chunkShard {
	// Chunk positions are multiples of txChunk within a height: mix the
	// height in so consecutive blocks spread over the shards.
	return &c.shards[(n>>5^n>>16)%chunkShards]
}

// get returns the chunk at position n if it was read under epoch.
func (c *chunkCache) get(n, epoch uint64) []byte {
	if c == nil {
		return nil
	}
	s := c.shard(n)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[n]
	if e == nil || e.epoch != epoch {
		return nil
	}
	e.ref = true
	return e.v
}

// put keeps a copy of chunk v at position n, read under epoch.
func (c *chunkCache) put(n, epoch uint64, v []byte) {
	if c == nil || len(v) == 0 {
		return
	}
	cost := len(v) + chunkEntryCost
	s := c.shard(n)
	if cost > s.max {
		return
	}
	v = append([]byte(nil), v...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[n]; e != nil {
		s.bytes += len(v) - len(e.v)
		e.epoch, e.v, e.ref = epoch, v, false
	} else {
		for s.bytes+cost > s.max && len(s.ring) > 0 {
			s.evict()
		}
		s.m[n] = &chunkEntry{epoch: epoch, v: v}
		s.ring = append(s.ring, n)
		s.bytes += cost
	}
}

// evict removes one entry: the first one the hand finds not read since it
// last passed.
func (s *chunkShard) evict() {
	for {
		if s.hand >= len(s.ring) {
			s.hand = 0
		}
		n := s.ring[s.hand]
		e := s.m[n]
		if e.ref {
			e.ref = false
			s.hand++
			continue
		}
		delete(s.m, n)
		last := len(s.ring) - 1
		s.ring[s.hand] = s.ring[last]
		s.ring = s.ring[:last]
		s.bytes -= len(e.v) + chunkEntryCost
		return
	}
}

// reorgEpoch returns the reorg epoch a view holds: 0 before the first
// disconnect.
func reorgEpoch(meta database.Bucket) uint64 {
	v := meta.Get(reorgKey)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// bumpReorgEpoch changes the reorg epoch inside a disconnect's transaction.
// The new value is the old one plus one, read in the same transaction, so
// the epochs a database ever holds never repeat.
func bumpReorgEpoch(meta database.Bucket) error {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], reorgEpoch(meta)+1)
	return meta.Put(reorgKey, v[:])
}

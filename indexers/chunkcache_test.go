package indexers

import (
	"bytes"
	"testing"
)

// TestChunkCacheBoundAndEpoch checks that the chunk cache stays within its
// bytes, keeps the chunks that are read over those that are not, and serves
// a chunk only to views of the epoch it was read in.
func TestChunkCacheBoundAndEpoch(t *testing.T) {
	const size = 1280
	c := newChunkCache(chunkShards * 10 * (size + chunkEntryCost))
	chunk := func(n uint64) []byte { return bytes.Repeat([]byte{byte(n)}, size) }
	at := func(i int) uint64 { return txPos(int32(i/4), i%4*txChunk) }

	// A hot chunk, read between every insertion, survives the others.
	hot := at(0)
	c.put(hot, 7, chunk(hot))
	for i := 1; i < 2000; i++ {
		c.put(at(i), 7, chunk(at(i)))
		if v := c.get(hot, 7); !bytes.Equal(v, chunk(hot)) {
			t.Fatalf("hot chunk evicted after %d insertions", i)
		}
	}
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		if s.bytes > s.max || len(s.m) != len(s.ring) {
			t.Fatalf("shard %d holds %d bytes of %d, %d entries, %d in its ring", i, s.bytes, s.max, len(s.m), len(s.ring))
		}
		n += len(s.m)
	}
	if n < chunkShards*5 {
		t.Fatalf("only %d entries kept", n)
	}
	// Another epoch does not see the chunk; a put under it replaces it.
	if c.get(hot, 8) != nil {
		t.Fatal("chunk of epoch 7 served to epoch 8")
	}
	c.put(hot, 8, chunk(1))
	if v := c.get(hot, 8); !bytes.Equal(v, chunk(1)) || c.get(hot, 7) != nil {
		t.Fatal("chunk not replaced by a put of a later epoch")
	}
	// The cache copies what it is given.
	v := chunk(9)
	c.put(at(9), 8, v)
	v[0] = 0
	if got := c.get(at(9), 8); got[0] != 9 {
		t.Fatal("cache kept the caller's slice")
	}
	// Off: nil cache.
	var off *chunkCache
	off.put(hot, 1, chunk(1))
	if off.get(hot, 1) != nil || newChunkCache(0) != nil {
		t.Fatal("a cache of 0 bytes keeps chunks")
	}
}

package indexers

import "testing"

// The read cache stays within its byte bound, evicting the least recently
// used entries, keeps nothing a quarter of its size or more, and never
// replaces an entry with one read at a lower tip.
func TestReadCacheBoundAndOrder(t *testing.T) {
	c := newReadCache(4 * (readEntryCost + 100*histEntrySize))
	key := func(i byte) readKey { return readKey{hx: hashX{i}, kind: readHistory} }
	entry := func(i byte, height int32, n int) *readEntry {
		return &readEntry{key: key(i), at: Tip{Height: height}, hist: make([]HistoryEntry, n)}
	}
	for i := byte(0); i < 4; i++ {
		c.put(entry(i, 10, 90))
	}
	if n, size := c.c.Len(); n != 4 || size > c.c.Max() {
		t.Fatalf("%d entries, %d of %d bytes", n, size, c.c.Max())
	}
	c.get(key(0)) // 1 is now the least recently used
	c.put(entry(4, 10, 90))
	if _, size := c.c.Len(); c.get(key(1)) != nil || c.get(key(0)) == nil || size > c.c.Max() {
		t.Fatalf("eviction kept the wrong entries (%d bytes of %d)", size, c.c.Max())
	}
	c.put(entry(5, 10, 200))
	if c.get(key(5)) != nil {
		t.Fatal("kept an entry of a quarter of the cache or more")
	}
	c.put(entry(0, 9, 10))
	if e := c.get(key(0)); e == nil || e.at.Height != 10 {
		t.Fatal("an older read replaced a newer entry")
	}
	c.put(entry(0, 11, 10))
	if e := c.get(key(0)); e == nil || e.at.Height != 11 {
		t.Fatal("a newer read did not replace the entry")
	}
	want := int64(0)
	for i := byte(0); i < 6; i++ {
		if e := c.get(key(i)); e != nil {
			want += int64(e.size)
		}
	}
	if _, size := c.c.Len(); size != want {
		t.Fatalf("size %d, entries add up to %d", size, want)
	}
	var off *readCache
	off.put(entry(0, 1, 1))
	if off.get(key(0)) != nil || off.worth(1<<20) {
		t.Fatal("a nil cache keeps entries")
	}
}

package lru

import "testing"

// TestCache checks the bound, the order of eviction, replacement (and a
// replacement refused by keep), removal (and a removal refused by match),
// and that the total cost is the sum of what is held.
func TestCache(t *testing.T) {
	c := New[int, string](10)
	for i := 0; i < 5; i++ {
		c.Put(i, "v", 2, nil)
	}
	if n, cost := c.Len(); n != 5 || cost != 10 {
		t.Fatalf("%d values of cost %d, want 5 of 10", n, cost)
	}
	c.Get(0) // 1 is now the least recently used
	c.Put(5, "w", 3, nil)
	if _, ok := c.Get(1); ok {
		t.Fatal("the least recently used value was kept")
	}
	if _, ok := c.Get(2); ok {
		t.Fatal("a cost of 3 over the bound dropped one value, not two")
	}
	if v, ok := c.Get(0); !ok || v != "v" {
		t.Fatal("a recently used value was dropped")
	}
	c.Put(5, "x", 1, func(old string) bool { return old == "w" })
	if v, _ := c.Get(5); v != "w" {
		t.Fatal("keep did not keep the old value")
	}
	c.Put(5, "x", 1, nil)
	if v, _ := c.Get(5); v != "x" {
		t.Fatal("a value was not replaced")
	}
	c.Remove(5, func(v string) bool { return v == "other" })
	if _, ok := c.Get(5); !ok {
		t.Fatal("match did not keep the value")
	}
	c.Remove(5, nil)
	if _, ok := c.Get(5); ok {
		t.Fatal("a value was not removed")
	}
	want := int64(0)
	for i := 0; i < 6; i++ {
		if _, ok := c.Get(i); ok {
			want += 2
		}
	}
	if n, cost := c.Len(); cost != want || n != int(want/2) {
		t.Fatalf("%d values of cost %d, the values held add up to %d", n, cost, want)
	}
}

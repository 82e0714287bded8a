// Package lru is a least-recently-used map bounded by the total cost of its
// values (bytes, or 1 each for a bound on entries), safe for concurrent use.
// The index's read and status caches and the Electrum server's answer cache
// keep their entries in one; each decides what an entry costs and when a
// cached value may be used.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values, dropping the least recently used values once
// their costs add up to more than its bound.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	order *list.List // of *item[K, V], most recently used first
	items map[K]*list.Element
}

type item[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

// New returns a cache holding values of at most max total cost.
func New[K comparable, V any](max int64) *Cache[K, V] {
	return &Cache[K, V]{max: max, order: list.New(), items: make(map[K]*list.Element)}
}

// Max returns the cache's bound.
func (c *Cache[K, V]) Max() int64 { return c.max }

// Get returns the value of key and makes it the most recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*item[K, V]).val, true
}

// Put stores val under key at cost and makes it the most recently used,
// then drops the least recently used values over the bound. When key
// already has a value and keep is not nil, keep(old) true leaves the old
// value in place (a newer one, say).
func (c *Cache[K, V]) Put(key K, val V, cost int64, keep func(old V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		it := el.Value.(*item[K, V])
		if keep != nil && keep(it.val) {
			return
		}
		c.used += cost - it.cost
		it.val, it.cost = val, cost
		c.order.MoveToFront(el)
	} else {
		c.items[key] = c.order.PushFront(&item[K, V]{key: key, val: val, cost: cost})
		c.used += cost
	}
	for c.used > c.max && c.order.Len() > 0 {
		el := c.order.Back()
		it := el.Value.(*item[K, V])
		c.order.Remove(el)
		delete(c.items, it.key)
		c.used -= it.cost
	}
}

// Remove drops the value of key if match (nil: any) accepts it.
func (c *Cache[K, V]) Remove(key K, match func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		it := el.Value.(*item[K, V])
		if match == nil || match(it.val) {
			c.order.Remove(el)
			delete(c.items, key)
			c.used -= it.cost
		}
	}
}

// Len returns the number of values held and their total cost.
func (c *Cache[K, V]) Len() (n int, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.used
}

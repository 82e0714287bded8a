package main

import (
	"math/rand"
	"testing"

	"github.com/syndtr/goleveldb/leveldb/comparer"
	"github.com/syndtr/goleveldb/leveldb/memdb"
)

// BenchmarkMemtableInsert times the insertion of a tip block's 22,000 rows
// into goleveldb's memtable, the store's write at the tip: in key order and
// in block order, into an empty memtable and into one that holds two blocks'
// rows already, as between two rotations of an 8 MiB memtable.
//
//	go test -bench MemtableInsert -benchtime 50x
func BenchmarkMemtableInsert(b *testing.B) {
	const blockRows = 22000
	r := rand.New(rand.NewSource(1))
	sorted := makeRows(r, blockRows, 2)
	shuffled := append([]row(nil), sorted...)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	before := makeRows(r, 2*blockRows, 1)
	for _, c := range []struct {
		name string
		rows []row
		fill []row
	}{
		{"key-order/empty", sorted, nil},
		{"block-order/empty", shuffled, nil},
		{"key-order/filled", sorted, before},
		{"block-order/filled", shuffled, before},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m := memdb.New(comparer.DefaultComparer, 8<<20)
				for _, x := range c.fill {
					m.Put(x.k, x.v)
				}
				b.StartTimer()
				for _, x := range c.rows {
					m.Put(x.k, x.v)
				}
			}
		})
	}
}

// Command storebench compares the key-value stores the Electrum index could
// be written into, on rows shaped like the index's: a build of sorted
// batches as the writer's catch-up commits them, then the batches of single
// blocks as the writer commits them at the chain's tip, then point reads.
// Both stores get the index's settings (indexers/store.go): 16 KiB blocks,
// no compression, an 8 MiB memtable (-memtable), a 64 MiB block cache.
//
// It is a module of its own so that the node's module does not depend on
// a store it does not use.
//
//	go run . -store leveldb
//	go run . -store pebble
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// row is one key and value.
type row struct{ k, v []byte }

// makeRows returns n rows shaped like the index's, sorted: a 3-byte table
// prefix, an 11-byte script hash prefix, the 4-byte height, 6 more bytes of
// key; values of 8 to 39 bytes.
func makeRows(r *rand.Rand, n int, height uint32) []row {
	out := make([]row, n)
	for i := range out {
		k := make([]byte, 24)
		k[0], k[1], k[2] = 'E', 'x', "hut"[r.Intn(3)]
		r.Read(k[3:14])
		binary.BigEndian.PutUint32(k[14:], height)
		r.Read(k[18:])
		v := make([]byte, 8+r.Intn(32))
		r.Read(v)
		out[i] = row{k, v}
	}
	sortRows(out)
	return out
}

func sortRows(rs []row) {
	slices.SortFunc(rs, func(a, b row) int { return compare(a.k, b.k) })
}

func compare(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// store is what the benchmark writes and reads through.
type store interface {
	write([]row) error
	get(k []byte) error
	close() error
}

type levelStore struct{ db *leveldb.DB }

func (s levelStore) write(rs []row) error {
	b := new(leveldb.Batch)
	for _, r := range rs {
		b.Put(r.k, r.v)
	}
	return s.db.Write(b, nil)
}

func (s levelStore) get(k []byte) error {
	_, err := s.db.Get(k, nil)
	if err == leveldb.ErrNotFound {
		return nil
	}
	return err
}

func (s levelStore) close() error { return s.db.Close() }

type pebbleStore struct {
	db  *pebble.DB
	dir string
	n   *int
}

// ingest writes sorted rows as a table of their own and ingests it: a
// build that skips the memtable and the write-ahead log.
func (s pebbleStore) ingest(rs []row) error {
	*s.n++
	path := filepath.Join(s.dir, fmt.Sprintf("ingest-%d.sst", *s.n))
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{
		TableFormat: s.db.TableFormat(), BlockSize: 16 << 10,
		Compression: sstable.NoCompression,
	})
	for i, r := range rs {
		if i > 0 && compare(rs[i-1].k, r.k) == 0 {
			continue
		}
		if err := w.Set(r.k, r.v); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return s.db.Ingest(context.Background(), []string{path})
}

func (s pebbleStore) write(rs []row) error {
	b := s.db.NewBatch()
	for _, r := range rs {
		if err := b.Set(r.k, r.v, nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.NoSync)
}

func (s pebbleStore) get(k []byte) error {
	_, c, err := s.db.Get(k)
	if err == pebble.ErrNotFound {
		return nil
	}
	if err == nil {
		c.Close()
	}
	return err
}

func (s pebbleStore) close() error { return s.db.Close() }

func open(kind, dir string) (store, error) {
	switch kind {
	case "leveldb":
		db, err := leveldb.OpenFile(dir, &opt.Options{
			Compression: opt.NoCompression, BlockSize: 16 << 10, DisableBufferPool: true,
			BlockCacheCapacity: 64 << 20, WriteBuffer: *memtable << 20, CompactionTableSize: 8 << 20,
			CompactionTotalSize: 64 << 20, CompactionL0Trigger: 8, WriteL0SlowdownTrigger: 16,
			WriteL0PauseTrigger: 24,
		})
		return levelStore{db}, err
	case "pebble":
		cache := pebble.NewCache(64 << 20)
		defer cache.Unref()
		o := &pebble.Options{Cache: cache, MemTableSize: uint64(*memtable) << 20}
		o.EnsureDefaults()
		for i := range o.Levels {
			o.Levels[i].BlockSize = 16 << 10
			o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
		}
		db, err := pebble.Open(dir, o)
		return pebbleStore{db: db, dir: filepath.Dir(dir), n: new(int)}, err
	}
	return nil, fmt.Errorf("unknown store %q: leveldb or pebble", kind)
}

var (
	memtable = flag.Int("memtable", 8, "memtable (goleveldb's write buffer) in `MiB`; Pebble commits a batch of more than half of it without inserting it into a memtable")
	ingest   = flag.Bool("ingest", false, "Pebble only: write each build batch as a table and ingest it")
	pause    = flag.Duration("pause", 0, "pause before each tip batch, as between blocks at a tip (the store's background work catches up)")
)

func main() {
	kind := flag.String("store", "leveldb", "`store` to measure: leveldb or pebble")
	batches := flag.Int("batches", 150, "build batches of 64,000 rows (four blocks of 16,000)")
	tips := flag.Int("tips", 100, "tip blocks of 16,000 rows, one batch each")
	flag.Parse()
	dir, err := os.MkdirTemp("", "storebench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := open(*kind, filepath.Join(dir, "db"))
	if err != nil {
		log.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	var height uint32
	start := time.Now()
	for i := 0; i < *batches; i++ {
		var b []row
		for j := 0; j < 4; j++ {
			height++
			b = append(b, makeRows(r, 16000, height)...)
		}
		sortRows(b)
		write := s.write
		if ps, ok := s.(pebbleStore); ok && *ingest {
			write = ps.ingest
		}
		if err := write(b); err != nil {
			log.Fatal(err)
		}
	}
	build := time.Since(start)
	var tip []time.Duration
	for i := 0; i < *tips; i++ {
		height++
		b := makeRows(r, 16000, height)
		time.Sleep(*pause)
		t := time.Now()
		if err := s.write(b); err != nil {
			log.Fatal(err)
		}
		tip = append(tip, time.Since(t))
	}
	slices.Sort(tip)
	var keys []row
	if height > 0 {
		keys = makeRows(r, 100000, 0)
	}
	for i := range keys {
		binary.BigEndian.PutUint32(keys[i].k[14:], uint32(r.Intn(int(height)))+1)
	}
	start = time.Now()
	for _, k := range keys {
		if err := s.get(k.k); err != nil {
			log.Fatal(err)
		}
	}
	gets := time.Since(start)
	if err := s.close(); err != nil {
		log.Fatal(err)
	}
	// q is the p-th percentile of the tip batches by nearest rank, as
	// e2ebench's ("-" without any).
	q := func(p int) string {
		if len(tip) == 0 {
			return "-"
		}
		return tip[max(0, (len(tip)*p+99)/100-1)].Round(10 * time.Microsecond).String()
	}
	reads := "no point reads (no rows)"
	if len(keys) > 0 {
		reads = fmt.Sprintf("%d point reads %.1f µs each", len(keys), float64(gets.Microseconds())/float64(len(keys)))
	}
	fmt.Printf("%s: build %d rows %v; tip batch of 16,000 rows p50 %s p90 %s max %s; %s\n",
		*kind, *batches*64000, build.Round(time.Millisecond), q(50), q(90), q(100), reads)
}

package indexers

import (
	"errors"
	"slices"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
)

// TestHistoryRowsRead reads one script's history from its per-block rows
// in a real store, beside the rows of its neighbours in key order: from
// the start, after a position inside a block's row, after a row's last
// position and after the last one, with and without a bound; and rows a
// reader must not take for entries (a foreign key length, a value that is
// not whole positions) are skipped.
func TestHistoryRowsRead(t *testing.T) {
	db, err := openStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	hx := hashX{0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	before, after := hx, hx
	before[10]--
	after[10]++
	rows := map[int32][]uint16{3: {0, 7}, 5: {2}, 9: {1, 4, 65535}}
	var want []uint64
	for _, h := range []int32{3, 5, 9} {
		for _, p := range rows[h] {
			want = append(want, txPos(h, int(p)))
		}
	}
	b := new(leveldb.Batch)
	meta := batchWriter{b}
	put := func(x hashX, h int32, pos ...uint16) {
		k := make([]byte, histKeyLen)
		histKey(k, &x, h)
		v := make([]byte, len(pos)*histPosLen)
		for i, p := range pos {
			v[2*i], v[2*i+1] = byte(p>>8), byte(p)
		}
		if err := meta.Put(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for h, pos := range rows {
		put(hx, h, pos...)
	}
	put(before, 4, 1)
	put(after, 0, 0)
	put(after, 4, 3, 5)
	// Not rows of the layout: a longer key, and an odd value.
	long := append(histPrefix(&hx), 0, 0, 0, 6, 0)
	if err := meta.Put(long, []byte{0, 1}); err != nil {
		t.Fatal(err)
	}
	put(hx, 7)
	k := make([]byte, histKeyLen)
	histKey(k, &hx, 8)
	if err := meta.Put(k, []byte{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(b, nil); err != nil {
		t.Fatal(err)
	}

	read := func(from *uint64, room int) ([]uint64, error) {
		v, err := newSnapView(db)
		if err != nil {
			t.Fatal(err)
		}
		defer v.release()
		return historyNumsWith(v.Cursor(), &hx, from, room)
	}
	at := func(h int32, p int) *uint64 { n := txPos(h, p); return &n }
	cases := []struct {
		name string
		from *uint64
		want []uint64
	}{
		{"all", nil, want},
		{"inside a row", at(3, 0), want[1:]},
		{"between positions of a row", at(9, 2), want[4:]},
		{"after a row's last position", at(3, 7), want[2:]},
		{"between rows", at(4, 100), want[2:]},
		{"after the last", at(9, 65535), nil},
	}
	for _, c := range cases {
		got, err := read(c.from, -1)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, err, c.want)
		}
	}
	if got, err := read(nil, len(want)); err != nil || !slices.Equal(got, want) {
		t.Errorf("bound of the history's length: %v %v", got, err)
	}
	if _, err := read(nil, len(want)-1); !errors.Is(err, ErrHistoryTooLarge) {
		t.Errorf("bound one short: %v, want ErrHistoryTooLarge", err)
	}
	if _, err := read(at(3, 0), len(want)-2); !errors.Is(err, ErrHistoryTooLarge) {
		t.Errorf("bound one short after a position: %v, want ErrHistoryTooLarge", err)
	}
}

// TestSpanRows pins how HistoryTxs groups a history's transactions into
// block regions: one region for the transactions of a block closer than
// spanGap, a new one past the gap or in the next block, and every row in
// exactly one region at its own place.
func TestSpanRows(t *testing.T) {
	rows := []txRow{
		{height: 5, offset: 100, size: 50},
		{height: 5, offset: 150, size: 20},             // adjacent
		{height: 5, offset: 170 + spanGap, size: 30},   // at the gap: same region
		{height: 5, offset: 201 + 2*spanGap, size: 10}, // past it
		{height: 6, offset: 211 + 2*spanGap, size: 10}, // another block
		{height: 6, offset: 400 + 2*spanGap, size: 10},
	}
	got := spanRows(nil, rows, 7)
	want := []txSpan{
		{height: 5, offset: 100, size: 100 + spanGap, first: 7, end: 10},
		{height: 5, offset: 201 + 2*spanGap, size: 10, first: 10, end: 11},
		{height: 6, offset: 211 + 2*spanGap, size: 199, first: 11, end: 13},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("spans %+v, want %+v", got, want)
	}
	for _, sp := range got {
		for i := sp.first; i < sp.end; i++ {
			r := rows[i-7]
			if r.height != sp.height || r.offset < sp.offset || r.offset+r.size > sp.offset+sp.size {
				t.Fatalf("row %d %+v outside its span %+v", i, r, sp)
			}
		}
	}
}

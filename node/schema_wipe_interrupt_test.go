package node

import (
	"encoding/binary"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// TestSchemaWipeHonoursInterrupt: an index store of another schema version
// (an upgrade) is emptied at start, which on a mainnet index takes hours;
// the operator's SIGINT/SIGTERM (cfg.Interrupt) stops it as it stops the
// catch-up. The wipe deletes the version first, so stopping it half way is
// safe (the next start finishes it). Here the interrupt is closed before
// New begins and the store holds 600,000 rows of the old version: New
// returns without deleting all of them, and a start after it builds the
// index.
func TestSchemaWipeHonoursInterrupt(t *testing.T) {
	dir := t.TempDir()
	first := testConfig(t, dir, true)
	n := startNode(t, first)
	generate(t, n, 5)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	storeDir := ElectrumIndexPath(first.NetDataDir())

	// The store as an older release left it: another schema version and
	// many rows.
	const filler = 600_000
	st, err := leveldb.OpenFile(storeDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	fillStore(t, st, filler)
	if err := st.Put([]byte("Exv"), []byte{0, 0, 0, 5}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// SIGINT arrived before the start reached the index.
	interrupt := make(chan struct{})
	close(interrupt)
	second := testConfig(t, dir, true)
	second.Interrupt = interrupt
	n2, err := New(second)
	if err == nil {
		_ = n2.Stop()
		t.Fatal("the node started although it was interrupted before it began")
	}
	t.Logf("New: %v", err)

	left := historyRows(t, storeDir)
	if left == 0 {
		t.Fatalf("the interrupted start deleted all %d rows of the old index before it stopped: "+
			"the schema wipe does not look at the interrupt", filler)
	}

	n3 := startNode(t, testConfig(t, dir, true))
	syncIndex(t, n3)
	if tip, _ := n3.index.electrum.LatestTip(); tip.Hash != n3.Chain().BestSnapshot().Hash {
		t.Fatalf("after the interrupted wipe, the next start's index is at %v, want the chain's tip", tip)
	}
}

// fillStore puts n history-table rows of no meaning into st: an index's
// worth of rows for a wipe to delete.
func fillStore(t *testing.T, st *leveldb.DB, n int) {
	t.Helper()
	b := new(leveldb.Batch)
	for i := 0; i < n; i++ {
		k := make([]byte, 3+8+4)
		copy(k, "Exh")
		binary.BigEndian.PutUint64(k[3:], uint64(i)*0x9E3779B97F4A7C15)
		b.Put(k, make([]byte, 8))
		if b.Len() == 50_000 {
			if err := st.Write(b, nil); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := st.Write(b, nil); err != nil {
		t.Fatal(err)
	}
}

// historyRows counts the history-table rows of the closed store in dir.
func historyRows(t *testing.T, dir string) int {
	t.Helper()
	st, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	it := st.NewIterator(util.BytesPrefix([]byte("Exh")), nil)
	for it.Next() {
		n++
	}
	it.Release()
	return n
}

package node

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
)

// closeOnLine is a log writer that closes a channel once a line holding
// a marker is logged (synchronously, in the logging goroutine).
type closeOnLine struct {
	marker []byte
	ch     chan struct{}
	once   sync.Once
}

func (w *closeOnLine) Write(p []byte) (int, error) {
	if bytes.Contains(p, w.marker) {
		w.once.Do(func() { close(w.ch) })
	}
	return len(p), nil
}

// TestStartRebuildWipeHonoursInterrupt: at start, an index whose tip is
// not in the main chain and cannot be undone (no undo record, the block
// unknown to btcd) is rebuilt: the writer's first pass, run by New with the
// operator's interrupt (cfg.Interrupt), wipes the store, and stops on the
// interrupt as the schema wipe does, not after every row is deleted.
func TestStartRebuildWipeHonoursInterrupt(t *testing.T) {
	dir := t.TempDir()
	first := testConfig(t, dir, true)
	n := startNode(t, first)
	generate(t, n, 5)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	storeDir := ElectrumIndexPath(first.NetDataDir())

	st, err := leveldb.OpenFile(storeDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Many rows, as an index of a real chain has.
	const filler = 600_000
	fillStore(t, st, filler)
	// The tip: a block at height 5 that btcd does not know (a branch it
	// no longer holds), without an undo record: it cannot be undone.
	var fake [32]byte
	for i := range fake {
		fake[i] = 0xab
	}
	tip := make([]byte, 36)
	copy(tip, fake[:])
	binary.LittleEndian.PutUint32(tip[32:], 5)
	blk := []byte{'E', 'x', 'b', 0, 0, 0, 5}
	old, err := st.Get(blk, nil)
	if err != nil || len(old) != 40 {
		t.Fatalf("block row at 5: %x, %v", old, err)
	}
	nb := append(append([]byte(nil), old[:8]...), fake[:]...)
	wb := new(leveldb.Batch)
	wb.Put([]byte("Exz"), tip)
	wb.Put(blk, nb)
	wb.Delete([]byte{'E', 'x', 'd', 0, 0, 0, 5})
	if err := st.Write(wb, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// SIGINT arrives as the writer says it rebuilds the index.
	interrupt := make(chan struct{})
	tap := &closeOnLine{marker: []byte("rebuilding the index"), ch: interrupt}
	output.mu.Lock()
	oldOut := output.stdout
	output.stdout = tap
	output.mu.Unlock()
	t.Cleanup(func() {
		output.mu.Lock()
		output.stdout = oldOut
		output.mu.Unlock()
	})
	second := testConfig(t, dir, true)
	second.Interrupt = interrupt
	n2, err := New(second)
	output.mu.Lock()
	output.stdout = oldOut
	output.mu.Unlock()
	select {
	case <-interrupt:
	default:
		if n2 != nil {
			_ = n2.Stop()
		}
		t.Fatalf("setup: the writer did not rebuild the index (New: %v)", err)
	}
	if err == nil {
		_ = n2.Stop()
	}
	t.Logf("New: %v", err)

	left := historyRows(t, storeDir)
	if left == 0 {
		t.Fatalf("the start interrupted as the rebuild began deleted all %d rows before it stopped: "+
			"the rebuild's wipe in the first pass does not look at cfg.Interrupt", filler)
	}

	n3 := startNode(t, testConfig(t, dir, true))
	syncIndex(t, n3)
	if tip, _ := n3.index.electrum.LatestTip(); tip.Hash != n3.Chain().BestSnapshot().Hash {
		t.Fatalf("after the interrupted rebuild, the next start's index is at %v, want the chain's tip", tip)
	}
}

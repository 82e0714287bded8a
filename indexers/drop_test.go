package indexers_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btclog"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// lockedBuf is a log sink the logger may write from any goroutine.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TestDropSaysWhenThereIsNoIndex: as btcd's --drop*index, dropping an index
// that is not there says so instead of reporting a drop.
func TestDropSaysWhenThereIsNoIndex(t *testing.T) {
	h, err := testchain.Create(filepath.Join(t.TempDir(), "chain"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var logs lockedBuf
	l := btclog.NewBackend(&logs).Logger("ELEC")
	l.SetLevel(btclog.LevelInfo)
	indexers.UseLogger(l)
	defer indexers.UseLogger(btclog.Disabled)

	dir := filepath.Join(t.TempDir(), "electrum")
	if err := indexers.DropElectrumIndex(h.DB, dir, nil); err != nil {
		t.Fatal(err)
	}
	if got := logs.take(); !strings.Contains(got, "Not dropping the Electrum index because it does not exist") ||
		strings.Contains(got, "Dropped") {
		t.Fatalf("drop without an index logged:\n%s", got)
	}

	idx, err := indexers.NewElectrumIndex(h.DB, indexers.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}
	logs.take()
	if err := indexers.DropElectrumIndex(h.DB, dir, nil); err != nil {
		t.Fatal(err)
	}
	if got := logs.take(); !strings.Contains(got, "Dropped the Electrum index") {
		t.Fatalf("drop of an index logged:\n%s", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the index's store is still there: %v", err)
	}
}

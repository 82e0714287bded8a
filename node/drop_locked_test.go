//go:build unix

package node

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDropRefusesIndexStoreInUse: --dropelectrumindex on a datadir whose
// index store another process holds (its lock) refuses, naming the store,
// and leaves the store's files alone, as a start refuses to open it.
func TestDropRefusesIndexStoreInUse(t *testing.T) {
	dir := t.TempDir()
	first := testConfig(t, dir, true)
	n := startNode(t, first)
	generate(t, n, 2)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	storeDir := ElectrumIndexPath(first.NetDataDir())
	f, err := os.OpenFile(filepath.Join(storeDir, "LOCK"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	d := testConfig(t, dir, false)
	d.DropElectrumIndex = true
	err = DropIndexes(d)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") || !strings.Contains(err.Error(), storeDir) {
		t.Fatalf("drop of an index store another process holds: %v", err)
	}
	if _, err := os.Stat(filepath.Join(storeDir, "CURRENT")); err != nil {
		t.Fatalf("the store's files were deleted: %v", err)
	}
}

package node

import (
	"os"
	"path/filepath"
	"testing"
)

// An operator who keeps the index's store on another disk moves
// <datadir>/<network>/electrum_index there and leaves a symlink: a drop
// deletes the index's files there, not only the link to them, and keeps the
// link, so that the next build goes where the store was.
func TestDropThroughSymlinkDeletesTheStore(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir, true))
	generate(t, n, 5)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	storeDir := ElectrumIndexPath(filepath.Join(dir, "data", "regtest"))
	other := filepath.Join(t.TempDir(), "fastdisk", "electrum_index")
	if err := os.MkdirAll(filepath.Dir(other), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(storeDir, other); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, storeDir); err != nil {
		t.Fatal(err)
	}
	// The node runs on the moved store.
	n2 := startNode(t, testConfig(t, dir, true))
	syncIndex(t, n2)
	if err := n2.Stop(); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t, dir, false)
	cfg.DropElectrumIndex = true
	if err := DropIndexes(cfg); err != nil {
		t.Fatalf("DropIndexes: %v", err)
	}
	left, _ := os.ReadDir(other)
	if len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Fatalf("after --dropelectrumindex the index's files are still in %s (the store the symlink %s named): %v",
			other, storeDir, names)
	}
	if fi, err := os.Lstat(storeDir); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link to the store is gone after the drop: %v", err)
	}
	n3 := startNode(t, testConfig(t, dir, true))
	syncIndex(t, n3)
	if err := n3.Stop(); err != nil {
		t.Fatal(err)
	}
	if built, _ := os.ReadDir(other); len(built) == 0 {
		t.Fatal("the next build did not go where the store was")
	}
}

package node

import (
	"os"
	"path/filepath"
	"testing"
)

// A store kept on another disk behind a symbolic link is emptied by a drop,
// the link kept: --prune, refused while the index exists, then starts.
func TestPruneAfterDropOfSymlinkedStore(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir, true))
	generate(t, n, 3)
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

	drop := testConfig(t, dir, false)
	drop.DropElectrumIndex = true
	if err := DropIndexes(drop); err != nil {
		t.Fatalf("DropIndexes: %v", err)
	}
	if left, _ := os.ReadDir(other); len(left) != 0 {
		t.Fatalf("setup: the drop left %d files in %s", len(left), other)
	}

	pruneCfg := testConfig(t, dir, false)
	pruneCfg.Prune = pruneMinSize
	pruned, err := New(pruneCfg)
	if err != nil {
		t.Fatalf("--prune after --dropelectrumindex of a store behind a symlink (emptied, link kept) refused: %v", err)
	}
	_ = pruned.Stop()
}

package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkedStore builds an index in a node's datadir, then moves its store to
// another directory ("another disk") and leaves a symbolic link in its
// place, as an operator does. It returns the datadir's directory, the
// link and the store's new place.
func linkedStore(t *testing.T) (dir, link, other string) {
	t.Helper()
	dir = t.TempDir()
	n := startNode(t, testConfig(t, dir, true))
	generate(t, n, 5)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	link = ElectrumIndexPath(filepath.Join(dir, "data", "regtest"))
	other = filepath.Join(t.TempDir(), "fastdisk", "electrum_index")
	if err := os.MkdirAll(filepath.Dir(other), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link, other); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	return dir, link, other
}

// An operator who keeps the index's store on another disk moves
// <datadir>/<network>/electrum_index there and leaves a symlink: a drop
// deletes the index's files there, not only the link to them, and keeps the
// link, so that the next build goes where the store was.
func TestDropThroughSymlinkDeletesTheStore(t *testing.T) {
	dir, storeDir, other := linkedStore(t)
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

// A damaged store (a torn manifest) is rebuilt; one kept on another disk
// behind a symlink is rebuilt there, the link kept, not made anew on the
// datadir's disk with the damaged files left on the other.
func TestDamagedStoreBehindSymlinkRebuiltInPlace(t *testing.T) {
	dir, storeDir, other := linkedStore(t)
	// A torn manifest.
	ents, _ := os.ReadDir(other)
	torn := false
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "MANIFEST-") {
			p := filepath.Join(other, e.Name())
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
			torn = true
		}
	}
	if !torn {
		t.Fatal("setup: no manifest")
	}

	var logs triggerLog
	tapLog(t, &logs)
	n2 := startNode(t, testConfig(t, dir, true))
	syncIndex(t, n2)
	if !strings.Contains(logs.String(), "is damaged") {
		t.Fatalf("setup: the store was not found damaged:\n%s", logs.String())
	}
	fi, err := os.Lstat(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		left, _ := os.ReadDir(other)
		t.Fatalf("the damaged store's rebuild replaced the symlink %s with a new directory on the datadir's disk; "+
			"%s still holds %d files of the damaged store", storeDir, other, len(left))
	}
}

// A store kept on another disk behind a symbolic link is emptied by a drop,
// the link kept: --prune, refused while the index exists, then starts.
func TestPruneAfterDropOfSymlinkedStore(t *testing.T) {
	dir, _, other := linkedStore(t)

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

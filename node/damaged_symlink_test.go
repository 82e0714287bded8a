package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A damaged store (a torn manifest) is rebuilt; one kept on another disk
// behind a symlink is rebuilt there, the link kept, not made anew on the
// datadir's disk with the damaged files left on the other.
func TestDamagedStoreBehindSymlinkRebuiltInPlace(t *testing.T) {
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

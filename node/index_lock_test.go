//go:build unix

package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLockedIndexStoreSaysItIsInUse: the Electrum index's store held by
// another process (leveldb's lock: a copy of the node, a leveldb tool, a
// backup job) stops the start with an error that names the store and says
// it is in use, as for btcd's database, not with the lock's errno alone
// ("resource temporarily unavailable"), which reads as worth retrying; and
// --dropelectrumindex refuses to delete it.
func TestLockedIndexStoreSaysItIsInUse(t *testing.T) {
	dir := t.TempDir()
	first := testConfig(t, dir, true)
	n := startNode(t, first)
	generate(t, n, 2)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	storeDir := ElectrumIndexPath(first.NetDataDir())

	// Another process's lock: flock on a descriptor of our own, which
	// conflicts with goleveldb's as one of another process does.
	f, err := os.OpenFile(filepath.Join(storeDir, "LOCK"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	second := testConfig(t, dir, true)
	n2, err := New(second)
	if err == nil {
		_ = n2.Stop()
		t.Fatal("the node opened an index store another process holds")
	}
	msg := err.Error()
	t.Logf("New: %s", msg)
	if !strings.Contains(msg, storeDir) {
		t.Errorf("the error does not name the index store: %q", msg)
	}
	if !strings.Contains(msg, "in use") && !strings.Contains(msg, "another process") {
		t.Errorf("the error does not say another process holds the index store: %q", msg)
	}

	// --dropelectrumindex refuses it too, and leaves its files alone.
	d := testConfig(t, dir, false)
	d.DropElectrumIndex = true
	err = DropIndexes(d)
	if err == nil || !strings.Contains(err.Error(), "in use by another process") || !strings.Contains(err.Error(), storeDir) {
		t.Fatalf("drop of an index store another process holds: %v", err)
	}
	if _, err := os.Stat(filepath.Join(storeDir, "CURRENT")); err != nil {
		t.Fatalf("the store's files were deleted: %v", err)
	}

	// The binary stops with the same error, and says it in its log file
	// too: an operator reading the log learns why the node stopped.
	logDir := filepath.Join(dir, "binlogs")
	cmd := exec.Command(buildBinary(t), "--regtest", "--datadir="+first.DataDir, "--logdir="+logDir,
		"-C", os.DevNull, "--listen="+freePort(t), "--rpclisten="+freePort(t), "--rpcuser=user", "--rpcpass=pass",
		"--notls", "--electrumindex", "--electrumlisten="+freePort(t))
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the binary started on a store another process holds:\n%s", out)
	}
	logged, rerr := os.ReadFile(filepath.Join(logDir, "regtest", "btcd-electrum.log"))
	if rerr != nil || !strings.Contains(string(logged), "in use by another process") {
		t.Errorf("the log file does not say why the node stopped (%v):\n%s\noutput:\n%s", rerr, logged, out)
	}
}

package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryProfilesAndDrop runs the built binary with --memprofile and
// --traceprofile (both written when it exits on SIGINT), then with
// --dropcfindex, which deletes the compact filter index and exits without
// starting the node, as btcd.
func TestBinaryProfilesAndDrop(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	rpcAddr := freePort(t)
	mem, trace := filepath.Join(dir, "mem.pprof"), filepath.Join(dir, "trace.out")
	args := []string{"--regtest", "--datadir=" + filepath.Join(dir, "data"),
		"--logdir=" + filepath.Join(dir, "logs"), "--listen=" + freePort(t),
		"--rpclisten=" + rpcAddr, "--rpcuser=user", "--rpcpass=pass", "--notls"}
	cmd := exec.Command(bin, append(args, "--memprofile="+mem, "--traceprofile="+trace)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	rpcClient(t, rpcAddr)
	if err := interruptAndWait(t, cmd); err != nil {
		t.Fatalf("exit: %v", err)
	}
	for _, f := range []string{mem, trace} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}

	out, err := exec.Command(bin, append(args, "--dropcfindex")...).CombinedOutput()
	if err != nil {
		t.Fatalf("--dropcfindex: %v\n%s", err, out)
	}
	log, err := os.ReadFile(filepath.Join(dir, "logs", "regtest", "btcd-electrum.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Dropped committed filter index") {
		t.Fatalf("no drop in the log:\n%s", log)
	}
	if strings.Count(string(log), "Node started") != 1 {
		t.Fatal("--dropcfindex started the node")
	}
}

package node

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestBinaryVersionOnlyOnCommandLine: as in btcd, --version prints the
// version and exits on the command line only; version=1 in the config file
// is ignored and the node starts (a service manager takes the exit status 0
// of a printed version for a clean stop, and never restarts the node).
func TestBinaryVersionOnlyOnCommandLine(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "btcd-electrum version ") {
		t.Fatalf("--version: %v, %q", err, out)
	}
	conf := filepath.Join(dir, "btcd-electrum.conf")
	if err := os.WriteFile(conf, []byte("version=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-C", conf, "--regtest", "--datadir="+filepath.Join(dir, "data"),
		"--logdir="+filepath.Join(dir, "logs"), "--listen="+freePort(t), "--nodnsseed")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	logFile := filepath.Join(dir, "logs", "regtest", "btcd-electrum.log")
	for deadline := time.Now().Add(testWait); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("with version=1 in the config file the node exited (%v) instead of starting; stdout %q",
				err, strings.TrimSpace(stdout.String()))
		default:
		}
		if b, _ := os.ReadFile(logFile); bytes.Contains(b, []byte("Node started")) {
			_ = cmd.Process.Signal(syscall.SIGINT)
			<-exited
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the node neither started nor exited")
		}
	}
}

package node

import (
	"bytes"
	"errors"
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

// OPERATIONS.md, "Start-up": a bad flag or config-file value stops the
// node with one line on stderr naming the option and exit status 1, before
// the data or log directory is created. A --cpuprofile, --memprofile or
// --traceprofile in a directory that does not exist is such a value.
func TestBinaryProfileDirectoryCheckedBeforeOpening(t *testing.T) {
	bin := buildBinary(t)
	for _, opt := range []string{"cpuprofile", "memprofile", "traceprofile"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bin, "--regtest", "-C", os.DevNull, "--datadir="+filepath.Join(dir, "data"),
				"--logdir="+filepath.Join(dir, "logs"), "--"+opt+"="+filepath.Join(dir, "no", "such", "x.prof"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			for _, d := range []string{"data", "logs"} {
				if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
					t.Errorf("%s was created before --%s was refused (stderr %q)", d, opt, msg)
				}
			}
			if !strings.Contains(msg, "--"+opt) {
				t.Errorf("stderr %q does not name --%s", msg, opt)
			}
		})
	}
}

// sample-btcd-electrum.conf: "Paths may use ~ and $VARIABLES." The profile
// paths are expanded as the others: cpuprofile=~/cpu.prof in the config
// file writes $HOME/cpu.prof, whatever the working directory.
func TestBinaryProfilePathsExpandHome(t *testing.T) {
	bin := buildBinary(t)
	home, work := t.TempDir(), t.TempDir()
	conf := filepath.Join(home, "btcd-electrum.conf")
	if err := os.WriteFile(conf, []byte("cpuprofile=~/cpu.prof\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// --dropcfindex on a datadir without a block database exits right
	// after the profiles are started.
	cmd := exec.Command(bin, "--regtest", "-C", conf, "--datadir="+filepath.Join(home, "data"),
		"--logdir="+filepath.Join(home, "logs"), "--dropcfindex")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if _, err := os.Stat(filepath.Join(home, "cpu.prof")); err != nil {
		t.Fatalf("cpuprofile=~/cpu.prof did not write $HOME/cpu.prof (%v); stderr %q",
			err, strings.TrimSpace(stderr.String()))
	}
}

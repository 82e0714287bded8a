package node

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/rpcclient"
)

// TestElectrumListenersNeedTheIndex: an Electrum listener without
// --electrumindex has nothing to serve. Like --esploralisten, it is
// refused at start, naming the option and --electrumindex, rather than
// accepted and never opened: an operator who forgot electrumindex=1 in the
// config file would get a node that starts without complaint and an
// Electrum port that refuses every wallet.
func TestElectrumListenersNeedTheIndex(t *testing.T) {
	for _, option := range []string{"electrumlisten", "electrumtlslisten", "electrumwslisten", "electrumwsslisten"} {
		dir := t.TempDir()
		_, _, err := LoadConfig([]string{"--regtest", "-C", os.DevNull, "--datadir=" + filepath.Join(dir, "data"),
			"--logdir=" + filepath.Join(dir, "logs"), "--nolisten", "--" + option + "=127.0.0.1:51060"})
		if err == nil {
			t.Errorf("--%s without --electrumindex is accepted", option)
			continue
		}
		if !strings.Contains(err.Error(), "--"+option) || !strings.Contains(err.Error(), "--electrumindex") {
			t.Errorf("--%s without --electrumindex: %q names neither the option nor --electrumindex", option, err)
		}
	}
}

// TestBinaryRefusesElectrumListenerWithoutIndex: the binary, given an
// Electrum listener and no --electrumindex, exits with status 1 and one
// line naming the option before it creates the data or log directory.
func TestBinaryRefusesElectrumListenerWithoutIndex(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	rpcAddr := freePort(t)
	cmd := exec.Command(bin, "--regtest", "-C", os.DevNull, "--datadir="+filepath.Join(dir, "data"),
		"--logdir="+filepath.Join(dir, "logs"), "--listen="+freePort(t),
		"--rpclisten="+rpcAddr, "--rpcuser=user", "--rpcpass=pass", "--notls",
		"--electrumlisten="+freePort(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: rpcAddr, User: "user", Pass: "pass",
		HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	for deadline := time.Now().Add(testWait); ; {
		select {
		case err = <-exited:
		case <-time.After(20 * time.Millisecond):
			if _, rpcErr := c.GetBlockCount(); rpcErr == nil {
				t.Fatal("the node started with --electrumlisten and without --electrumindex")
			}
			if time.Now().After(deadline) {
				t.Fatal("the node neither exited nor answered RPC")
			}
			continue
		}
		break
	}
	exited <- err
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("--electrumlisten without --electrumindex: exit %v, want status 1 (stderr %q)", err, stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	if !strings.Contains(msg, "--electrumlisten") || !strings.Contains(msg, "--electrumindex") {
		t.Errorf("stderr %q names neither --electrumlisten nor --electrumindex", msg)
	}
	for _, d := range []string{"data", "logs"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
			t.Errorf("%s was created before the option was refused", d)
		}
	}
}

package node

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryChecksRPCPairBeforeOpening: the RPC server's TLS pair is checked
// at start, as the Electrum pair is (TestBinaryChecksTLSPairBeforeOpening):
// a --rpckey typo beside an existing --rpccert stops the node, naming the
// options, before the block database is created (not after the chain has
// loaded and the indexes caught up, hours on an existing datadir).
func TestBinaryChecksRPCPairBeforeOpening(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	cert := filepath.Join(dir, "rpc.cert")
	if err := os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--regtest", "-C", os.DevNull, "--datadir="+filepath.Join(dir, "data"),
		"--logdir="+filepath.Join(dir, "logs"), "--nolisten", "--electrumindex",
		"--electrumlisten="+freePort(t), "--rpcuser=u", "--rpcpass=p", "--rpclisten="+freePort(t),
		"--rpccert="+cert, "--rpckey="+filepath.Join(dir, "rpc.kye"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Errorf("the block database was created before the RPC TLS pair was refused (stderr %q)", strings.TrimSpace(stderr.String()))
	}
	if msg := stderr.String(); !strings.Contains(msg, "--rpckey") && !strings.Contains(msg, "--rpccert") {
		t.Errorf("stderr %q names neither --rpccert nor --rpckey", strings.TrimSpace(msg))
	}
}

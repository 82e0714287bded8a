package node

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
)

// presentedCert dials the Electrum TLS listener and returns the SHA-256 of
// the certificate it presents.
func presentedCert(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sum := sha256.Sum256(c.ConnectionState().PeerCertificates[0].Raw)
	return hex.EncodeToString(sum[:])
}

// TestBinarySIGHUPReloadsTLS runs the built binary with an Electrum TLS listener and no certificate (one is created), logs the listeners in its start-up block, renews the certificate on SIGHUP without dropping the session already open, and keeps the renewed one when a broken pair is signalled.
func TestBinarySIGHUPReloadsTLS(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	rpcAddr, tlsAddr := freePort(t), freePort(t)
	certFile, keyFile := filepath.Join(dir, "electrum.cert"), filepath.Join(dir, "electrum.key")
	cmd := exec.Command(bin, "--regtest", "--datadir="+filepath.Join(dir, "data"),
		"--logdir="+filepath.Join(dir, "logs"), "--listen="+freePort(t),
		"--rpclisten="+rpcAddr, "--rpcuser=user", "--rpcpass=pass", "--notls",
		"--electrumindex", "--electrumtlslisten="+tlsAddr,
		"--electrumcert="+certFile, "--electrumkey="+keyFile, "--utxocachemaxsize=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	rpcClient(t, rpcAddr)
	logFile := filepath.Join(dir, "logs", "regtest", "btcd-electrum.log")
	logged, _ := os.ReadFile(logFile)
	for _, want := range []string{"Node started on regtest", "datadir:", "index:    Electrum index caught up at height 0",
		"rpc:      http://" + rpcAddr, "electrum: ssl://" + tlsAddr, "tls cert: " + certFile} {
		if !bytes.Contains(logged, []byte(want)) {
			t.Fatalf("start-up block lacks %q:\n%s", want, logged)
		}
	}

	first := presentedCert(t, tlsAddr)
	open, err := tls.Dial("tcp", tlsAddr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	cert, key, err := btcutil.NewTLSCertPair("renewed", time.Now().Add(24*time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var renewed string
	waitFor(t, "the renewed certificate", func() bool {
		renewed = presentedCert(t, tlsAddr)
		return renewed != first
	})
	open.SetDeadline(time.Now().Add(testWait))
	if _, err := open.Write([]byte(`{"id":1,"method":"server.version","params":["kept","1.4"]}` + "\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	if n, err := open.Read(buf); err != nil || !bytes.Contains(buf[:n], []byte(`"1.4"`)) {
		t.Fatalf("the session opened before the reload: %q, %v", buf[:n], err)
	}

	if err := os.WriteFile(certFile, []byte("broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed reload in the log", func() bool {
		logged, _ := os.ReadFile(logFile)
		return bytes.Contains(logged, []byte("TLS certificate not reloaded"))
	})
	if got := presentedCert(t, tlsAddr); got != renewed {
		t.Fatalf("after a failed reload the node presents %s, want %s", got, renewed)
	}
	if err := interruptAndWait(t, cmd); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// TestBinaryRejectsBadOptions starts the binary with bad flag and config-file values: each is refused with one line on stderr naming the option, exit status 1, and nothing is created (no data or log directory).
func TestBinaryRejectsBadOptions(t *testing.T) {
	bin := buildBinary(t)
	tests := []struct {
		name string
		args []string
		conf string
		want string
	}{
		{"exempt nets", []string{"--electrumexemptnets=127.0.0.0/8,proxy"}, "", "--electrumexemptnets"},
		{"metrics address", []string{"--metricslisten=localhost:http-ish"}, "", "--metricslisten"},
		{"max send", []string{"--electrummaxsend=1000"}, "", "--electrummaxsend"},
		{"not a number", []string{"--electrummaxsessions=many"}, "", "electrummaxsessions"},
		{"negative limit", []string{"--electrummaxsubs=-1"}, "", "--electrummaxsubs"},
		{"unknown flag", []string{"--electrummaxsesions=10"}, "", "electrummaxsesions"},
		{"log level", []string{"--debuglevel=loud"}, "", "loud"},
		{"listener", []string{"--electrumwsslisten=0.0.0.0:5OOO4"}, "", "--electrumwsslisten"},
		{"config file value", nil, "electrumidletimeout=soon\n", "electrumidletimeout"},
		{"config file option", nil, "electrumlimit=5\n", "electrumlimit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "btcd-electrum.conf")
			if err := os.WriteFile(conf, []byte(tc.conf), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--regtest", "-C", conf, "--datadir=" + filepath.Join(dir, "data"),
				"--logdir=" + filepath.Join(dir, "logs"), "--electrumindex"}, tc.args...)
			cmd := exec.Command(bin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Fatalf("stderr %q: want one line naming %q", msg, tc.want)
			}
			for _, d := range []string{"data", "logs"} {
				if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
					t.Fatalf("%s was created before the option was refused", d)
				}
			}
		})
	}
}

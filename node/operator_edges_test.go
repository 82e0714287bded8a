package node

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBinaryToExit runs the built binary with args and returns its exit
// status and stderr; a binary still running after testWait is killed and
// the test fails (a hang guard).
func runBinaryToExit(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, stderr.String()
		case errors.As(err, &ee):
			return ee.ExitCode(), stderr.String()
		default:
			t.Fatal(err)
		}
	case <-time.After(testWait):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the binary did not exit (stderr %q)", stderr.String())
	}
	return 0, ""
}

// docs/OPERATIONS.md, "Start-up": "two listeners whose addresses overlap,
// such as `:50001` and `127.0.0.1:50001`, are refused". Two addresses of one
// option (--electrumlisten given twice, once per line of the config file)
// that cannot both bind are refused at start as well; a node that accepts
// them must start with both. Otherwise the node loads the chain and builds
// the index (hours on an existing datadir) and then fails to open the
// second listener.
func TestOverlappingAddressesOfOneListenerOptionRefusedAtStart(t *testing.T) {
	for _, option := range []string{"electrumlisten", "esploralisten"} {
		t.Run(option, func(t *testing.T) {
			_, port, _ := net.SplitHostPort(freePort(t))
			dir := t.TempDir()
			cfg, _, err := LoadConfig([]string{"--regtest", "-C", os.DevNull,
				"--datadir=" + filepath.Join(dir, "data"), "--logdir=" + filepath.Join(dir, "logs"),
				"--nolisten", "--electrumindex", "--utxocachemaxsize=1", "--electrumlisten=" + freePort(t),
				"--" + option + "=:" + port, "--" + option + "=127.0.0.1:" + port})
			if err != nil {
				if !strings.Contains(err.Error(), option) {
					t.Fatalf("refused without naming --%s: %v", option, err)
				}
				return // refused up front, as the documentation says
			}
			n, err := New(cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			t.Cleanup(func() { _ = n.Stop() })
			if err := n.Start(); err != nil {
				t.Fatalf("--%s=:%s and --%s=127.0.0.1:%s passed the start-up checks, but once the chain and "+
					"the index are loaded the node fails to start: %v", option, port, option, port, err)
			}
		})
	}
}

// An IPv6 address in brackets without a port ("[::1]", "[::]") is a host
// of the listener options: it gets the option's default port, as "::1" and
// "127.0.0.1" do, instead of being refused as "[[::1]]:50001".
func TestBracketedIPv6ListenAddressTakesDefaultPort(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := LoadConfig([]string{"--regtest", "-C", os.DevNull,
		"--datadir=" + filepath.Join(dir, "data"), "--logdir=" + filepath.Join(dir, "logs"),
		"--nolisten", "--electrumindex", "--electrumlisten=[::1]", "--esploralisten=[::1]"})
	if err != nil {
		t.Fatalf("--electrumlisten=[::1] --esploralisten=[::1] refused: %v", err)
	}
	if got := strings.Join(cfg.ElectrumListeners, ","); got != "[::1]:50001" {
		t.Errorf("--electrumlisten=[::1] is %s, want [::1]:50001", got)
	}
	if got := strings.Join(cfg.EsploraListeners, ","); got != "[::1]:3000" {
		t.Errorf("--esploralisten=[::1] is %s, want [::1]:3000", got)
	}
}

// docs/OPERATIONS.md, "Start-up": "Every option is checked before anything
// is opened ... The TLS pairs in use ... must load". A certificate that
// expired (a renewal that failed) is one the Electrum TLS listener refuses
// to load: the node refuses it at start, naming the option, before it
// creates the datadir, loads the chain and builds the index.
func TestBinaryRefusesExpiredElectrumCertificateBeforeOpening(t *testing.T) {
	dir := t.TempDir()
	cert, key := certPairPEM(t, "expired", time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	certFile, keyFile := filepath.Join(dir, "electrum.cert"), filepath.Join(dir, "electrum.key")
	if err := os.WriteFile(certFile, cert, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr := runBinaryToExit(t, "--regtest", "-C", os.DevNull, "--datadir="+filepath.Join(dir, "data"),
		"--logdir="+filepath.Join(dir, "logs"), "--nolisten", "--electrumindex", "--utxocachemaxsize=1",
		"--electrumtlslisten="+freePort(t), "--electrumcert="+certFile, "--electrumkey="+keyFile)
	msg := strings.TrimSpace(stderr)
	if code != 1 {
		t.Fatalf("exit status %d, want 1 (stderr %q)", code, msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Errorf("the datadir was created and the chain loaded before the expired certificate was refused (stderr %q)", msg)
	}
	if !strings.Contains(msg, "--electrumcert") {
		t.Errorf("stderr %q does not name --electrumcert", msg)
	}
}

// docs/OPERATIONS.md, "Start-up": every option is checked before anything
// is opened, and a TLS pair whose files are both missing is created. A pair
// that cannot be created where the options say (a directory that cannot be
// made: here a path below a regular file, as a read-only /etc under
// systemd's ProtectSystem=strict) is refused at start, naming the option,
// not once the chain is loaded and the index built.
func TestBinaryRefusesUncreatableTLSPairBeforeOpening(t *testing.T) {
	for _, tc := range []struct{ certOpt, keyOpt string }{{"electrumcert", "electrumkey"}, {"rpccert", "rpckey"}} {
		t.Run(tc.certOpt, func(t *testing.T) {
			dir := t.TempDir()
			blocker := filepath.Join(dir, "not-a-dir")
			if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			// Both pairs live in the test's directory; the one under test
			// below the regular file.
			files := map[string]string{
				"electrumcert": filepath.Join(dir, "electrum.cert"), "electrumkey": filepath.Join(dir, "electrum.key"),
				"rpccert": filepath.Join(dir, "rpc.cert"), "rpckey": filepath.Join(dir, "rpc.key"),
			}
			files[tc.certOpt] = filepath.Join(blocker, "tls.cert")
			files[tc.keyOpt] = filepath.Join(blocker, "tls.key")
			args := []string{"--regtest", "-C", os.DevNull, "--datadir=" + filepath.Join(dir, "data"),
				"--logdir=" + filepath.Join(dir, "logs"), "--nolisten", "--electrumindex", "--utxocachemaxsize=1",
				"--electrumtlslisten=" + freePort(t), "--rpcuser=u", "--rpcpass=p", "--rpclisten=" + freePort(t)}
			for opt, f := range files {
				args = append(args, "--"+opt+"="+f)
			}
			code, stderr := runBinaryToExit(t, args...)
			msg := strings.TrimSpace(stderr)
			if code != 1 {
				t.Fatalf("exit status %d, want 1 (stderr %q)", code, msg)
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
				t.Errorf("the datadir was created and the chain loaded before the TLS pair was found uncreatable (stderr %q)", msg)
			}
			if !strings.Contains(msg, "--"+tc.certOpt) {
				t.Errorf("stderr %q does not name --%s", msg, tc.certOpt)
			}
		})
	}
}

// docs/BTCD.md §3: "Pruning deletes the journals of pruned blocks; the node
// refuses --prune with --electrumindex, --txindex or --addrindex", and, as
// btcd refuses --prune on a database whose transaction or address index
// was initialized ("drop it with --droptxindex first"), a datadir that
// holds an Electrum index refuses --prune until --dropelectrumindex: an
// operator who turns the index off for a while and prunes meanwhile could
// never turn it on again (the blocks to catch it up from are gone).
func TestPruneRefusedWhileElectrumIndexExists(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir, true))
	generate(t, n, 3)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	off := testConfig(t, dir, false)
	off.Prune = pruneMinSize
	pruned, err := New(off)
	if err == nil {
		_ = pruned.Stop()
		t.Fatalf("--prune=%d started on a datadir holding an Electrum index (%s)", pruneMinSize,
			ElectrumIndexPath(off.NetDataDir()))
	}
	if !strings.Contains(err.Error(), "dropelectrumindex") {
		t.Fatalf("refused without pointing at --dropelectrumindex: %v", err)
	}
}

// docs/OPERATIONS.md: "Stop btcd first: one process at a time." A second
// process started on a datadir another one holds stops with a message that
// says so and names the database, rather than only the lock's errno.
func TestSecondProcessOnDatadirSaysItIsInUse(t *testing.T) {
	dir := t.TempDir()
	first := testConfig(t, dir, true)
	startNode(t, first)

	second := testConfig(t, dir, true)
	n, err := New(second)
	if err == nil {
		_ = n.Stop()
		t.Fatal("a second node opened the datadir the first one holds")
	}
	msg := err.Error()
	if !strings.Contains(msg, BlockDBPath(second.NetDataDir())) && !strings.Contains(msg, second.NetDataDir()) {
		t.Errorf("the error does not name the datadir in use: %q", msg)
	}
	if !strings.Contains(msg, "in use") && !strings.Contains(msg, "another process") {
		t.Errorf("the error does not say another process holds the datadir: %q", msg)
	}
}

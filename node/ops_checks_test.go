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
)

// docs/OPERATIONS.md, "Start-up": "A value the config file cannot hold (a
// syntax or type error) is reported with the file, line and option, without
// the value, which may be a password".
func TestConfigFileErrorOmitsValue(t *testing.T) {
	const secret = "Sup3rS3cret"
	for name, line := range map[string]string{
		"no equals sign":  "rpcpass " + secret,
		"a colon":         "rpcpass: " + secret,
		"btcd type error": "blockmaxsize=" + secret,
		"node type error": "electrumcache=" + secret,
	} {
		t.Run(name, func(t *testing.T) {
			file := writeConfigFile(t, "rpcuser=alice\n"+line+"\n")
			_, _, err := LoadConfig([]string{file, "--regtest"})
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error repeats the value: %v", err)
			}
			option, _, _ := strings.Cut(strings.Trim(line, " "), "=")
			option, _, _ = strings.Cut(option, ":")
			option, _, _ = strings.Cut(option, " ")
			if !strings.Contains(err.Error(), "line 2, option "+option+":") {
				t.Fatalf("the error does not name line 2 and option %s: %v", option, err)
			}
		})
	}
}

// docs/OPERATIONS.md, "Start-up": "Every option is checked before anything
// is opened: a bad flag or config-file value stops the node with one line on
// stderr naming the option and exit status 1, before the data or log
// directory is created." That holds for a listener address no listener
// could bind (a port alone taken for a host, a malformed IPv4 address), for
// one address given to two listeners and for an address another program
// holds: otherwise they fail once the index has caught up, hours later on
// an existing datadir.
func TestBinaryRefusesUnusableListenersBeforeOpening(t *testing.T) {
	bin := buildBinary(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	busy := held.Addr().String()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"electrum bare port", []string{"--electrumlisten=51041"}, "--electrumlisten"},
		{"electrum bad IPv4", []string{"--electrumlisten=1.2.3.4.5:51041"}, "--electrumlisten"},
		{"esplora bare port", []string{"--esploralisten=51042"}, "--esploralisten"},
		{"metrics bad IPv4", []string{"--metricslisten=1.2.3.4.5:51043"}, "--metricslisten"},
		{"rpc bad IPv4", []string{"--rpcuser=u", "--rpcpass=p", "--rpclisten=1.2.3.4.5:51044"}, "--rpclisten"},
		{"one address for two transports", []string{"--electrumlisten=127.0.0.1:51045",
			"--electrumwslisten=127.0.0.1:51045"}, "--electrumwslisten"},
		{"electrum address in use", []string{"--electrumlisten=" + busy}, "--electrumlisten=" + busy},
		{"electrum TLS address in use", []string{"--electrumtlslisten=" + busy}, "--electrumtlslisten=" + busy},
		{"esplora address in use", []string{"--electrumlisten=" + freePort(t), "--esploralisten=" + busy},
			"--esploralisten=" + busy},
		{"metrics address in use", []string{"--electrumlisten=" + freePort(t), "--metricslisten=" + busy},
			"--metricslisten=" + busy},
		{"rpc address in use", []string{"--electrumlisten=" + freePort(t), "--rpcuser=u", "--rpcpass=p",
			"--rpclisten=" + busy}, "--rpclisten=" + busy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "btcd-electrum.conf")
			if err := os.WriteFile(conf, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--regtest", "-C", conf, "--datadir=" + filepath.Join(dir, "data"),
				"--logdir=" + filepath.Join(dir, "logs"), "--nolisten", "--electrumindex",
				"--rpccert=" + filepath.Join(dir, "rpc.cert"), "--rpckey=" + filepath.Join(dir, "rpc.key"),
				"--electrumcert=" + filepath.Join(dir, "e.cert"), "--electrumkey=" + filepath.Join(dir, "e.key")}, tc.args...)
			cmd := exec.Command(bin, args...)
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
					t.Errorf("%s was created before the option was refused (stderr %q)", d, msg)
				}
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("stderr %q does not name %s", msg, tc.want)
			}
		})
	}
}

// The TLS pairs are checked at start, not when the listeners open after the
// index has caught up (hours on an existing datadir): a certificate whose
// key file is missing (a typo in --electrumkey or --rpckey) stops the node,
// naming the options, before anything is opened.
func TestBinaryChecksTLSPairBeforeOpening(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct{ certOpt, keyOpt string }{{"electrumcert", "electrumkey"}, {"rpccert", "rpckey"}} {
		t.Run(tc.certOpt, func(t *testing.T) {
			dir := t.TempDir()
			cert := filepath.Join(dir, "tls.cert")
			if err := os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--regtest", "-C", os.DevNull, "--datadir="+filepath.Join(dir, "data"),
				"--logdir="+filepath.Join(dir, "logs"), "--nolisten", "--electrumindex",
				"--electrumtlslisten="+freePort(t), "--rpcuser=u", "--rpcpass=p", "--rpclisten="+freePort(t),
				"--"+tc.certOpt+"="+cert, "--"+tc.keyOpt+"="+filepath.Join(dir, "tls.kye"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
				t.Errorf("the block database was created before the TLS pair was refused (stderr %q)", msg)
			}
			if !strings.Contains(msg, "--"+tc.certOpt) || !strings.Contains(msg, "--"+tc.keyOpt) {
				t.Errorf("stderr %q does not name --%s and --%s", msg, tc.certOpt, tc.keyOpt)
			}
		})
	}
}

// docs/OPERATIONS.md, "Start-up": "Once running, the node logs one block
// that says where everything is", the Esplora API included.
func TestStartupSummaryListsEsplora(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.EsploraListeners = []string{"127.0.0.1:0"}
	n := startNode(t, cfg)
	addrs := n.EsploraAddrs()
	if len(addrs) != 1 {
		t.Fatalf("Esplora listeners: %v", addrs)
	}
	summary := n.startupSummary()
	if !strings.Contains(summary, addrs[0].String()) {
		t.Fatalf("the start-up block does not show the Esplora listener %s:\n%s", addrs[0], summary)
	}
}

// The cost limits are checked at start: a negative or NaN soft limit
// throttles every session from its first request, a soft limit above the
// hard one never slows a session before disconnecting it.
func TestCostLimitsValidated(t *testing.T) {
	for _, args := range [][]string{
		{"--electrumcostsoftlimit=-5"},
		{"--electrumcostsoftlimit=NaN"},
		{"--electrumcosthardlimit=NaN"},
		{"--electrumcostsoftlimit=20000", "--electrumcosthardlimit=100"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			a := append([]string{writeConfigFile(t, ""), "--regtest", "--electrumindex"}, args...)
			if _, _, err := LoadConfig(a); err == nil {
				t.Fatalf("%v accepted", args)
			}
		})
	}
}

// The RPC server's size limits are checked at start: zero or a negative
// value is refused with the option named, not silently taken for the
// default.
func TestRPCLimitsValidated(t *testing.T) {
	for _, arg := range []string{"--rpcmaxrequestbytes=-1", "--rpcmaxrequestbytes=0", "--rpcmaxbatch=-5", "--rpcmaxbatch=0"} {
		a := []string{writeConfigFile(t, ""), "--regtest", "--rpcuser=u", "--rpcpass=p", arg}
		_, _, err := LoadConfig(a)
		if err == nil || !strings.Contains(err.Error(), strings.SplitN(arg, "=", 2)[0]) {
			t.Errorf("%s: %v, want refused with the option named", arg, err)
		}
	}
}

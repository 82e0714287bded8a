//go:build linux && amd64

package node

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/btcsuite/btcd/rpcclient"
	"golang.org/x/sys/unix"
)

// seccompExecEnv, when set in the environment of this test binary, holds a
// JSON object {families, argv}: the process installs a seccomp filter that
// refuses socket(2) for every address family but those named (as systemd's
// RestrictAddressFamilies= does: EAFNOSUPPORT) and executes argv under it.
const seccompExecEnv = "BTCD_ELECTRUM_TEST_SECCOMP_EXEC"

type seccompSpec struct {
	Families []uint32
	Argv     []string
}

func init() {
	raw := os.Getenv(seccompExecEnv)
	if raw == "" {
		return
	}
	var spec seccompSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "seccomp spec:", err)
		os.Exit(3)
	}
	runtime.LockOSThread()
	const auditArchX8664 = 0xc000003e
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	deny := uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EAFNOSUPPORT)
	f := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: auditArchX8664},
		{Code: unix.BPF_RET | unix.BPF_K, K: allow},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // syscall number
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: unix.SYS_SOCKET},
		{Code: unix.BPF_RET | unix.BPF_K, K: allow},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 16}, // socket's family
	}
	n := len(spec.Families)
	for i, fam := range spec.Families {
		// Jump to the final ALLOW: over the remaining comparisons and DENY.
		f = append(f, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: uint8(n - i), K: fam})
	}
	f = append(f, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: deny},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: allow})
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "SECCOMP-UNAVAILABLE no_new_privs:", err)
		os.Exit(3)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		fmt.Fprintln(os.Stderr, "SECCOMP-UNAVAILABLE seccomp:", e)
		os.Exit(3)
	}
	err := unix.Exec(spec.Argv[0], spec.Argv, os.Environ())
	fmt.Fprintln(os.Stderr, "exec:", err)
	os.Exit(3)
}

// unitDirective returns the values of a directive of the systemd unit
// (continuation lines joined).
func unitDirective(t *testing.T, unit, name string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	inDirective := false
	sc := bufio.NewScanner(strings.NewReader(unit))
	for sc.Scan() {
		line := sc.Text()
		if !inDirective {
			if !strings.HasPrefix(line, name+"=") {
				continue
			}
			line = strings.TrimPrefix(line, name+"=")
			inDirective = true
			cur.Reset()
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		inDirective = false
	}
	if len(out) == 0 {
		t.Fatalf("no %s= in the unit", name)
	}
	return out
}

// TestSystemdUnitFirstStartUnderItsAddressFamilies runs the built binary as
// contrib/init/btcd-electrum.service runs it on its first start: its
// ExecStart flags (paths under a temporary directory instead of
// /var/lib/btcd-electrum and /etc/btcd-electrum), a config file edited as
// the unit's install notes say (electrumindex=1, rpcuser/rpcpass), no
// rpc.cert/rpc.key yet, and the unit's RestrictAddressFamilies= applied
// (socket(2) of any other family fails with EAFNOSUPPORT, as systemd's
// seccomp filter makes it fail). The node must start and answer RPC over
// TLS with the certificate it created.
//
// The unit allows AF_NETLINK, over which Go lists the machine's interface
// addresses (for the RPC certificate, and for the addresses a P2P listener
// bound to 0.0.0.0 or :: advertises). Without it, as under a unit an
// operator tightened, the node starts too: the certificate is made for
// localhost, the host name and the RPC listen addresses.
func TestSystemdUnitFirstStartUnderItsAddressFamilies(t *testing.T) {
	bin := buildBinary(t)
	unitBytes, err := os.ReadFile("../contrib/init/btcd-electrum.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(unitBytes)

	familyNumbers := map[string]uint32{"AF_UNIX": unix.AF_UNIX, "AF_LOCAL": unix.AF_UNIX, "AF_INET": unix.AF_INET,
		"AF_INET6": unix.AF_INET6, "AF_NETLINK": unix.AF_NETLINK, "AF_PACKET": unix.AF_PACKET}
	var families, withoutNetlink []uint32
	for _, v := range unitDirective(t, unit, "RestrictAddressFamilies") {
		for _, name := range strings.Fields(v) {
			n, ok := familyNumbers[name]
			if !ok {
				t.Fatalf("address family %s of the unit not known to the test", name)
			}
			families = append(families, n)
			if n != unix.AF_NETLINK {
				withoutNetlink = append(withoutNetlink, n)
			}
		}
	}
	if len(withoutNetlink) == len(families) {
		t.Errorf("the unit's RestrictAddressFamilies= %v forbids AF_NETLINK: the node cannot list its interfaces' "+
			"addresses to advertise", unitDirective(t, unit, "RestrictAddressFamilies"))
	}
	t.Run("unit", func(t *testing.T) { firstStartUnder(t, bin, unit, families) })
	t.Run("without AF_NETLINK", func(t *testing.T) { firstStartUnder(t, bin, unit, withoutNetlink) })
}

// firstStartUnder starts the binary as the unit does on its first start,
// with socket(2) allowed for the given address families only, and waits
// until it answers RPC.
func firstStartUnder(t *testing.T, bin, unit string, families []uint32) {
	dir := t.TempDir()
	state := filepath.Join(dir, "var-lib-btcd-electrum")
	etc := filepath.Join(dir, "etc-btcd-electrum")
	for _, d := range []string{state, etc} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	// The sample, as the install notes say: "edit it: electrumindex=1,
	// listeners, rpcuser/rpcpass".
	conf := filepath.Join(etc, "btcd-electrum.conf")
	sample, err := os.ReadFile(sampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	edited := string(sample) + "\nelectrumindex=1\nrpcuser=operator\nrpcpass=secret\n"
	if err := os.WriteFile(conf, []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}

	exec0 := unitDirective(t, unit, "ExecStart")[0]
	exec0 = strings.ReplaceAll(exec0, "/etc/btcd-electrum/btcd-electrum.conf", conf)
	exec0 = strings.ReplaceAll(exec0, "/var/lib/btcd-electrum", state)
	fields := strings.Fields(exec0)
	if len(fields) == 0 || filepath.Base(fields[0]) != "btcd-electrum" {
		t.Fatalf("unexpected ExecStart %q", exec0)
	}
	rpcAddr := freePort(t)
	argv := append([]string{bin}, fields[1:]...)
	// Regtest on loopback ports of the test's choosing, instead of mainnet.
	argv = append(argv, "--regtest", "--listen="+freePort(t), "--rpclisten="+rpcAddr,
		"--electrumlisten="+freePort(t))
	spec, _ := json.Marshal(seccompSpec{Families: families, Argv: argv})

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), seccompExecEnv+"="+string(spec))
	outFile, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	output := func() string {
		b, _ := os.ReadFile(outFile.Name())
		return string(b)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(unix.SIGINT)
		select {
		case <-exited:
		case <-time.After(testWait):
			_ = cmd.Process.Kill()
		}
	})

	certFile := filepath.Join(state, "rpc.cert")
	for deadline := time.Now().Add(testWait); time.Now().Before(deadline); {
		select {
		case err := <-exited:
			exited <- err
			if out := output(); strings.Contains(out, "SECCOMP-UNAVAILABLE") {
				t.Skipf("seccomp filters are not available here: %s", out)
			}
			t.Fatalf("with socket(2) allowed for address families %v only, the node's first start exits (%v):\n%s",
				families, err, lastBytes(output(), 1500))
		case <-time.After(50 * time.Millisecond):
		}
		pem, err := os.ReadFile(certFile)
		if err != nil {
			continue
		}
		c, err := rpcclient.New(&rpcclient.ConnConfig{Host: rpcAddr, User: "operator", Pass: "secret",
			HTTPPostMode: true, Certificates: pem}, nil)
		if err != nil {
			continue
		}
		_, err = c.GetBlockCount()
		c.Shutdown()
		if err == nil {
			return // started and serving RPC over TLS
		}
	}
	t.Fatalf("the node did not answer RPC:\n%s", lastBytes(output(), 1500))
}

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/rpcclient"
)

// BtcdModule is the module of the real btcd the harness builds.
const BtcdModule = "github.com/btcsuite/btcd"

var (
	btcdBinOnce sync.Once
	btcdBinPath string
	btcdBinErr  error
)

// BtcdBinary builds btcd (the version in the current module's build list,
// v0.26.2 for this project) once per process and returns the executable's
// path. It builds inside btcd's own module directory, with btcd's go.sum,
// so it needs no go.sum entries for btcd's main package in the calling
// module. btcd's main package imports one module the node does not
// (github.com/jrick/logrotate): a module cache filled by `go mod download`
// in the calling module lacks it, and the first build fetches it, which
// offline needs `go mod download github.com/jrick/logrotate` in btcd's
// module directory beforehand.
func BtcdBinary() (string, error) {
	btcdBinOnce.Do(func() {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", BtcdModule).Output()
		if err != nil {
			btcdBinErr = fmt.Errorf("locating %s: %v", BtcdModule, err)
			return
		}
		modDir := strings.TrimSpace(string(out))
		if modDir == "" {
			btcdBinErr = fmt.Errorf("%s is not in the module cache (go mod download %s)", BtcdModule, BtcdModule)
			return
		}
		dir, err := os.MkdirTemp("", "btcd-integration")
		if err != nil {
			btcdBinErr = err
			return
		}
		btcdBinPath = filepath.Join(dir, "btcd")
		cmd := exec.Command("go", "build", "-o", btcdBinPath, ".")
		cmd.Dir = modDir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			btcdBinErr = fmt.Errorf("go build %s: %v\n%s", BtcdModule, err, out)
		}
	})
	return btcdBinPath, btcdBinErr
}

var listenerOnce sync.Once

// useFreePorts makes rpctest pick ports the kernel hands out instead of
// counting up from a fixed port, which collides with other test processes
// that use rpctest at the same time.
func useFreePorts() {
	listenerOnce.Do(func() {
		rpctest.ListenAddressGenerator = func() (string, string) {
			addrs, err := freeAddrs(2)
			if err != nil {
				panic(fmt.Sprintf("no free loopback port: %v", err))
			}
			return addrs[0], addrs[1]
		}
	})
}

// BtcdConfig says how StartBtcd runs a real btcd.
type BtcdConfig struct {
	// MatureOutputs, when positive, mines 100 + MatureOutputs blocks to
	// the harness's wallet during set-up, so it has that many spendable
	// coinbase outputs.
	MatureOutputs uint32

	// Exe runs this executable instead of btcd, for example NodeBinary()
	// to drive btcd-electrum through btcd's own harness.
	Exe string

	// Args are extra flags for the process.
	Args []string
}

// StartBtcd starts a real btcd on regtest through btcd's integration
// harness (rpctest): TLS RPC, a websocket client, an in-memory wallet that
// mines to itself, loopback ports. Transactions are relayed to peers
// within 50 ms (--trickleinterval). The harness is torn down (SIGINT) when
// the test ends. rpctest starts the process, with no way to have it die
// with the test process: a test killed by go test's -timeout, which runs no
// cleanup, leaves it running (StartBtcdProcess's does not). Set-up is
// bounded by StartTimeout.
func StartBtcd(t testing.TB, cfg BtcdConfig) *rpctest.Harness {
	t.Helper()
	useFreePorts()
	exe := cfg.Exe
	if exe == "" {
		var err error
		if exe, err = BtcdBinary(); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"--trickleinterval=50ms"}, cfg.Args...)
	h, err := rpctest.New(&chaincfg.RegressionNetParams, nil, args, exe)
	if err != nil {
		t.Fatalf("rpctest.New: %v", err)
	}
	// rpctest's default gives a process about 10 s to open its RPC port;
	// allow about 40 s on a loaded machine.
	h.MaxConnRetries = 40
	done := make(chan error, 1)
	go func() { done <- h.SetUp(cfg.MatureOutputs > 0, cfg.MatureOutputs) }()
	select {
	case err = <-done:
	case <-time.After(StartTimeout):
		err = fmt.Errorf("set-up took longer than %v", StartTimeout)
	}
	t.Cleanup(func() {
		if err := h.TearDown(); err != nil {
			t.Errorf("rpctest TearDown: %v", err)
		}
	})
	if err != nil {
		t.Fatalf("rpctest SetUp of %s: %v", exe, err)
	}
	return h
}

// BtcdProcess is a real btcd run directly with a datadir of the caller's
// choosing (StartBtcd's harness hides and deletes its datadir).
type BtcdProcess struct {
	// DataDir is btcd's --datadir; the block database is in
	// <DataDir>/<network>/blocks_ffldb.
	DataDir string
	// LogDir is btcd's --logdir, <DataDir>/btcd-logs; what btcd writes to
	// stdout and stderr goes to <DataDir>/btcd-output.log.
	LogDir string
	// P2PAddr and RPCAddr are the listeners; RPC is a client (HTTP POST,
	// no TLS).
	P2PAddr, RPCAddr string
	RPC              *rpcclient.Client

	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
	stopOnce sync.Once
	stopErr  error
}

// BtcdProcessConfig says how StartBtcdProcess runs btcd.
type BtcdProcessConfig struct {
	// DataDir is btcd's --datadir (required); btcd's logs and output go
	// inside it, so that processes on different datadirs keep theirs
	// apart.
	DataDir string
	// Net is regtest (nil) or simnet.
	Net *chaincfg.Params
	// MiningAddr is the --miningaddr; empty means MiningAddressOn(Net).
	MiningAddr string
	// Args are more flags, for example --txindex.
	Args []string
}

// StartBtcdProcess runs btcd with cfg.DataDir, loopback ports, RPC without
// TLS and a mining address. It is stopped (SIGINT) when the test ends if
// the test did not stop it.
//
// Stock btcd deletes its regtest database whenever it starts, so on
// regtest start it only once on a datadir whose chain should be kept;
// simnet datadirs survive.
func StartBtcdProcess(t testing.TB, cfg BtcdProcessConfig) *BtcdProcess {
	t.Helper()
	if cfg.DataDir == "" {
		// btcd would take the working directory (--datadir=.).
		t.Fatal("StartBtcdProcess: BtcdProcessConfig.DataDir is required")
	}
	exe, err := BtcdBinary()
	if err != nil {
		t.Fatal(err)
	}
	netFlag, params, err := networkFlag(cfg.Net)
	if err != nil {
		t.Fatal(err)
	}
	mining := cfg.MiningAddr
	if mining == "" {
		mining = MiningAddressOn(params).EncodeAddress()
	}
	p := &BtcdProcess{DataDir: cfg.DataDir, LogDir: filepath.Join(cfg.DataDir, "btcd-logs")}
	addrs, err := freeAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	p.P2PAddr, p.RPCAddr = addrs[0], addrs[1]
	all := append([]string{netFlag, "--datadir=" + cfg.DataDir, "--logdir=" + p.LogDir,
		"--listen=" + p.P2PAddr, "--rpclisten=" + p.RPCAddr, "--rpcuser=" + RPCUser,
		"--rpcpass=" + RPCPass, "--notls", "--miningaddr=" + mining, "--nodnsseed",
		"--trickleinterval=50ms"}, cfg.Args...)
	p.cmd = exec.Command(exe, all...)
	p.cmd.SysProcAttr = childAttrs()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// btcd says why it stops on stderr, before its log is set up.
	outPath := filepath.Join(cfg.DataDir, "btcd-output.log")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		out.Close()
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func() {
		p.exitErr = p.cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { _ = p.Stop() })

	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: p.RPCAddr, User: RPCUser, Pass: RPCPass,
		HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.RPC = c
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	WaitFor(t, ctx, "btcd's RPC server", func() bool {
		if isClosed(p.exited) {
			t.Fatalf("btcd exited during start-up (%v); the end of its output:\n%s", p.exitErr, tailOf(outPath, 20))
		}
		_, err := c.GetBlockCount()
		return err == nil
	})
	return p
}

// Stop sends SIGINT and waits for btcd to exit (killing it after
// StopTimeout); it returns btcd's exit error. Safe to call more than once.
func (p *BtcdProcess) Stop() error {
	p.stopOnce.Do(func() {
		p.RPC.Shutdown()
		if !isClosed(p.exited) {
			_ = p.cmd.Process.Signal(syscall.SIGINT)
		}
		select {
		case <-p.exited:
			p.stopErr = p.exitErr
		case <-time.After(StopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.stopErr = fmt.Errorf("btcd did not exit within %v of SIGINT", StopTimeout)
		}
	})
	return p.stopErr
}

package node

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/rpcext"

	"github.com/btcd-electrum/btcd-electrum/internal/freeport"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// buildBinary builds cmd/btcd-electrum once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "btcd-electrum-bin")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "btcd-electrum")
		out, err := exec.Command("go", "build", "-o", binaryPath, "../cmd/btcd-electrum").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// freePort returns a loopback address for the binary to listen on
// (internal/freeport says why such ports are not taken meanwhile).
func freePort(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// runBinary starts the binary on regtest in dir with RPC on rpcAddr.
func runBinary(t *testing.T, bin, dir, rpcAddr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "--regtest", "--datadir="+filepath.Join(dir, "data"),
		"--logdir="+filepath.Join(dir, "logs"), "--listen="+freePort(t),
		"--rpclisten="+rpcAddr, "--rpcuser=user", "--rpcpass=pass", "--notls",
		"--electrumindex", "--electrumlisten="+freePort(t),
		"--miningaddr="+testMiningAddr(t).EncodeAddress(), "--utxocachemaxsize=1")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

// rpcClient connects to the binary's RPC server, retrying while it starts.
func rpcClient(t *testing.T, addr string) *rpcclient.Client {
	t.Helper()
	c, err := rpcclient.New(&rpcclient.ConnConfig{Host: addr, User: "user", Pass: "pass",
		HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	waitFor(t, "the RPC server", func() bool {
		_, err := c.GetBlockCount()
		return err == nil
	})
	return c
}

// interruptAndWait sends SIGINT and returns the process's exit error.
func interruptAndWait(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(testWait):
		t.Fatal("the node did not exit after SIGINT")
		return nil
	}
}

// TestBinarySIGINTKeepsState runs the built binary, mines, stops it with
// SIGINT (exit status 0, clean shutdown logged) and starts it again on the
// same datadir: the chain and the index are still there.
func TestBinarySIGINTKeepsState(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	rpcAddr := freePort(t)
	cmd := runBinary(t, bin, dir, rpcAddr)
	c := rpcClient(t, rpcAddr)
	if _, err := c.Generate(20); err != nil {
		t.Fatalf("generate: %v", err)
	}
	best, _, err := c.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	// The index follows the chain in a writer of its own: stop once it
	// holds the tip, so the restart has nothing to catch up.
	logFile := filepath.Join(dir, "logs", "regtest", "btcd-electrum.log")
	waitIndexHeight(t, c, 20, logFile)
	if err := interruptAndWait(t, cmd); err != nil {
		t.Fatalf("exit after SIGINT: %v", err)
	}
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), "Shutdown complete") {
		t.Fatalf("no clean shutdown in the log:\n%s", logged)
	}

	rpcAddr = freePort(t)
	cmd = runBinary(t, bin, dir, rpcAddr)
	c = rpcClient(t, rpcAddr)
	again, height, err := c.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	if height != 20 || *again != *best {
		t.Fatalf("after restart the tip is %v@%d, want %v@20", again, height, best)
	}
	if err := interruptAndWait(t, cmd); err != nil {
		t.Fatalf("second exit: %v", err)
	}
	logged, _ = os.ReadFile(logFile)
	if n := strings.Count(string(logged), "Shutdown complete"); n != 2 {
		t.Fatalf("%d clean shutdowns logged, want 2", n)
	}
	// The index was built when the datadir was created; the restart found
	// it at the chain tip: it indexed, undid and rebuilt nothing.
	first := strings.Index(string(logged), "Shutdown complete")
	second := string(logged[first:])
	if !regexp.MustCompile(`Indexed block 20 |Indexed blocks to 20 |caught up to height 20 `).Match(logged[:first]) {
		t.Fatalf("the first run did not log block 20 indexed:\n%s", logged[:first])
	}
	for _, s := range []string{"Indexed block", "caught up to height", "rebuilding", "no longer in the main chain"} {
		if strings.Contains(second, s) {
			t.Fatalf("the restart logged %q:\n%s", s, second)
		}
	}
	if !strings.Contains(second, "Electrum index caught up at height 20") {
		t.Fatalf("the restart's summary does not show the index at the tip:\n%s", second)
	}
}

// waitIndexHeight waits until getelectruminfo reports the Electrum index at
// height, the chain's height; on a timeout it shows the node's log.
func waitIndexHeight(t *testing.T, c *rpcclient.Client, height int32, logFile string) {
	t.Helper()
	var info rpcext.ElectrumInfo
	for deadline := time.Now().Add(testWait); ; time.Sleep(20 * time.Millisecond) {
		raw, err := c.RawRequest(rpcext.GetElectrumInfoMethod, nil)
		if err != nil {
			t.Fatalf("getelectruminfo: %v", err)
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		if info.IndexHeight == height && info.ChainHeight == height {
			return
		}
		if time.Now().After(deadline) {
			logged, _ := os.ReadFile(logFile)
			t.Fatalf("timed out waiting for the Electrum index at height %d: %+v\n%s", height, info, logged)
		}
	}
}

// TestBinaryUnderRPCTest drives the binary with btcd's own integration
// harness (rpctest): TLS RPC with the harness's certificate, websocket
// notifyblocks and loadtxfilter, filteredblockconnected notifications for its
// wallet, generate, and a wallet transaction mined into a block; TearDown
// stops it with SIGINT.
func TestBinaryUnderRPCTest(t *testing.T) {
	bin := buildBinary(t)
	h, err := rpctest.New(&chaincfg.RegressionNetParams, nil,
		[]string{"--electrumindex", "--electrumlisten=" + freePort(t), "--utxocachemaxsize=1"}, bin)
	if err != nil {
		t.Fatal(err)
	}
	defer h.TearDown()
	if err := h.SetUp(true, 5); err != nil {
		t.Fatalf("SetUp: %v", err)
	}
	count, err := h.Client.GetBlockCount()
	if err != nil || count != 105 {
		t.Fatalf("getblockcount = %d, %v; want 105", count, err)
	}
	addr, err := h.NewAddress()
	if err != nil {
		t.Fatal(err)
	}
	pkScript, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	txid, err := h.SendOutputs([]*wire.TxOut{wire.NewTxOut(100_000_000, pkScript)}, 10)
	if err != nil {
		t.Fatalf("SendOutputs: %v", err)
	}
	hashes, err := h.Client.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	block, err := h.Client.GetBlock(hashes[0])
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tx := range block.Transactions {
		if tx.TxHash() == *txid {
			found = true
		}
	}
	if !found {
		t.Fatalf("the wallet transaction %v was not mined", txid)
	}
}

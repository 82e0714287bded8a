//go:build linux

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestHelpersBoundedOnHungNode: a node that stops answering (here frozen
// with SIGSTOP, as a deadlocked node or a stuck disk would leave it) makes
// the helpers fail within their bounds, not hang the test until go test's
// -timeout: WaitSynced within its context; Mine, the reorgs and the
// helpers that take an RPC client (ChainHistory, SpendCoinbaseAt,
// ElectrumInfo) within SyncTimeout.
func TestHelpersBoundedOnHungNode(t *testing.T) {
	old := SyncTimeout
	SyncTimeout = 2 * time.Second
	t.Cleanup(func() { SyncTimeout = old })
	n := StartNode(t, NodeConfig{Binary: true})
	pid := n.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	// kill returns once the signal is sent; the process stops as each of
	// its threads notices it.
	for deadline := time.Now().Add(30 * time.Second); !processStopped(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped 30 s after SIGSTOP", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}

	for _, c := range []struct {
		name string
		call func() error
	}{
		{"WaitSynced with a 2 s context", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return n.WaitSynced(ctx)
		}},
		{"Mine", func() error { _, err := n.Mine(1); return err }},
		{"Reorg", func() error { _, err := n.Reorg(1); return err }},
		{"ChainHistory", func() error { _, err := ChainHistory(n.RPC, MiningScript()); return err }},
		{"SpendCoinbaseAt", func() error { _, err := SpendCoinbaseAt(n.RPC, 1, MiningScript(), 1000); return err }},
		{"ElectrumInfo", func() error { _, err := ElectrumInfo(n.RPC); return err }},
	} {
		done := make(chan error, 1)
		go func() { done <- c.call() }()
		// Far past the 2 s bound: a call still blocked then has none.
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s succeeded against a frozen node", c.name)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still blocked 30 s after it was called on a frozen node", c.name)
		}
	}
}

// TestArgsMiningAddrRefused: a --miningaddr in Args would sit beside the
// harness's own, and the node would pay each block to one of them at
// random; NodeConfig.MiningAddr is the way.
func TestArgsMiningAddrRefused(t *testing.T) {
	n, err := Start(NodeConfig{Args: []string{"--miningaddr=" + MiningAddress().EncodeAddress()}})
	if err == nil {
		n.Stop()
		t.Fatal("a node started with --miningaddr in Args")
	}
}

// processStopped reports whether every thread of process pid is stopped
// (state T in /proc).
func processStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}

package node

import (
	"runtime"
	"strings"
	"testing"
)

// btcdManagersRunning reports btcd's managers' goroutines that are running
// (the node package's tests run one at a time).
func btcdManagersRunning() []string {
	buf := make([]byte, 1<<22)
	stacks := string(buf[:runtime.Stack(buf, true)])
	var running []string
	for _, f := range []string{"connmgr.(*ConnManager).connHandler", "netsync.(*SyncManager).blockHandler",
		"addrmgr.(*AddrManager).addressHandler"} {
		if strings.Contains(stacks, f) {
			running = append(running, f)
		}
	}
	return running
}

// A node stopped before it started (a signal came while an embedder was
// setting it up) refuses Start, before starting anything: btcd's managers
// started then were never stopped, and the connection manager spun on its
// closed listener for the life of the process.
func TestStartAfterStopWithoutStart(t *testing.T) {
	n, err := New(testConfig(t, t.TempDir(), true))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err == nil {
		t.Error("Start after Stop succeeded")
	}
	if running := btcdManagersRunning(); len(running) > 0 {
		t.Errorf("Start after Stop left btcd's managers running: %v", running)
	}
}

// Start on a stopped node is refused, as the servers refuse Start after
// Shutdown: it returned nil though the node serves nothing.
func TestStartAfterStop(t *testing.T) {
	n, err := New(testConfig(t, t.TempDir(), true))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err == nil {
		t.Error("Start after Stop returned nil: the node is stopped and serves nothing")
	}
	if err := n.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

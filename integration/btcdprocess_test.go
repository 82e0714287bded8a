package integration

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
)

// fatalTB is a testing.TB whose Fatal and Fatalf record the failure and
// end the calling goroutine (as testing does), so a test can check that a
// harness function fails its test.
type fatalTB struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) { f.fail(fmt.Sprint(args...)) }

func (f *fatalTB) Fatalf(format string, args ...any) { f.fail(fmt.Sprintf(format, args...)) }

func (f *fatalTB) fail(msg string) {
	f.mu.Lock()
	f.failed = msg
	f.mu.Unlock()
	runtime.Goexit()
}

// runTB runs fn with a fatalTB around t and returns the failure it
// recorded ("" for none).
func runTB(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.failed
}

// TestBtcdProcessRequiresDataDir: StartBtcdProcess without a DataDir fails
// the test rather than run btcd on --datadir= (btcd's "."), which would
// write its chain, logs and output into the working directory (the
// package's source directory under go test).
func TestBtcdProcessRequiresDataDir(t *testing.T) {
	if _, err := BtcdBinary(); err != nil { // built from the module, before leaving it
		t.Fatal(err)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	failed := runTB(t, func(tb testing.TB) {
		p := StartBtcdProcess(tb, BtcdProcessConfig{})
		_ = p.Stop()
	})
	if failed == "" {
		entries, _ := os.ReadDir(wd)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("StartBtcdProcess with no DataDir started btcd; it wrote %v into the working directory", names)
	}
}

// TestBtcdProcessesKeepLogsApart: two btcd processes on datadirs of their
// own (each t.TempDir(), the usual way, which share a parent) log to
// directories of their own, derived from their datadirs.
func TestBtcdProcessesKeepLogsApart(t *testing.T) {
	a := StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir()})
	b := StartBtcdProcess(t, BtcdProcessConfig{DataDir: t.TempDir()})
	if a.LogDir == b.LogDir {
		t.Fatalf("btcd processes on datadirs %s and %s both log to %s", a.DataDir, b.DataDir, a.LogDir)
	}
}

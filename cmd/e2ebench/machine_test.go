package main

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/hostile"
)

// TestMain lets the test binary play the benchmark's helper processes.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "hostile-spin":
			runHostileSpin()
			os.Exit(0)
		case "hostile-echo":
			if err := runHostileEcho(); err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// TestHelpers runs the echo and the spinner as the hostile benchmark does:
// the echo answers the floor probe, and both end on their own when their
// standard input closes (a spinner that had to be killed exits with -1).
func TestHelpers(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	echo, err := startHelper(self, "hostile-echo", false, true)
	if err != nil {
		t.Fatal(err)
	}
	spin, err := startHelper(self, "hostile-spin", false, false)
	if err != nil {
		echo.stop()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	r := hostile.Floor(ctx, echo.line, 20*time.Millisecond)
	cancel()
	if r.Requests < 5 || r.Errors != 0 || r.Wrong != 0 {
		t.Errorf("floor probe of the echo helper at %s: %+v", echo.line, r)
	}
	for _, h := range []*helper{spin, echo} {
		start := time.Now()
		h.stop()
		if code := h.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%v exited with %d after %v, want 0 once its standard input closed", h.cmd.Args, code, time.Since(start))
		}
	}
}

// TestMachineCounters reads the machine's counters as a window does: the
// kernel's threads are told from processes, and a thread kept waiting for
// a CPU shows in its process's wait.
func TestMachineCounters(t *testing.T) {
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if procIsKernelThread(string(self)) {
		t.Fatalf("this test's process counted as a kernel thread: %s", self)
	}
	if kthreadd, err := os.ReadFile("/proc/2/stat"); err == nil && !procIsKernelThread(string(kthreadd)) {
		t.Fatalf("kthreadd not counted as a kernel thread: %s", kthreadd)
	}

	// More busy goroutines than CPUs, each on a thread of its own: some
	// of them wait for a CPU all the time.
	a := snapMachine(os.Getpid())
	stop := make(chan struct{})
	n := runtime.NumCPU() + 2
	prev := runtime.GOMAXPROCS(n)
	defer runtime.GOMAXPROCS(prev)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	// Read while the threads are alive: a goroutine that ends locked to
	// its thread ends the thread, and the wait counted on it goes too.
	u := a.to(snapMachine(os.Getpid()))
	close(stop)
	wg.Wait()
	if u.NodeWait <= 0 || u.WalletWait <= 0 {
		t.Fatalf("%d busy threads on %d CPUs did not wait for a CPU: %+v", n, runtime.NumCPU(), u)
	}
	if u.KernelCPU < u.DamonCPU-1e-9 || u.DamonCPU < 0 {
		t.Fatalf("kernel threads' CPU %v under kdamond's %v", u.KernelCPU, u.DamonCPU)
	}
	if s := damonState(); s == "" {
		t.Fatal("no DAMON state, not even none")
	}
}

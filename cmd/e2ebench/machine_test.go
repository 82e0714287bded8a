package main

import (
	"context"
	"os"
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

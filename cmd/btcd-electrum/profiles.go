package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"

	"github.com/btcd-electrum/btcd-electrum/node"
)

// stops are run by stopProfiles, last started first.
var stops []func()

// startProfiles starts btcd's --memprofile (a heap profile written when the
// node exits, after a garbage collection) and --traceprofile (an execution
// trace of the whole run).
func startProfiles(cfg *node.Config) error {
	if cfg.MemoryProfile != "" {
		f, err := os.Create(cfg.MemoryProfile)
		if err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		stops = append(stops, func() {
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				fmt.Fprintln(os.Stderr, "--memprofile:", err)
			}
			_ = f.Close()
		})
	}
	if cfg.TraceProfile != "" {
		f, err := os.Create(cfg.TraceProfile)
		if err != nil {
			stopProfiles()
			return fmt.Errorf("--traceprofile: %w", err)
		}
		if err := trace.Start(f); err != nil {
			_ = f.Close()
			stopProfiles()
			return fmt.Errorf("--traceprofile: %w", err)
		}
		stops = append(stops, func() {
			trace.Stop()
			_ = f.Close()
		})
	}
	return nil
}

// stopProfiles writes and closes the profiles startProfiles started.
func stopProfiles() {
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	stops = nil
}

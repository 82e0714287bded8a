package indexers

import (
	"math"
	"runtime/debug"
	"testing"
)

// A large catch-up's memory limit is lifted when it ends, but a limit set
// meanwhile (the node's serving limit) stays.
func TestCatchUpMemoryLimitKeepsALaterOne(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is already set (GOMEMLIMIT)")
	}
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })

	lift := limitMemory(64)
	own := debug.SetMemoryLimit(-1)
	if own == math.MaxInt64 {
		t.Fatal("no limit during the catch-up")
	}
	if again := limitMemory(64); debug.SetMemoryLimit(-1) != own {
		t.Fatal("a second catch-up replaced the limit in force")
	} else {
		again()
	}
	if debug.SetMemoryLimit(-1) != own {
		t.Fatal("the second catch-up lifted the first one's limit")
	}
	lift()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("limit %d left after the catch-up", got)
	}

	lift = limitMemory(64)
	const serving = 8 << 30
	debug.SetMemoryLimit(serving)
	lift()
	if got := debug.SetMemoryLimit(-1); got != serving {
		t.Fatalf("the catch-up's end left limit %d, not the one set meanwhile (%d)", got, serving)
	}
}

// GOMEMLIMIT=off is the operator's choice of no limit: a catch-up sets none.
func TestCatchUpMemoryLimitKeepsGOMEMLIMITOff(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is already set (GOMEMLIMIT)")
	}
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	t.Setenv("GOMEMLIMIT", "off")
	lift := limitMemory(64)
	defer lift()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("GOMEMLIMIT=off: the catch-up set a limit (%d)", got)
	}
}

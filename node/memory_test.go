package node

import (
	"math"
	"runtime/debug"
	"testing"
)

// The serving limit is what the runtime holds plus the budget, set only when
// no limit is set yet, and never for a budget of zero.
func TestSetServeMemoryLimit(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is already set (GOMEMLIMIT)")
	}
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	if got := SetServeMemoryLimit(0); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("a zero budget set a limit (%d)", got)
	}
	limit := SetServeMemoryLimit(64)
	if limit <= 64<<20 || debug.SetMemoryLimit(-1) != limit {
		t.Fatalf("limit %d, runtime has %d", limit, debug.SetMemoryLimit(-1))
	}
	if again := SetServeMemoryLimit(1024); again != 0 || debug.SetMemoryLimit(-1) != limit {
		t.Fatalf("a second call replaced the limit: %d", again)
	}
}

// The largest --electrumservemem sets a limit that large, not one its
// conversion to bytes overflowed to.
func TestServeMemoryLimitAtMaximum(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is already set (GOMEMLIMIT)")
	}
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	if limit := SetServeMemoryLimit(maxElectrumMiB); limit < maxElectrumMiB<<20 {
		t.Errorf("--electrumservemem=%d set a soft memory limit of %d MiB", maxElectrumMiB, limit>>20)
	}
}

// GOMEMLIMIT=off is the operator's choice of no limit: the node sets none.
func TestServeMemoryLimitKeepsGOMEMLIMITOff(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is already set (GOMEMLIMIT)")
	}
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	t.Setenv("GOMEMLIMIT", "off")
	if got := SetServeMemoryLimit(64); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("GOMEMLIMIT=off: the node set a limit (%d)", got)
	}
}

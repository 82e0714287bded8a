package node

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// DefaultServeMemory is the memory, in MiB, the node may take on top of what
// it holds once started, as the Go garbage collector's soft limit
// (--electrumservemem). Without a limit the collector lets the heap grow to
// twice what is live; a node holding btcd's UTXO cache, ffldb's write cache
// and the index's read cache then grows by about a gigabyte under a few
// dozen busy wallet sessions, and keeps it.
const DefaultServeMemory = 512

// SetServeMemoryLimit sets the process's soft memory limit to the memory the
// Go runtime holds now plus mib MiB, unless a limit is already set (by
// GOMEMLIMIT, or by a node started earlier in the same process) or mib is
// not positive. It returns the limit set, or 0. The binary calls it once the
// node is made and before it starts: the index has caught up, what the node
// holds is its working set, and no catch-up's own limit can be in force.
func SetServeMemoryLimit(mib int) int64 {
	// GOMEMLIMIT=off leaves the runtime's limit at its maximum: the
	// environment is read, not only the limit.
	if mib <= 0 || os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return 0
	}
	// What is free goes back first, so the limit starts from what is used.
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	limit := int64(s[0].Value.Uint64()-s[1].Value.Uint64()) + int64(mib)<<20
	debug.SetMemoryLimit(limit)
	return limit
}

// idleCheck is how often the node looks whether the Electrum server is idle.
const idleCheck = 5 * time.Second

// releaseMemoryWhenIdle returns the memory a burst of Electrum requests took
// to the operating system once the burst is over: the garbage collector
// shrinks its heap goal only when it next runs, which an idle server gives
// it no reason to do for minutes. It runs until the node stops.
func (n *Node) releaseMemoryWhenIdle() {
	defer n.wg.Done()
	t := time.NewTicker(idleCheck)
	defer t.Stop()
	var last uint64
	busy := false
	for {
		select {
		case <-n.quit:
			return
		case <-t.C:
		}
		count := n.srv.electrum.RequestCount()
		switch {
		case count != last:
			busy = true
		case busy:
			debug.FreeOSMemory()
			busy = false
		}
		last = count
	}
}

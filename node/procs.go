package node

import (
	"os"
	"runtime"
)

// ServeProcs gives the Go scheduler one more processor (P) than there are
// cores once the node serves, unless the GOMAXPROCS environment variable
// sets their number, and returns the number of cores (GOMAXPROCS before the
// change). The caller sets the Electrum server's work places
// (--electrumworkers) to the cores first, so request handlers hold at most
// one P per core and one P is always left for the network.
//
// The Go scheduler looks for connections that have become readable only
// when a P runs out of work, or every 10 ms from its monitor thread. With
// every P running handlers (a burst of cold subscriptions from many
// sessions in good standing fills every place of the work gate), a
// wallet's request waited up to 10 ms before the node even read it. The
// spare P notices it at once and reads, decodes and answers what runs
// outside the gate; the kernel shares the cores between the threads.
func ServeProcs() int {
	cores := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(cores + 1)
	}
	return cores
}

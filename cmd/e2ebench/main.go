// Command e2ebench measures the built node end to end on a generated,
// mainnet-shaped chain (cmd/chaingen's output directory):
//
//	e2ebench catchup -chain DIR [-runs 2] [-svg FILE] [-json FILE] [-md FILE]
//	e2ebench ibd     -chain DIR [-runs 2] [-json FILE] [-md FILE]
//	e2ebench mkchain -out DIR [-blocks 300]
//
// catchup copies the chain's block database to a scratch directory for every
// run and times the Electrum index catching it up from process start until
// the Electrum port answers with the chain's tip, beside btcd v0.26.2's own
// --addrindex and --txindex on the same chain in the same run. ibd replays
// blocks.dat into a fresh node with submitblock, with and without the
// Electrum index. mkchain makes a small chain of coinbase-only blocks with the
// node's generatetoaddress, in the same layout, for trying the tool out.
//
// Every process it starts listens on loopback only and connects to no peer;
// it is stopped with SIGINT at the end of its run.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	go stopChildrenOnSignal()
	var err error
	switch os.Args[1] {
	case "catchup":
		err = runCatchup(os.Args[2:])
	case "ibd":
		err = runIBD(os.Args[2:])
	case "load":
		err = runLoad(os.Args[2:])
	case "hostile":
		err = runHostile(os.Args[2:])
	case "hostile-attack":
		err = runHostileAttack(os.Args[2:])
	case "hostile-echo":
		err = runHostileEcho()
	case "hostile-spin":
		err = runHostileSpin()
	case "mkchain":
		err = runMkchain(os.Args[2:])
	case "-h", "-help", "--help", "help":
		usage()
		return
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2ebench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  e2ebench catchup -chain DIR [-runs 2] [-kinds electrum,addrindex,txindex] [-svg FILE] [-json FILE] [-md FILE]
  e2ebench ibd     -chain DIR [-runs 2] [-json FILE] [-md FILE]
  e2ebench load    -chain DIR [-sessions 20,100] [-duration 20s] [-single 10] [-json FILE]
  e2ebench hostile -chain DIR [-kinds idle,slowread,...] [-phase 15s] [-json FILE] [-md FILE]
  e2ebench mkchain -out DIR [-blocks 300] [-net simnet]
Run a subcommand with -h for its flags.
`)
}

// stopChildrenOnSignal stops the running node (if any) when e2ebench itself
// is interrupted, then exits.
func stopChildrenOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
	fmt.Fprintln(os.Stderr, "e2ebench: interrupted, stopping the node")
	stopAllChildren()
	os.Exit(130)
}

// common holds the flags every measuring subcommand takes.
type common struct {
	chain   string
	node    string
	btcd    string
	scratch string
	runs    int
	jsonOut string
	mdOut   string
	keep    bool
	timeout time.Duration
	verbose bool
	// nodeArgs are extra flags for this node (not for btcd).
	nodeArgs []string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.chain, "chain", "", "chain directory: <dir>/<net>/blocks_ffldb, blocks.dat, chain.json (required; never modified)")
	fs.StringVar(&c.node, "node", "bin/btcd-electrum", "the node binary to measure")
	fs.StringVar(&c.btcd, "btcd", "bin/btcd-v0.26.2/btcd", "btcd v0.26.2 binary (catchup)")
	fs.StringVar(&c.scratch, "scratch", "", "scratch directory for the runs' datadirs, on the same disk as the chain (default: a new directory in $TMPDIR, removed at the end)")
	fs.IntVar(&c.runs, "runs", 2, "runs of each configuration, interleaved")
	fs.StringVar(&c.jsonOut, "json", "", "write every measurement to this JSON file")
	fs.StringVar(&c.mdOut, "md", "", "append a Markdown section with the results to this file")
	fs.BoolVar(&c.keep, "keep", false, "keep each run's scratch datadir and log")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Hour, "give up on a run after this long")
	fs.BoolVar(&c.verbose, "v", false, "echo the nodes' log lines")
	fs.Func("nodeargs", "extra flags for this node, space-separated (e.g. \"--cpuprofile=/tmp/node.prof\"); not passed to btcd", func(s string) error {
		c.nodeArgs = append(c.nodeArgs, strings.Fields(s)...)
		return nil
	})
}

// setup checks the flags and loads the chain; it returns the chain and the
// scratch directory with a function that removes it if it was made here.
func (c *common) setup() (*chainInfo, string, func(), error) {
	if c.chain == "" {
		return nil, "", nil, errors.New("-chain is required")
	}
	if c.runs < 1 {
		return nil, "", nil, errors.New("-runs must be at least 1")
	}
	ci, err := loadChain(c.chain)
	if err != nil {
		return nil, "", nil, err
	}
	if c.node, err = filepath.Abs(c.node); err != nil {
		return nil, "", nil, err
	}
	if _, err := os.Stat(c.node); err != nil {
		return nil, "", nil, fmt.Errorf("node binary: %w (make build)", err)
	}
	cleanup := func() {}
	scratch := c.scratch
	if scratch == "" {
		scratch, err = os.MkdirTemp("", "e2ebench-")
		if err != nil {
			return nil, "", nil, err
		}
		if !c.keep {
			cleanup = func() { os.RemoveAll(scratch) }
		}
	} else if err := os.MkdirAll(scratch, 0o755); err != nil {
		return nil, "", nil, err
	}
	return ci, scratch, cleanup, nil
}

// finish removes the scratch directory after a successful benchmark, and
// keeps it (with the nodes' logs) after a failed one.
func finish(ok bool, cleanup func(), scratch string) {
	if ok {
		cleanup()
		return
	}
	fmt.Fprintf(os.Stderr, "e2ebench: the scratch directory %s is kept for inspection (the nodes' logs are in it)\n", scratch)
}

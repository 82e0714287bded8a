package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/freeport"
)

// runLoad measures the Electrum server as wallets use it: the node is
// started with the index on a copy of the chain (whose index it first
// builds), and once its Electrum port reports the tip, the project's load
// tool (cmd/electrum-load) runs its request mix against it over TCP and
// times single requests of the heaviest scripts; with -esplora the node
// serves its Esplora API too and the tool loads that instead, over HTTP.
// Its report is the tool's own; -json and -md are passed on.
func runLoad(args []string) error {
	var (
		c        common
		load     string
		sessions string
		duration time.Duration
		single   int
		extra    string
		restart  bool
		esplora  bool
	)
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	c.register(fs)
	fs.StringVar(&load, "load", "bin/electrum-load", "the load tool binary")
	fs.StringVar(&sessions, "sessions", "20,100", "sessions of each load phase")
	fs.DurationVar(&duration, "duration", 20*time.Second, "measured length of each phase")
	fs.IntVar(&single, "single", 10, "heavy scripts whose single requests are timed")
	fs.StringVar(&extra, "loadargs", "", "extra flags for the load tool, space-separated")
	fs.BoolVar(&esplora, "esplora", false, "load the node's Esplora API (--esploralisten) instead of its Electrum server, with the load tool's Esplora mix")
	fs.BoolVar(&restart, "restart", false, "restart the node once the index is built, so the load meets a fresh process (empty caches)")
	fs.Parse(args)

	ci, scratch, cleanup, err := c.setup()
	if err != nil {
		return err
	}
	done := false
	defer func() { finish(done, cleanup, scratch) }()
	if load, err = filepath.Abs(load); err != nil {
		return err
	}
	if _, err := os.Stat(load); err != nil {
		return fmt.Errorf("load tool: %w (make build)", err)
	}
	scripts := filepath.Join(ci.Dir, "scripts.txt")
	if _, err := os.Stat(scripts); err != nil {
		return fmt.Errorf("the chain has no scripts file: %w", err)
	}

	// A fresh directory each run, as catchup's and ibd's: a -scratch
	// given again still holds the last one.
	dir := filepath.Join(scratch, "load")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	dataDir := filepath.Join(dir, "data")
	if err := copyTree(ci.DBPath(), filepath.Join(dataDir, ci.NetDir(), "blocks_ffldb")); err != nil {
		return fmt.Errorf("copy chain: %w", err)
	}
	port, err := freeport.Port()
	if err != nil {
		return err
	}
	// The per-IP and cost limits are for the public: the load comes from
	// one address and is meant to run flat out.
	nodeArgs := append([]string{ci.NetFlag(), "--datadir=" + dataDir, "--logdir=" + filepath.Join(dir, "logs"),
		"--nolisten", "--norpc", "--nodnsseed", "--connect=127.0.0.1:1", "--addcheckpoint=" + ci.Checkpoint,
		"--nocfilters", "--electrumindex", fmt.Sprintf("--electrumlisten=127.0.0.1:%d", port),
		"--electrummaxsessionsperip=-1", "--electrumcosthardlimit=-1"}, c.nodeArgs...)
	target := []string{"-server", fmt.Sprintf("127.0.0.1:%d", port)}
	if esplora {
		eport, err := freeport.Port()
		if err != nil {
			return err
		}
		nodeArgs = append(nodeArgs, fmt.Sprintf("--esploralisten=127.0.0.1:%d", eport), "--esploramaxrequestsperip=-1")
		target = []string{"-esplora", fmt.Sprintf("http://127.0.0.1:%d", eport)}
	}
	onLine := func(t time.Duration, line string) {
		if c.verbose {
			fmt.Fprintf(os.Stderr, "  [node %6.1fs] %s\n", t.Seconds(), line)
		}
	}
	p, err := startProc(c.node, nodeArgs, filepath.Join(dir, "node.log"), onLine)
	if err != nil {
		return err
	}
	defer p.Stop(5 * time.Minute)
	fmt.Fprintf(os.Stderr, "chain %s: %s, %d tx; building the index and waiting for the Electrum port\n", ci.Dir, ci.Network, ci.Txs)
	ready, err := waitElectrumTip(p, port, ci.TipHeight, time.After(c.timeout))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "serving the tip after %.1f s\n", ready.Seconds())
	if restart {
		if _, err := p.Stop(5 * time.Minute); err != nil {
			return fmt.Errorf("stop the node: %w", err)
		}
		if p, err = startProc(c.node, nodeArgs, filepath.Join(dir, "node-restart.log"), onLine); err != nil {
			return err
		}
		defer p.Stop(5 * time.Minute)
		if ready, err = waitElectrumTip(p, port, ci.TipHeight, time.After(c.timeout)); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "restarted: serving the tip after %.1f s\n", ready.Seconds())
	}
	fmt.Fprintln(os.Stderr, "running the load")

	largs := append(target, "-scripts", scripts,
		"-sessions", sessions, "-duration", duration.String(), "-single", strconv.Itoa(single),
		"-pid", strconv.Itoa(p.Pid()))
	if c.jsonOut != "" {
		largs = append(largs, "-json", c.jsonOut)
	}
	largs = append(largs, strings.Fields(extra)...)
	cmd := exec.Command(load, largs...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("load tool: %w", err)
	}
	done = true
	return nil
}

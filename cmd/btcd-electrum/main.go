// Command btcd-electrum is a btcd-compatible full node with an Electrum
// server: btcd's flags, config file and datadir layout, plus
// --electrumindex and the Electrum listener and limit options.
package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // served on --profile
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/btcd-electrum/btcd-electrum/node"
	flags "github.com/jessevdk/go-flags"
)

// version is the software version shown by --version.
const version = "0.1.0"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run loads the configuration, starts the node and waits for SIGINT,
// SIGTERM or an RPC stop request, then shuts the node down. SIGHUP reloads
// the Electrum TLS certificate and key.
func run(args []string) (err error) {
	cfg, _, err := node.LoadConfig(args)
	if err != nil {
		var fe *flags.Error
		if errors.As(err, &fe) && fe.Type == flags.ErrHelp {
			fmt.Println(err)
			return nil
		}
		return err
	}
	if cfg.ShowVersion {
		fmt.Println("btcd-electrum version", version)
		return nil
	}
	if cfg.DebugLevel == "show" {
		fmt.Println("Supported subsystems", node.SupportedSubsystems())
		return nil
	}
	if err := cfg.CheckListenersFree(); err != nil {
		return err
	}
	if err := node.SetLogFile(cfg.LogFile()); err != nil {
		return err
	}
	defer node.SetLogFile("")
	if err := node.SetLogLevels(cfg.DebugLevel); err != nil {
		return err
	}
	log := node.Logger("NODE")
	log.Infof("Version %s", version)
	// Why the node stops goes into its log file too, not only to stderr
	// (runs before the deferred close of the file).
	defer func() {
		if err != nil {
			log.Errorf("%v", err)
		}
	}()

	// The first signal interrupts start-up (index catch-up) or asks a
	// running node to stop; later ones are only logged.
	interrupt := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		sig := <-sigs
		log.Infof("Received %v, shutting down", sig)
		close(interrupt)
		for sig := range sigs {
			log.Infof("Received %v again, already shutting down", sig)
		}
	}()
	cfg.Interrupt = interrupt

	// SIGHUP reloads the Electrum TLS certificate; one that arrives while
	// the node starts is handled once it runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	if cfg.Profile != "" {
		startProfileServer(cfg.Profile)
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := startProfiles(cfg); err != nil {
		return err
	}
	defer stopProfiles()

	if cfg.DropRequested() {
		// As btcd: delete the named indexes and exit.
		return node.DropIndexes(cfg)
	}

	cores := runtime.GOMAXPROCS(0)
	if cfg.ElectrumIndex && cfg.Electrum.Workers == 0 {
		// One request handler per core; ServeProcs below adds the
		// scheduler's spare processor.
		cfg.Electrum.Workers = cores
	}
	n, err := node.New(cfg)
	if err != nil {
		select {
		case <-interrupt:
			log.Infof("Start-up interrupted: %v", err)
			return nil
		default:
		}
		return err
	}
	if cfg.ElectrumIndex {
		// Set before the node starts: until then no block arrives, so
		// no catch-up of the index runs under a limit of its own.
		if limit := node.SetServeMemoryLimit(cfg.ElectrumServeMem); limit > 0 {
			log.Infof("Memory: soft limit %d MiB (%d MiB over what the node holds after start-up)",
				limit>>20, cfg.ElectrumServeMem)
		}
	}
	if err := n.Start(); err != nil {
		_ = n.Stop()
		return err
	}
	if cfg.ElectrumIndex {
		node.ServeProcs()
		log.Infof("Scheduler: %d processors for %d cores (%d Electrum request places)",
			runtime.GOMAXPROCS(0), cores, cfg.Electrum.Workers)
	}
	for {
		select {
		case <-interrupt:
			return n.Stop()
		case <-n.StopRequested():
			log.Infof("Stop requested over RPC")
			return n.Stop()
		case <-hup:
			log.Infof("Received SIGHUP, reloading the Electrum TLS certificate")
			if _, err := n.ReloadElectrumTLS(); err != nil {
				// The Electrum server has logged why; say what remains.
				log.Warnf("Electrum TLS certificate not reloaded: %v", err)
			}
		}
	}
}

// startProfileServer serves net/http/pprof on localhost:port, as btcd's
// --profile.
func startProfileServer(port string) {
	addr := net.JoinHostPort("localhost", strings.TrimPrefix(port, ":"))
	go func() {
		node.Logger("NODE").Infof("Profile server listening on %s", addr)
		if err := http.ListenAndServe(addr, nil); err != nil {
			node.Logger("NODE").Errorf("Profile server: %v", err)
		}
	}()
}

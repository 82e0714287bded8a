package node

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/btcsuite/btcd/addrmgr"
	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/connmgr"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/mining/cpuminer"
	"github.com/btcsuite/btcd/netsync"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/v2transport"
	"github.com/btcsuite/btclog"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// Log file rotation, as btcd's: at 10 MiB the file is renamed to .1 (older
// ones to .2, .3) and a new one started.
const (
	maxLogFileSize = 10 << 20
	keptLogFiles   = 3
)

// logOutput is the one writer behind every subsystem logger: stdout (unless
// turned off) plus the log file once SetLogFile has opened it.
type logOutput struct {
	mu     sync.Mutex
	stdout io.Writer
	file   *os.File
	path   string
	size   int64
}

// Write sends p to stdout and the log file, rotating the file when it is
// full.
func (w *logOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stdout != nil {
		_, _ = w.stdout.Write(p)
	}
	if w.file != nil {
		if w.size+int64(len(p)) > maxLogFileSize {
			w.rotate()
		}
		if w.file != nil {
			n, _ := w.file.Write(p)
			w.size += int64(n)
		}
	}
	return len(p), nil
}

// rotate shifts path.N to path.N+1, path to path.1, and opens a new path.
// On failure logging to the file stops; stdout goes on.
func (w *logOutput) rotate() {
	_ = w.file.Close()
	w.file = nil
	for i := keptLogFiles - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", w.path, i), fmt.Sprintf("%s.%d", w.path, i+1))
	}
	_ = os.Rename(w.path, w.path+".1")
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	w.file, w.size = f, 0
}

var (
	// output is shared by all loggers; btcd's packages keep their loggers in
	// package variables, so there is one logging set-up per process.
	output = &logOutput{stdout: os.Stdout}

	// backend creates all subsystem loggers.
	backend = btclog.NewBackend(output)

	log     = backend.Logger("NODE") // node assembly and lifecycle
	srvrLog = backend.Logger("SRVR") // peer server: connections, relay
	peerLog = backend.Logger("PEER") // btcd's peer package
	indxLog = backend.Logger("INDX") // index manager and index timings

	// subsystemLoggers maps each subsystem tag to its logger, for
	// --debuglevel.
	subsystemLoggers = map[string]btclog.Logger{
		"NODE": log,
		"SRVR": srvrLog,
		"PEER": peerLog,
		"INDX": indxLog,
		"AMGR": backend.Logger("AMGR"),
		"CMGR": backend.Logger("CMGR"),
		"BCDB": backend.Logger("BCDB"),
		"CHAN": backend.Logger("CHAN"),
		"MINR": backend.Logger("MINR"),
		"SCRP": backend.Logger("SCRP"),
		"SYNC": backend.Logger("SYNC"),
		"TXMP": backend.Logger("TXMP"),
		"ELEC": backend.Logger("ELEC"), // Electrum index
		"ESRV": backend.Logger("ESRV"), // Electrum protocol server
		"RPCS": backend.Logger("RPCS"),

		v2transport.Subsystem: backend.Logger(v2transport.Subsystem),

		// btcd's other tags, so that a btcd config file's debuglevel
		// loads: BTCD is btcd's start-up and shutdown, NODE's work here;
		// btcd logs nothing under ADXR and DISC, and neither does the
		// node.
		"BTCD": log,
		"ADXR": backend.Logger("ADXR"),
		"DISC": backend.Logger("DISC"),
	}
)

func init() {
	addrmgr.UseLogger(subsystemLoggers["AMGR"])
	connmgr.UseLogger(subsystemLoggers["CMGR"])
	database.UseLogger(subsystemLoggers["BCDB"])
	blockchain.UseLogger(subsystemLoggers["CHAN"])
	btcdindexers.UseLogger(indxLog)
	mining.UseLogger(subsystemLoggers["MINR"])
	cpuminer.UseLogger(subsystemLoggers["MINR"])
	peer.UseLogger(peerLog)
	txscript.UseLogger(subsystemLoggers["SCRP"])
	netsync.UseLogger(subsystemLoggers["SYNC"])
	mempool.UseLogger(subsystemLoggers["TXMP"])
	v2transport.UseLogger(subsystemLoggers[v2transport.Subsystem])
	useProjectLoggers()
	for _, l := range subsystemLoggers {
		l.SetLevel(btclog.LevelInfo)
	}
}

// useProjectLoggers hands the project's own packages their subsystem
// loggers.
func useProjectLoggers() {
	indexers.UseLogger(subsystemLoggers["ELEC"])
	rpcext.UseLogger(subsystemLoggers["RPCS"])
}

// Logger returns the logger of a subsystem (for example "NODE"), or nil.
func Logger(subsystem string) btclog.Logger { return subsystemLoggers[subsystem] }

// SetLogFile appends all log output to path (creating its directory) in
// addition to stdout, rotating it at 10 MiB and keeping three old files. An
// empty path closes the current file.
func SetLogFile(path string) error {
	var f *os.File
	var size int64
	if path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("create log directory: %w", err)
		}
		var err error
		f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("open log file: %w", err)
		}
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
	}
	output.mu.Lock()
	old := output.file
	output.file, output.path, output.size = f, path, size
	output.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

// SetLogStdout turns the copy of the log on stdout on or off.
func SetLogStdout(on bool) {
	output.mu.Lock()
	defer output.mu.Unlock()
	if on {
		output.stdout = os.Stdout
	} else {
		output.stdout = nil
	}
}

// SupportedSubsystems returns the subsystem tags accepted by --debuglevel,
// sorted.
func SupportedSubsystems() []string {
	subs := make([]string, 0, len(subsystemLoggers))
	for s := range subsystemLoggers {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	return subs
}

// SetLogLevels applies a --debuglevel value: either one level for every
// subsystem ("info") or "SUBSYS=level,SUBSYS2=level".
func SetLogLevels(debugLevel string) error {
	if err := validateLogLevels(debugLevel); err != nil {
		return err
	}
	if !strings.Contains(debugLevel, "=") {
		lvl, _ := btclog.LevelFromString(debugLevel)
		for _, l := range subsystemLoggers {
			l.SetLevel(lvl)
		}
		return nil
	}
	for _, pair := range strings.Split(debugLevel, ",") {
		kv := strings.SplitN(pair, "=", 2)
		lvl, _ := btclog.LevelFromString(kv[1])
		subsystemLoggers[kv[0]].SetLevel(lvl)
	}
	return nil
}

// validateLogLevels checks a --debuglevel value without applying it.
func validateLogLevels(debugLevel string) error {
	const levelChoices = "use trace, debug, info, warn, error, critical or off, or <subsystem>=<level>,..."
	if !strings.Contains(debugLevel, "=") {
		if strings.Contains(debugLevel, ",") {
			return fmt.Errorf("the specified debug level contains an invalid list of subsystem/level pairs [%v]", debugLevel)
		}
		if _, ok := btclog.LevelFromString(debugLevel); !ok {
			return fmt.Errorf("--debuglevel: the specified debug level [%v] is invalid -- %s", debugLevel, levelChoices)
		}
		return nil
	}
	for _, pair := range strings.Split(debugLevel, ",") {
		kv := strings.SplitN(pair, "=", 2)
		if len(kv) != 2 {
			return fmt.Errorf("the specified debug level contains an invalid subsystem/level pair [%v]", pair)
		}
		if _, ok := subsystemLoggers[kv[0]]; !ok {
			return fmt.Errorf("the specified subsystem [%v] is invalid -- supported subsystems %v", kv[0], SupportedSubsystems())
		}
		if _, ok := btclog.LevelFromString(kv[1]); !ok {
			return fmt.Errorf("--debuglevel: the specified debug level [%v] is invalid -- %s", kv[1], levelChoices)
		}
	}
	return nil
}

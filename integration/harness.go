package integration

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/rpcclient"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/internal/freeport"
	"github.com/btcd-electrum/btcd-electrum/node"
)

// NodePackage is the import path of the node's command, built by
// NodeBinary.
const NodePackage = "github.com/btcd-electrum/btcd-electrum/cmd/btcd-electrum"

// RPCUser and RPCPass are the JSON-RPC credentials of every node the
// harness starts.
const (
	RPCUser = "user"
	RPCPass = "pass"
)

// StartTimeout bounds how long the harness waits for a node's servers to
// come up (index catch-up on a large datadir counts against it).
var StartTimeout = 2 * time.Minute

// LogStdout copies the log of in-process nodes to stdout. Logging is
// process-wide in an in-process node (node.SetLogStdout, applied at every
// in-process start; node.SetLogFile for a file, which all such nodes then
// share), so their log goes nowhere else unless asked; off by default, so
// that a test's or an Example's output is its own.
var LogStdout = false

// StopTimeout bounds how long the harness waits for a process to exit after
// SIGINT before it kills it.
var StopTimeout = time.Minute

var (
	nodeBinOnce sync.Once
	nodeBinPath string
	nodeBinErr  error
)

// NodeBinary builds cmd/btcd-electrum once per process into a temporary
// directory and returns the executable's path. It runs `go build` in the
// current directory, so it works from any module that requires this one.
func NodeBinary() (string, error) {
	nodeBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "btcd-electrum-integration")
		if err != nil {
			nodeBinErr = err
			return
		}
		nodeBinPath = filepath.Join(dir, "btcd-electrum")
		out, err := exec.Command("go", "build", "-o", nodeBinPath, NodePackage).CombinedOutput()
		if err != nil {
			nodeBinErr = fmt.Errorf("go build %s: %v\n%s", NodePackage, err, out)
		}
	})
	return nodeBinPath, nodeBinErr
}

// RemoveBinaries deletes the executables NodeBinary and BtcdBinary built in
// this process. Call it once no test needs them any more, typically from
// TestMain after m.Run.
func RemoveBinaries() {
	for _, p := range []string{nodeBinPath, btcdBinPath} {
		if p != "" {
			_ = os.RemoveAll(filepath.Dir(p))
		}
	}
}

// FreeAddr returns a loopback host:port that nothing listens on now, below
// the system's ephemeral range, so that no other test's sockets take it
// before a node binds it.
func FreeAddr() (string, error) {
	return freeport.Addr()
}

// freeAddrs returns n distinct addresses from FreeAddr.
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		a, err := freeport.Addr()
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// networkFlag returns the command-line flag and parameters of a network
// the harness runs nodes on: regtest (nil) or simnet.
func networkFlag(params *chaincfg.Params) (string, *chaincfg.Params, error) {
	switch {
	case params == nil || params.Name == chaincfg.RegressionNetParams.Name:
		return "--regtest", &chaincfg.RegressionNetParams, nil
	case params.Name == chaincfg.SimNetParams.Name:
		return "--simnet", &chaincfg.SimNetParams, nil
	}
	return "", nil, fmt.Errorf("the harness runs nodes on regtest or simnet, not %s", params.Name)
}

// NodeConfig says how StartNode runs a btcd-electrum node. The zero value
// runs it in-process on regtest in a new temporary directory, with
// --electrumindex, RPC without TLS and blocks mined to MiningAddress.
type NodeConfig struct {
	// Binary runs the built command (NodeBinary) as a child process,
	// exactly as operators run it, instead of node.New in this process.
	Binary bool

	// Dir is where data and logs go (<Dir>/data, <Dir>/logs); empty means
	// a new temporary directory. Start a node again with the Dir of a
	// stopped one to reopen its chain and index.
	Dir string

	// DataDir overrides --datadir, for example to open a datadir btcd
	// created. LogDir overrides --logdir.
	DataDir string
	LogDir  string

	// RPCTLS serves RPC over TLS with a certificate generated into Dir;
	// the returned client trusts it.
	RPCTLS bool

	// Net is the network: nil or regtest (--regtest), or simnet
	// (--simnet), whose datadir stock btcd keeps across restarts.
	Net *chaincfg.Params

	// MiningAddr is the --miningaddr; empty means MiningAddressOn(Net).
	MiningAddr string

	// NoElectrumIndex leaves --electrumindex off.
	NoElectrumIndex bool

	// ElectrumTLS, ElectrumWS and ElectrumWSS add Electrum listeners over
	// TLS, WebSocket and secure WebSocket next to the plain TCP one, with
	// a certificate generated into Dir (ElectrumCert; ElectrumTLSConfig
	// trusts it).
	ElectrumTLS, ElectrumWS, ElectrumWSS bool

	// Esplora serves the Esplora HTTP API (--esploralisten) beside the
	// Electrum protocol; Node.EsploraURL is its base URL.
	Esplora bool

	// Args are more flags, for example --connect=host:port or
	// --debuglevel=debug; they come last, so a flag of one value takes
	// precedence over the harness's. A listener flag (--rpclisten,
	// --electrumlisten, ...) adds a listener beside the harness's own,
	// whose addresses the Node reports. --miningaddr is refused: the node
	// would pay each block to one of its addresses at random; set
	// MiningAddr. An in-process node applies --debuglevel to the whole
	// process's log. A --datadir or --logdir here is the one the node
	// uses, and Node.DataDir and LogDir report it.
	Args []string

	// reuse holds, for Restart, the addresses of the node restarted (P2P,
	// RPC, Electrum TCP, TLS, WS, WSS, Esplora; "" for none), so that its
	// peers and clients find it again.
	reuse []string
}

// Node is a running btcd-electrum node on regtest (or simnet).
type Node struct {
	// ElectrumAddr is the plain-TCP Electrum listener (host:port); empty
	// without the Electrum index.
	ElectrumAddr string

	// ElectrumTLSAddr, ElectrumWSAddr and ElectrumWSSAddr are the TLS,
	// WebSocket and secure WebSocket listeners (host:port) NodeConfig's
	// ElectrumTLS, ElectrumWS and ElectrumWSS asked for, each empty
	// without its field (a listener Args alone adds is not reported);
	// ElectrumCert is the certificate the TLS and WSS listeners present
	// (PEM file).
	ElectrumTLSAddr, ElectrumWSAddr, ElectrumWSSAddr string
	ElectrumCert                                     string

	// EsploraURL is the Esplora HTTP API's base URL (http://host:port and
	// any --esplorapath given in Args), empty unless NodeConfig.Esplora
	// (an --esploralisten in Args alone is not reported).
	EsploraURL string

	// Electrum is a client of the TCP listener that has negotiated
	// protocol version 1.4, ready for calls and subscriptions; nil
	// without the Electrum index. Stop closes it.
	Electrum *ElectrumClient

	// P2PAddr is the peer listener (host:port).
	P2PAddr string

	// RPCAddr is the JSON-RPC listener (host:port) and RPC a client of it
	// (HTTP POST mode).
	RPCAddr string
	RPC     *rpcclient.Client

	// Dir is the harness's directory for the node; DataDir and LogDir are
	// the node's --datadir and --logdir, those of Args when they give
	// them; LogFile is a binary node's log (an in-process node logs as
	// LogStdout says).
	Dir, DataDir, LogDir, LogFile string

	// Args are the command-line flags the node was started with.
	Args []string

	cfg      NodeConfig
	params   *chaincfg.Params
	syncMu   sync.Mutex
	syncConn *ElectrumClient // WaitSynced's connection
	ownDir   bool            // Dir was created by Start and is removed by Stop
	inproc   *node.Node
	stopped  chan struct{} // closed by Stop of an in-process node
	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
	stopOnce sync.Once
	stopErr  error
}

// StartNode starts a node as cfg says, waits until its RPC server answers,
// and stops it when the test ends. It fails the test if the node does not
// come up within StartTimeout.
func StartNode(t testing.TB, cfg NodeConfig) *Node {
	t.Helper()
	n, err := startNode(t, cfg)
	if err != nil {
		t.Fatalf("starting btcd-electrum: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stopping btcd-electrum: %v", err)
		}
	})
	return n
}

// Start starts a node as cfg says, outside a test (in an Example, a
// TestMain or a program), and waits until its RPC server answers and its
// Electrum client is ready. The caller stops it with Stop, which also
// removes the temporary directory Start created when cfg.Dir is empty.
func Start(cfg NodeConfig) (*Node, error) {
	return startNode(nil, cfg)
}

// startNode does StartNode's work and returns errors instead of failing;
// t is nil for Start.
func startNode(t testing.TB, cfg NodeConfig) (*Node, error) {
	for _, a := range cfg.Args {
		if a == "--miningaddr" || strings.HasPrefix(a, "--miningaddr=") {
			return nil, errors.New("integration: --miningaddr in NodeConfig.Args: set NodeConfig.MiningAddr (with both, the node pays each block to one at random)")
		}
	}
	if cfg.reuse != nil && !allFree(cfg.reuse) {
		// An address of the restarted node was taken meanwhile: a node
		// skips a P2P address it cannot bind, so it would start without
		// it and be reported there.
		cfg.reuse = nil
	}
	for attempt := 1; ; attempt++ {
		n, err := startNodeOnce(t, cfg)
		if err != nil && cfg.reuse != nil && (errors.Is(err, errAddrInUse) || strings.Contains(err.Error(), "address already in use")) {
			// An address of the restarted node was taken meanwhile.
			cfg.reuse = nil
			continue
		}
		if err == nil || !cfg.Binary || attempt == 3 || !errors.Is(err, errAddrInUse) {
			return n, err
		}
	}
}

// allFree reports whether every address given ("" aside) can be bound.
func allFree(addrs []string) bool {
	for _, a := range addrs {
		if a == "" {
			continue
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// errAddrInUse marks a node binary that exited at start because another
// process took one of its ports between FreeAddr and the node binding it;
// the harness starts it again on other ports.
var errAddrInUse = errors.New("a port of the node was taken")

// startNodeOnce is startNode without the retry.
func startNodeOnce(t testing.TB, cfg NodeConfig) (*Node, error) {
	n := &Node{cfg: cfg, Dir: cfg.Dir}
	if n.Dir == "" && t != nil {
		n.Dir = t.TempDir()
	} else if n.Dir == "" {
		dir, err := os.MkdirTemp("", "btcd-electrum-node")
		if err != nil {
			return nil, err
		}
		n.Dir, n.ownDir = dir, true
	}
	n.DataDir, n.LogDir = cfg.DataDir, cfg.LogDir
	if n.DataDir == "" {
		n.DataDir = filepath.Join(n.Dir, "data")
	}
	if n.LogDir == "" {
		n.LogDir = filepath.Join(n.Dir, "logs")
	}
	netFlag, params, err := networkFlag(cfg.Net)
	if err != nil {
		n.removeOwnDir()
		return nil, err
	}
	n.params = params
	n.LogFile = filepath.Join(n.LogDir, node.NetName(params), "btcd-electrum.log")
	mining := cfg.MiningAddr
	if mining == "" {
		mining = MiningAddressOn(params).EncodeAddress()
	}

	// In-process nodes listen on port 0 and report the real ports; a child
	// process gets ports picked here.
	p2p, rpc, el := "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	elTLS, elWS, elWSS, esp := "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	if cfg.Binary {
		addrs, err := freeAddrs(7)
		if err != nil {
			n.removeOwnDir()
			return nil, err
		}
		p2p, rpc, el, elTLS, elWS, elWSS, esp = addrs[0], addrs[1], addrs[2], addrs[3], addrs[4], addrs[5], addrs[6]
	}
	if len(cfg.reuse) == 7 {
		for i, a := range []*string{&p2p, &rpc, &el, &elTLS, &elWS, &elWSS, &esp} {
			if cfg.reuse[i] != "" {
				*a = cfg.reuse[i]
			}
		}
	}
	args := []string{netFlag, "--datadir=" + n.DataDir, "--logdir=" + n.LogDir,
		"--listen=" + p2p, "--rpclisten=" + rpc, "--rpcuser=" + RPCUser, "--rpcpass=" + RPCPass,
		"--miningaddr=" + mining, "--nodnsseed", "--trickleinterval=50ms",
		// btcd pre-allocates the UTXO cache's map for its whole size at
		// start (about 85 ms for the default 250 MiB), and the signature
		// and hash caches' maps (about 10 ms for 100,000 entries);
		// regtest chains need little.
		"--utxocachemaxsize=" + harnessUTXOCacheMiB, "--sigcachemaxsize=" + harnessSigCacheSize}
	certFile, keyFile := filepath.Join(n.Dir, "rpc.cert"), filepath.Join(n.Dir, "rpc.key")
	if cfg.RPCTLS {
		if err := writeCertPair(certFile, keyFile); err != nil {
			n.removeOwnDir()
			return nil, err
		}
		args = append(args, "--rpccert="+certFile, "--rpckey="+keyFile)
	} else {
		args = append(args, "--notls")
	}
	if !cfg.NoElectrumIndex {
		args = append(args, "--electrumindex", "--electrumlisten="+el)
		if cfg.ElectrumTLS {
			args = append(args, "--electrumtlslisten="+elTLS)
		}
		if cfg.ElectrumWS {
			args = append(args, "--electrumwslisten="+elWS)
		}
		if cfg.ElectrumWSS {
			args = append(args, "--electrumwsslisten="+elWSS)
		}
		if cfg.ElectrumTLS || cfg.ElectrumWSS {
			n.ElectrumCert = filepath.Join(n.Dir, "electrum.cert")
			elKey := filepath.Join(n.Dir, "electrum.key")
			if err := writeCertPair(n.ElectrumCert, elKey); err != nil {
				n.removeOwnDir()
				return nil, err
			}
			args = append(args, "--electrumcert="+n.ElectrumCert, "--electrumkey="+elKey)
		}
	}
	if cfg.Esplora {
		args = append(args, "--esploralisten="+esp)
	}
	n.Args = append(args, cfg.Args...)
	// A --datadir or --logdir in Args is what the node uses. Args the
	// node refuses are left for it to report.
	espPath := ""
	if c, _, err := node.LoadConfig(n.Args); err == nil {
		n.DataDir, n.LogDir = filepath.Dir(c.NetDataDir()), filepath.Dir(c.NetLogDir())
		n.LogFile = c.LogFile()
		espPath = c.EsploraPath // in any form Args give it, a config file's included
	}

	if cfg.Binary {
		if err := n.startProcess(); err != nil {
			n.removeOwnDir()
			return nil, err
		}
		n.P2PAddr, n.RPCAddr = p2p, rpc
		if !cfg.NoElectrumIndex {
			n.ElectrumAddr = el
			n.ElectrumTLSAddr = pick(cfg.ElectrumTLS, elTLS)
			n.ElectrumWSAddr = pick(cfg.ElectrumWS, elWS)
			n.ElectrumWSSAddr = pick(cfg.ElectrumWSS, elWSS)
		}
		if cfg.Esplora {
			n.EsploraURL = "http://" + esp + espPath
		}
	} else {
		if err := n.startInProcess(); err != nil {
			n.removeOwnDir()
			return nil, err
		}
	}

	conn := &rpcclient.ConnConfig{Host: n.RPCAddr, User: RPCUser, Pass: RPCPass,
		HTTPPostMode: true, DisableTLS: !cfg.RPCTLS}
	if err := n.waitRPC(conn, certFile); err != nil {
		// Read before Stop, which removes a directory Start created.
		out, rerr := os.ReadFile(filepath.Join(n.Dir, "stdout.log"))
		_ = n.Stop()
		if rerr == nil && cfg.Binary && bytes.Contains(out, []byte("address already in use")) {
			return nil, fmt.Errorf("%w: %v", errAddrInUse, err)
		}
		return nil, err
	}
	if n.ElectrumAddr != "" {
		if err := n.dialReadyElectrum(); err != nil {
			_ = n.Stop()
			return nil, err
		}
	}
	return n, nil
}

var (
	certOnce   sync.Once
	certPEM    []byte
	keyPEM     []byte
	certGenErr error
)

// writeCertPair writes the process's self-signed localhost certificate and
// key to certFile and keyFile unless both exist (a restarted node keeps
// its own). The pair is generated once per process: a node generating its
// own at start spends tens of milliseconds on it, for every TLS server.
func writeCertPair(certFile, keyFile string) error {
	_, certErr := os.Stat(certFile)
	_, keyErr := os.Stat(keyFile)
	if certErr == nil && keyErr == nil {
		return nil
	}
	certOnce.Do(func() {
		certPEM, keyPEM, certGenErr = btcutil.NewTLSCertPair("btcd-electrum integration harness",
			time.Now().Add(10*365*24*time.Hour), nil)
	})
	if certGenErr != nil {
		return certGenErr
	}
	if err := os.MkdirAll(filepath.Dir(certFile), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, keyPEM, 0o600)
}

// pick returns addr when on is set and "" otherwise.
func pick(on bool, addr string) string {
	if on {
		return addr
	}
	return ""
}

// removeOwnDir removes the directory Start created, if any.
func (n *Node) removeOwnDir() {
	if n.ownDir {
		_ = os.RemoveAll(n.Dir)
	}
}

// dialReadyElectrum connects the Electrum client, retrying until the
// listener accepts (the binary starts it after RPC), the process exits or
// StartTimeout passes, and negotiates the protocol version.
func (n *Node) dialReadyElectrum() error {
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	for {
		c, err := DialElectrum(ctx, n.ElectrumAddr)
		if err == nil {
			if _, _, err = c.Version(ctx, "btcd-electrum-integration", "1.4"); err == nil {
				n.Electrum = c
				return nil
			}
			_ = c.Close()
		}
		if n.exited != nil && isClosed(n.exited) {
			return n.startExitError()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Electrum server at %s did not answer within %v: %v", n.ElectrumAddr, StartTimeout, err)
		case <-time.After(startPoll):
		}
	}
}

// startInProcess creates and starts the node in this process from the
// same flags the binary would get.
func (n *Node) startInProcess() error {
	cfg, _, err := node.LoadConfig(n.Args)
	if err != nil {
		return err
	}
	// Several nodes of one process may peer with each other.
	cfg.AllowSelfConns = true
	node.SetLogStdout(LogStdout)
	// Only a level Args give (in any form) changes the process's log.
	if cfg.DebugLevel != node.DefaultLogLevel {
		if err := node.SetLogLevels(cfg.DebugLevel); err != nil {
			return err
		}
	}
	nd, err := node.New(cfg)
	if err != nil {
		return err
	}
	if err := nd.Start(); err != nil {
		_ = nd.Stop()
		return err
	}
	n.inproc = nd
	// The RPC stop command stops the node, as it ends the binary.
	n.stopped = make(chan struct{})
	go func() {
		select {
		case <-nd.StopRequested():
			_ = nd.Stop()
		case <-n.stopped:
		}
	}()
	if a := nd.P2PAddrs(); len(a) > 0 {
		n.P2PAddr = a[0].String()
	}
	if a := nd.RPCAddrs(); len(a) > 0 {
		n.RPCAddr = a[0].String()
	}
	if a := nd.EsploraAddrs(); len(a) > 0 {
		n.EsploraURL = "http://" + a[0].String() + nd.EsploraPath()
	}
	for t, addr := range map[electrum.Transport]*string{electrum.TCP: &n.ElectrumAddr,
		electrum.TLS: &n.ElectrumTLSAddr, electrum.WS: &n.ElectrumWSAddr, electrum.WSS: &n.ElectrumWSSAddr} {
		if a := nd.ElectrumAddrs()[t]; len(a) > 0 {
			*addr = a[0].String()
		}
	}
	// As a binary node does, report only the listeners NodeConfig asked
	// for: a listener Args alone adds is not reported.
	index := !n.cfg.NoElectrumIndex
	n.ElectrumAddr = pick(index, n.ElectrumAddr)
	n.ElectrumTLSAddr = pick(index && n.cfg.ElectrumTLS, n.ElectrumTLSAddr)
	n.ElectrumWSAddr = pick(index && n.cfg.ElectrumWS, n.ElectrumWSAddr)
	n.ElectrumWSSAddr = pick(index && n.cfg.ElectrumWSS, n.ElectrumWSSAddr)
	n.EsploraURL = pick(n.cfg.Esplora, n.EsploraURL)
	return nil
}

// startProcess runs the binary with the node's flags, its output going to
// <Dir>/stdout.log.
func (n *Node) startProcess() error {
	bin, err := NodeBinary()
	if err != nil {
		return err
	}
	// A Dir the caller named may not exist yet: the node makes its data
	// and log directories itself, but the harness writes here first.
	if err := os.MkdirAll(n.Dir, 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(filepath.Join(n.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	n.cmd = exec.Command(bin, n.Args...)
	n.cmd.SysProcAttr = childAttrs()
	// Through a pipe, copied into the file by this process: the node's
	// output is read even when its own writes to files fail (as a
	// service manager reads it on a full disk).
	w := pipedWriter{out}
	n.cmd.Stdout, n.cmd.Stderr = w, w
	if err := n.cmd.Start(); err != nil {
		out.Close()
		return err
	}
	n.exited = make(chan struct{})
	go func() {
		n.exitErr = n.cmd.Wait()
		out.Close()
		close(n.exited)
	}()
	return nil
}

// pipedWriter hides an *os.File from os/exec, which then gives the child
// a pipe and copies what it writes.
type pipedWriter struct{ w io.Writer }

func (p pipedWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

// Output returns what the node's process wrote to stdout and stderr (its
// log among it), across its starts.
func (n *Node) Output() (string, error) {
	b, err := os.ReadFile(filepath.Join(n.Dir, "stdout.log"))
	return string(b), err
}

// harnessUTXOCacheMiB and harnessSigCacheSize are the
// --utxocachemaxsize and --sigcachemaxsize of harness nodes.
const (
	harnessUTXOCacheMiB = "8"
	harnessSigCacheSize = "2000"
)

// waitRPC connects the RPC client, retrying until the server answers,
// the process exits or StartTimeout passes.
func (n *Node) waitRPC(conn *rpcclient.ConnConfig, certFile string) error {
	deadline := time.Now().Add(StartTimeout)
	// rpcclient retries a refused connection itself after half a second;
	// polling the port first finds a starting child process listening
	// within a few milliseconds.
	for {
		c, err := net.DialTimeout("tcp", n.RPCAddr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if n.exited != nil && isClosed(n.exited) {
			return n.startExitError()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("RPC server at %s did not listen within %v: %v", n.RPCAddr, StartTimeout, err)
		}
		time.Sleep(startPoll)
	}
	for {
		if n.exited != nil && isClosed(n.exited) {
			return n.startExitError()
		}
		err := n.tryRPC(conn, certFile)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("RPC server at %s did not answer within %v: %v", n.RPCAddr, StartTimeout, err)
		}
		time.Sleep(startPoll)
	}
}

// startExitError describes a node that exited during start-up, with the
// end of its output: the file it is in goes with the test's directory.
func (n *Node) startExitError() error {
	return fmt.Errorf("the node exited during start-up (%v); the end of its output:\n%s",
		n.exitErr, tailOf(filepath.Join(n.Dir, "stdout.log"), 20))
}

// tailOf returns the last lines of the file at path, or why it cannot.
func tailOf(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], "\n")
}

// startPoll is the interval at which start-up polls the RPC and Electrum
// listeners of a starting node.
const startPoll = 5 * time.Millisecond

// tryRPC makes one attempt at connecting the RPC client.
func (n *Node) tryRPC(conn *rpcclient.ConnConfig, certFile string) error {
	if n.cfg.RPCTLS {
		pem, err := os.ReadFile(certFile)
		if err != nil {
			return err
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return errors.New("RPC certificate not written yet")
		}
		conn.Certificates = pem
	}
	c, err := rpcclient.New(conn, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if _, err := answerWithin(ctx, "getblockcount", c.GetBlockCount); err != nil {
		c.Shutdown()
		return err
	}
	n.RPC = c
	return nil
}

// InProcess returns the node when it runs in this process, nil for a
// child process.
func (n *Node) InProcess() *node.Node { return n.inproc }

// Stop shuts the node down: node.Stop in-process, or SIGINT to the child
// process and a wait for it to exit (killing it after StopTimeout). A
// child that exits with an error is reported. It is safe to call more than
// once.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		defer n.removeOwnDir()
		if n.Electrum != nil {
			_ = n.Electrum.Close()
		}
		n.syncMu.Lock()
		if n.syncConn != nil {
			_ = n.syncConn.Close()
		}
		n.syncMu.Unlock()
		if n.RPC != nil {
			n.RPC.Shutdown()
		}
		if n.inproc != nil {
			close(n.stopped)
			n.stopErr = n.inproc.Stop()
			return
		}
		if n.cmd == nil {
			return
		}
		if !isClosed(n.exited) {
			_ = n.cmd.Process.Signal(syscall.SIGINT)
		}
		select {
		case <-n.exited:
			n.stopErr = n.exitErr
		case <-time.After(StopTimeout):
			_ = n.cmd.Process.Kill()
			<-n.exited
			n.stopErr = fmt.Errorf("the node did not exit within %v of SIGINT", StopTimeout)
		}
	})
	return n.stopErr
}

// Restart stops the node and starts it again on the same directories,
// flags and addresses, so that peers connected to it and clients find it
// again (on other ports only if another program took one meanwhile), and
// returns the new one.
func (n *Node) Restart(t testing.TB) *Node {
	t.Helper()
	cfg := n.cfg
	cfg.Dir, cfg.DataDir, cfg.LogDir = n.Dir, n.DataDir, n.LogDir
	esp := ""
	if u, err := url.Parse(n.EsploraURL); err == nil {
		esp = u.Host
	}
	cfg.reuse = []string{n.P2PAddr, n.RPCAddr, n.ElectrumAddr, n.ElectrumTLSAddr, n.ElectrumWSAddr,
		n.ElectrumWSSAddr, esp}
	// The directory outlives this node; the new one removes it if Start
	// created it.
	own := n.ownDir
	n.ownDir = false
	if err := n.Stop(); err != nil {
		t.Fatalf("stopping btcd-electrum: %v", err)
	}
	nn := StartNode(t, cfg)
	nn.ownDir = own
	return nn
}

// Log returns a binary node's log file as written so far; an in-process
// node has none of its own (LogStdout).
func (n *Node) Log() (string, error) {
	if n.inproc != nil {
		return "", errors.New("an in-process node logs through the process's logger (LogStdout), not to LogFile")
	}
	b, err := os.ReadFile(n.LogFile)
	return string(b), err
}

// DialElectrum connects a client to the node's Electrum TCP listener,
// negotiates protocol version 1.4, and closes the client when the test
// ends.
func (n *Node) DialElectrum(t testing.TB, ctx context.Context) *ElectrumClient {
	t.Helper()
	if n.ElectrumAddr == "" {
		t.Fatal("the node has no Electrum listener")
	}
	c, err := DialElectrum(ctx, n.ElectrumAddr)
	if err != nil {
		t.Fatalf("dial Electrum: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, _, err := c.Version(ctx, "btcd-electrum-integration", "1.4"); err != nil {
		t.Fatalf("server.version: %v", err)
	}
	return c
}

// WaitFor polls cond every 20 ms until it returns true, failing the test
// with what when ctx is done first.
func WaitFor(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

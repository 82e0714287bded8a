package node

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
	flags "github.com/jessevdk/go-flags"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/netparams"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// DefaultLogLevel is --debuglevel's default, as btcd's.
const DefaultLogLevel = "info"

// Defaults, matching btcd's where btcd has the same option.
const (
	defaultConfigFilename       = "btcd-electrum.conf"
	defaultDataDirname          = "data"
	defaultLogDirname           = "logs"
	defaultLogFilename          = "btcd-electrum.log"
	defaultMaxPeers             = 125
	defaultBanDuration          = 24 * time.Hour
	defaultBanThreshold         = 100
	defaultFreeTxRelayLimit     = 15.0
	defaultMaxOrphanTxs         = 100
	defaultMaxOrphanTxSize      = 100000
	defaultSigCacheMaxSize      = 100000
	defaultUtxoCacheMaxSizeMiB  = 250
	pruneMinSize                = 1536 // MiB
	defaultBlockMinSize         = 0
	defaultBlockMaxSize         = 750000
	defaultBlockMinWeight       = 0
	defaultBlockMaxWeight       = 3000000
	defaultMaxRPCClients        = 10
	defaultMaxRPCWebsockets     = 25
	defaultMaxRPCConcurrentReqs = 20

	// defaultElectrumTCPPort is the Electrum protocol's customary plain TCP
	// port; the TLS, WS and WSS ports (50002-50004) are only used when the
	// matching listener flag names no port.
	defaultElectrumTCPPort = "50001"
	defaultElectrumTLSPort = "50002"
	defaultElectrumWSPort  = "50003"
	defaultElectrumWSSPort = "50004"

	// maxElectrumMiB bounds the Electrum index's memory options (1 TiB;
	// the batch size's KiB, 1 GiB): more than a node's machine has, and
	// far from overflowing in bytes.
	maxElectrumMiB = 1 << 20
	// maxUndoBlocks bounds --electrumundoblocks: deeper than any
	// reorganization, and far from overflowing a block height.
	maxUndoBlocks = 1_000_000
)

var (
	// DefaultHomeDir is where the data, logs, config file and RPC
	// certificate live unless flags say otherwise. It is separate from
	// btcd's ~/.btcd so that both can run side by side; point --datadir at
	// btcd's data directory to reuse its chain.
	DefaultHomeDir = btcutil.AppDataDir("btcd-electrum", false)

	defaultConfigFile  = filepath.Join(DefaultHomeDir, defaultConfigFilename)
	defaultDataDir     = filepath.Join(DefaultHomeDir, defaultDataDirname)
	defaultLogDir      = filepath.Join(DefaultHomeDir, defaultLogDirname)
	defaultRPCKeyFile  = filepath.Join(DefaultHomeDir, "rpc.key")
	defaultRPCCertFile = filepath.Join(DefaultHomeDir, "rpc.cert")
	defaultElecKeyFile = filepath.Join(DefaultHomeDir, "electrum.key")
	defaultElecCert    = filepath.Join(DefaultHomeDir, "electrum.cert")
)

// Config is the node's configuration: the command-line flags and config-file
// options (go-flags, with btcd's option names, meanings and defaults), plus
// the values derived from them by Normalize.
//
// Build one with DefaultConfig and change fields, or with LoadConfig from
// command-line arguments; New normalizes it.
type Config struct {
	ConfigFile  string `short:"C" long:"configfile" description:"Path to configuration file"`
	DataDir     string `short:"b" long:"datadir" description:"Directory to store data"`
	LogDir      string `long:"logdir" description:"Directory to log output."`
	DebugLevel  string `short:"d" long:"debuglevel" description:"Logging level for all subsystems {trace, debug, info, warn, error, critical} -- You may also specify <subsystem>=<level>,<subsystem2>=<level>,... to set the log level for individual subsystems -- Use show to list available subsystems"`
	ShowVersion bool   `short:"V" long:"version" description:"Display version information and exit"`
	Profile     string `long:"profile" description:"Enable HTTP profiling on given port -- NOTE port must be between 1024 and 65536"`
	CPUProfile  string `long:"cpuprofile" description:"Write CPU profile to the specified file"`

	TestNet3       bool `long:"testnet" description:"Use the test network (version 3)"`
	TestNet4       bool `long:"testnet4" description:"Use the test network (version 4)"`
	SigNet         bool `long:"signet" description:"Use the signet test network"`
	RegressionTest bool `long:"regtest" description:"Use the regression test network"`
	SimNet         bool `long:"simnet" description:"Use the simulation test network"`

	Listeners           []string      `long:"listen" description:"Add an interface/port to listen for connections (default all interfaces port: 8333, testnet: 18333, regtest: 18444)"`
	DisableListen       bool          `long:"nolisten" description:"Disable listening for incoming connections -- NOTE: Listening is automatically disabled if the --connect option is used without also specifying listen interfaces via --listen"`
	ConnectPeers        []string      `long:"connect" description:"Connect only to the specified peers at startup"`
	AddPeers            []string      `short:"a" long:"addpeer" description:"Add a peer to connect with at startup"`
	DisableDNSSeed      bool          `long:"nodnsseed" description:"Disable DNS seeding for peers"`
	MaxPeers            int           `long:"maxpeers" description:"Max number of inbound and outbound peers"`
	BanDuration         time.Duration `long:"banduration" description:"How long to ban misbehaving peers.  Valid time units are {s, m, h}.  Minimum 1 second"`
	BanThreshold        uint32        `long:"banthreshold" description:"Maximum allowed ban score before disconnecting and banning misbehaving peers."`
	DisableBanning      bool          `long:"nobanning" description:"Disable banning of misbehaving peers"`
	BlocksOnly          bool          `long:"blocksonly" description:"Do not accept transactions from remote peers."`
	DisableStallHandler bool          `long:"nostalldetect" description:"Disables the stall handler system for each peer, useful in simnet/regtest integration tests frameworks"`
	DisableCheckpoints  bool          `long:"nocheckpoints" description:"Disable built-in checkpoints.  Don't do this unless you know what you're doing."`
	AddCheckpoints      []string      `long:"addcheckpoint" description:"Add a custom checkpoint.  Format: '<height>:<hash>'"`
	TrickleInterval     time.Duration `long:"trickleinterval" description:"Minimum time between attempts to send new inventory to a connected peer"`
	UserAgentComments   []string      `long:"uacomment" description:"Comment to add to the user agent -- See BIP 14 for more information."`
	V2Transport         bool          `long:"v2transport" description:"Enable P2P v2 encrypted transport protocol (BIP324) (default: false)"`

	RPCListeners         []string `long:"rpclisten" description:"Add an interface/port to listen for RPC connections (default port: 8334, testnet: 18334, regtest: 18334)"`
	RPCUser              string   `short:"u" long:"rpcuser" description:"Username for RPC connections"`
	RPCPass              string   `short:"P" long:"rpcpass" default-mask:"-" description:"Password for RPC connections"`
	RPCCert              string   `long:"rpccert" description:"File containing the certificate file"`
	RPCKey               string   `long:"rpckey" description:"File containing the certificate key"`
	RPCMaxClients        int      `long:"rpcmaxclients" description:"Max number of RPC clients for standard connections"`
	RPCMaxWebsockets     int      `long:"rpcmaxwebsockets" description:"Max number of RPC websocket connections"`
	RPCMaxConcurrentReqs int      `long:"rpcmaxconcurrentreqs" description:"Max number of concurrent RPC requests that may be processed concurrently"`
	RPCMaxRequestBytes   int64    `long:"rpcmaxrequestbytes" description:"Largest RPC request body or websocket message in bytes"`
	RPCMaxBatch          int      `long:"rpcmaxbatch" description:"Largest RPC batch in requests"`
	DisableTLS           bool     `long:"notls" description:"Disable TLS for the RPC server -- NOTE: This is only allowed if the RPC server is bound to localhost"`
	DisableRPC           bool     `long:"norpc" description:"Disable built-in RPC server -- NOTE: The RPC server is disabled by default if no rpcuser/rpcpass is specified"`

	Generate          bool     `long:"generate" description:"Generate (mine) bitcoins using the CPU"`
	MiningAddrs       []string `long:"miningaddr" description:"Add the specified payment address to the list of addresses to use for generated blocks -- At least one address is required if the generate option is set"`
	BlockMinSize      uint32   `long:"blockminsize" description:"Minimum block size in bytes to be used when creating a block"`
	BlockMaxSize      uint32   `long:"blockmaxsize" description:"Maximum block size in bytes to be used when creating a block"`
	BlockMinWeight    uint32   `long:"blockminweight" description:"Minimum block weight to be used when creating a block"`
	BlockMaxWeight    uint32   `long:"blockmaxweight" description:"Maximum block weight to be used when creating a block"`
	BlockPrioritySize uint32   `long:"blockprioritysize" description:"Size in bytes for high-priority/low-fee transactions when creating a block"`

	RegtestMineInterval time.Duration `long:"regtestmineinterval" description:"Mine a block every interval on regtest ({ms, s, m}), to the first --miningaddr or else to the faucet's address (0: off)"`

	MinRelayTxFee     float64 `long:"minrelaytxfee" description:"The minimum transaction fee in BTC/kB to be considered a non-zero fee."`
	FreeTxRelayLimit  float64 `long:"limitfreerelay" description:"Limit relay of transactions with no transaction fee to the given amount in thousands of bytes per minute"`
	NoRelayPriority   bool    `long:"norelaypriority" description:"Do not require free or low-fee transactions to have high priority for relaying"`
	MaxOrphanTxs      int     `long:"maxorphantx" description:"Max number of orphan transactions to keep in memory"`
	RejectNonStd      bool    `long:"rejectnonstd" description:"Reject non-standard transactions regardless of the default settings for the active network."`
	RelayNonStd       bool    `long:"relaynonstd" description:"Relay non-standard transactions regardless of the default settings for the active network."`
	RejectReplacement bool    `long:"rejectreplacement" description:"Reject transactions that attempt to replace existing transactions within the mempool through the Replace-By-Fee (RBF) signaling policy."`

	SigCacheMaxSize     uint   `long:"sigcachemaxsize" description:"The maximum number of entries in the signature verification cache"`
	UtxoCacheMaxSizeMiB uint   `long:"utxocachemaxsize" description:"The maximum size in MiB of the UTXO cache"`
	TxIndex             bool   `long:"txindex" description:"Maintain a full hash-based transaction index which makes all transactions available via the getrawtransaction RPC"`
	Prune               uint64 `long:"prune" description:"Prune already validated blocks from the database. Must specify a target size in MiB (minimum value of 1536, default value of 0 will disable pruning). Not possible with --txindex or --electrumindex"`

	ElectrumIndex        bool          `long:"electrumindex" description:"Maintain the Electrum index (script hash histories, unspent outputs, statuses) and serve the Electrum protocol. It also makes every confirmed transaction available to blockchain.transaction.get and getrawtransaction without --txindex"`
	ElectrumListeners    []string      `long:"electrumlisten" description:"Add an interface/port for Electrum connections over plain TCP (default 127.0.0.1:50001 when no Electrum listener is given)"`
	ElectrumTLSListeners []string      `long:"electrumtlslisten" description:"Add an interface/port for Electrum connections over TLS (port 50002 if none given)"`
	ElectrumWSListeners  []string      `long:"electrumwslisten" description:"Add an interface/port for Electrum connections over WebSocket (port 50003 if none given)"`
	ElectrumWSSListeners []string      `long:"electrumwsslisten" description:"Add an interface/port for Electrum connections over secure WebSocket (port 50004 if none given)"`
	ElectrumCert         string        `long:"electrumcert" description:"File containing the certificate for the Electrum TLS and WSS listeners (a self-signed pair is created when both files are missing)"`
	ElectrumKey          string        `long:"electrumkey" description:"File containing the key for the Electrum TLS and WSS listeners"`
	ElectrumProgress     time.Duration `long:"electrumprogress" description:"Interval of the Electrum index's progress log line while it catches up ({s, m, h})"`
	ElectrumServeMem     int           `long:"electrumservemem" description:"Memory in MiB the node may take, once started, on top of what it then holds: the Go garbage collector's soft limit while serving (0: none; at most 1048576, 1 TiB; GOMEMLIMIT, when set, takes precedence)"`
	ElectrumCache        int           `long:"electrumcache" description:"Memory in MiB for the block cache of the Electrum index's store (1 to 1048576)"`
	ElectrumUndoBlocks   int           `long:"electrumundoblocks" description:"How many of the newest blocks keep an undo record in the Electrum index (older blocks are undone from the block files, more slowly; 1 to 1000000)"`
	ElectrumVerify       bool          `long:"electrumverify" description:"Before serving, verify the Electrum index against the chain (every row recomputed from the blocks and spend journals) and log the result; the node exits with an error when they differ. The verifyelectrumindex RPC verifies a running node"`
	ElectrumCatchUpBatch int           `long:"electrumcatchupbatch" description:"Size in KiB of the Electrum index's catch-up batches (0: the default, 16384; at most 1048576, 1 GiB); small batches commit often"`
	ElectrumCatchUpMem   int           `long:"electrumcatchupmem" description:"Memory in MiB a large catch-up of the Electrum index (building it on an existing datadir, or a long way behind the chain) may take on top of what the node holds when it starts: the Go garbage collector's soft limit meanwhile (64 to 1048576; GOMEMLIMIT, when set, takes precedence)"`

	// BtcdOptions are btcd's index, filter and network routing options
	// (config_btcd.go).
	BtcdOptions

	// Electrum holds the protocol server's limit options.
	Electrum ElectrumLimits `group:"Electrum server limits"`

	// EsploraOptions are the Esplora HTTP API's options (esplora.go).
	EsploraOptions

	// MetricsListen is where the Prometheus endpoint listens (metrics.go).
	MetricsListen string `long:"metricslisten" description:"Serve Prometheus metrics at http://<address>/metrics (off when empty; a bare port such as 9100 listens on 127.0.0.1)"`

	// Interrupt, when closed, aborts New while it is catching indexes up
	// (the binary closes it on SIGINT/SIGTERM). Not a flag.
	Interrupt <-chan struct{} `no-flag:"true"`

	// AllowSelfConns turns off btcd's detection of connections to self,
	// which otherwise rejects peers between nodes of one process (tests
	// and in-process harnesses). Not a flag.
	AllowSelfConns bool `no-flag:"true"`

	// Derived by Normalize.
	params        *chaincfg.Params
	rpcPort       string
	netDataDir    string
	netLogDir     string
	miningAddrs   []address.Address
	checkpoints   []chaincfg.Checkpoint // from --addcheckpoint, in the order given
	minRelayTxFee btcutil.Amount
	normalized    bool
}

// DefaultConfig returns a configuration with every option at its default
// (mainnet, btcd's defaults, no listeners resolved yet).
func DefaultConfig() *Config {
	return &Config{
		ConfigFile:           defaultConfigFile,
		DataDir:              defaultDataDir,
		LogDir:               defaultLogDir,
		DebugLevel:           DefaultLogLevel,
		MaxPeers:             defaultMaxPeers,
		BanDuration:          defaultBanDuration,
		BanThreshold:         defaultBanThreshold,
		TrickleInterval:      peer.DefaultTrickleInterval,
		RPCCert:              defaultRPCCertFile,
		RPCKey:               defaultRPCKeyFile,
		RPCMaxClients:        defaultMaxRPCClients,
		RPCMaxWebsockets:     defaultMaxRPCWebsockets,
		RPCMaxConcurrentReqs: defaultMaxRPCConcurrentReqs,
		RPCMaxRequestBytes:   rpcext.DefaultMaxRequestBytes,
		RPCMaxBatch:          rpcext.DefaultMaxBatchRequests,
		BlockMinSize:         defaultBlockMinSize,
		BlockMaxSize:         defaultBlockMaxSize,
		BlockMinWeight:       defaultBlockMinWeight,
		BlockMaxWeight:       defaultBlockMaxWeight,
		BlockPrioritySize:    mempool.DefaultBlockPrioritySize,
		MinRelayTxFee:        mempool.DefaultMinRelayTxFee.ToBTC(),
		FreeTxRelayLimit:     defaultFreeTxRelayLimit,
		MaxOrphanTxs:         defaultMaxOrphanTxs,
		SigCacheMaxSize:      defaultSigCacheMaxSize,
		UtxoCacheMaxSizeMiB:  defaultUtxoCacheMaxSizeMiB,
		ElectrumCert:         defaultElecCert,
		ElectrumKey:          defaultElecKeyFile,
		ElectrumProgress:     indexers.DefaultProgressInterval,
		ElectrumServeMem:     DefaultServeMemory,
		ElectrumCache:        indexers.DefaultCacheMiB,
		ElectrumCatchUpMem:   indexers.DefaultCatchUpMemory,
		ElectrumUndoBlocks:   indexers.DefaultUndoBlocks,
		Electrum:             defaultElectrumLimits(),
	}
}

// LoadConfig builds the configuration as btcd does: defaults, then the
// config file (-C/--configfile; on regtest, simnet and signet only when
// given explicitly), then the command line, which takes precedence. It
// returns the normalized configuration and the arguments left over.
func LoadConfig(args []string) (*Config, []string, error) {
	cfg := DefaultConfig()

	// Pre-parse to find the config file and the network.
	preCfg := *cfg
	preParser := flags.NewParser(&preCfg, flags.HelpFlag|flags.PassDoubleDash)
	if _, err := preParser.ParseArgs(args); err != nil {
		var fe *flags.Error
		if errors.As(err, &fe) && fe.Type == flags.ErrHelp {
			return nil, nil, err
		}
	}
	if preCfg.ShowVersion {
		cfg.ShowVersion = true
		return cfg, nil, nil
	}

	// Errors are returned, not printed: the caller prints them once.
	parser := flags.NewParser(cfg, flags.HelpFlag|flags.PassDoubleDash)
	// Named with -C even when the name is the default path; only a
	// default file that does not exist is passed over (one the node's
	// user cannot read would leave its options silently unapplied).
	explicitConfig := preParser.FindOptionByLongName("configfile").IsSet()
	testNet := preCfg.RegressionTest || preCfg.SimNet || preCfg.SigNet
	if !testNet || explicitConfig {
		err := flags.NewIniParser(parser).ParseFile(cleanAndExpandPath(preCfg.ConfigFile))
		if err != nil && (explicitConfig || !errors.Is(err, os.ErrNotExist)) {
			return nil, nil, configFileError(preCfg.ConfigFile, err)
		}
	}
	// As btcd: peers from a config file are not added on regtest.
	if preCfg.RegressionTest {
		cfg.AddPeers = nil
	}

	remaining, err := parser.ParseArgs(args)
	if err != nil {
		return nil, nil, err
	}
	// As btcd, version counts on the command line only (handled above): in
	// the config file it would turn every start into printing the version.
	cfg.ShowVersion = false
	if err := cfg.Normalize(); err != nil {
		return nil, nil, err
	}
	return cfg, remaining, nil
}

// Normalize validates the configuration and derives the network, the
// per-network data and log directories (<datadir>/<netname>, as btcd), the
// default listen addresses and ports, the mining addresses and the relay fee.
// Calling it again is a no-op.
func (cfg *Config) Normalize() error {
	if cfg.normalized {
		return nil
	}
	numNets := 0
	cfg.params, cfg.rpcPort = &chaincfg.MainNetParams, "8334"
	if cfg.TestNet3 {
		numNets++
		cfg.params, cfg.rpcPort = &chaincfg.TestNet3Params, "18334"
	}
	if cfg.TestNet4 {
		numNets++
		cfg.params, cfg.rpcPort = &chaincfg.TestNet4Params, "48334"
	}
	if cfg.RegressionTest {
		numNets++
		cfg.params, cfg.rpcPort = &chaincfg.RegressionNetParams, "18334"
	}
	if cfg.SimNet {
		numNets++
		cfg.params, cfg.rpcPort = &chaincfg.SimNetParams, "18556"
	}
	if cfg.SigNet {
		numNets++
		cfg.params, cfg.rpcPort = &chaincfg.SigNetParams, "38332"
	}
	// Nodes of one process (the integration harness) each get their own.
	cfg.params = netparams.Own(cfg.params)
	if numNets > 1 {
		return errors.New("the testnet, testnet4, regtest, signet and simnet options can not be used together -- choose one of the five")
	}
	if err := cfg.normalizeBtcd(); err != nil {
		return err
	}
	if cfg.SimNet {
		// As btcd: simnet never looks for peers by itself.
		cfg.DisableDNSSeed = true
	}

	if cfg.DataDir == "" || cfg.LogDir == "" {
		return errors.New("datadir and logdir must not be empty")
	}
	cfg.netDataDir = filepath.Join(cleanAndExpandPath(cfg.DataDir), NetName(cfg.params))
	cfg.netLogDir = filepath.Join(cleanAndExpandPath(cfg.LogDir), NetName(cfg.params))
	cfg.RPCCert = cleanAndExpandPath(cfg.RPCCert)
	cfg.RPCKey = cleanAndExpandPath(cfg.RPCKey)
	cfg.ElectrumCert = cleanAndExpandPath(cfg.ElectrumCert)
	cfg.ElectrumKey = cleanAndExpandPath(cfg.ElectrumKey)
	for _, p := range []struct {
		option string
		path   *string
	}{{"cpuprofile", &cfg.CPUProfile}, {"memprofile", &cfg.MemoryProfile}, {"traceprofile", &cfg.TraceProfile}} {
		if *p.path == "" {
			continue
		}
		*p.path = cleanAndExpandPath(*p.path)
		// The binary creates the file after the log directory (<logdir>/<net>):
		// any other directory that is not there is found now, before
		// anything is opened.
		dir := filepath.Dir(*p.path)
		if dir == cfg.netLogDir || dir == filepath.Dir(cfg.netLogDir) {
			continue
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("--%s=%s: there is no directory %s to write it in", p.option, *p.path, dir)
		}
	}

	if cfg.MaxPeers <= 0 {
		return fmt.Errorf("maxpeers must be greater than zero: %d", cfg.MaxPeers)
	}
	if cfg.BanDuration < time.Second {
		return fmt.Errorf("banduration %v is below the minimum of 1 second", cfg.BanDuration)
	}
	if cfg.RejectNonStd && cfg.RelayNonStd {
		return errors.New("rejectnonstd and relaynonstd cannot be used together -- choose only one")
	}
	if cfg.SigCacheMaxSize == 0 {
		cfg.SigCacheMaxSize = defaultSigCacheMaxSize
	}

	if cfg.Prune != 0 && cfg.Prune < pruneMinSize {
		return fmt.Errorf("the minimum value for --prune is %d MiB, not %d", pruneMinSize, cfg.Prune)
	}
	for _, o := range []struct {
		name           string
		v, least, most int
	}{
		{"electrumservemem", cfg.ElectrumServeMem, 0, maxElectrumMiB},
		{"electrumcache", cfg.ElectrumCache, 1, maxElectrumMiB},
		{"electrumcatchupmem", cfg.ElectrumCatchUpMem, 64, maxElectrumMiB}, // a catch-up needs 64 MiB
		{"electrumundoblocks", cfg.ElectrumUndoBlocks, 1, maxUndoBlocks},
		{"electrumcatchupbatch", cfg.ElectrumCatchUpBatch, 0, maxElectrumMiB}, // KiB: at most 1 GiB
	} {
		if o.v < o.least || o.v > o.most {
			return fmt.Errorf("--%s=%d: must be from %d to %d", o.name, o.v, o.least, o.most)
		}
	}
	// A drop run listens nowhere and verifies nothing: the config file's
	// listeners and verification, kept for the runs after it, are let be.
	drop := cfg.DropRequested()
	if cfg.ElectrumVerify && !cfg.ElectrumIndex && !drop {
		return errors.New("--electrumverify verifies the Electrum index: it needs --electrumindex")
	}
	if cfg.Prune != 0 && (cfg.TxIndex || cfg.ElectrumIndex) {
		return errors.New("--prune cannot be used with --txindex or --electrumindex: indexes need every block and spend journal")
	}

	if cfg.ElectrumProgress <= 0 {
		return fmt.Errorf("electrumprogress must be positive, not %v", cfg.ElectrumProgress)
	}

	checkpoints, err := parseCheckpoints(cfg.AddCheckpoints)
	if err != nil {
		return fmt.Errorf("error parsing checkpoints: %w", err)
	}
	cfg.checkpoints = checkpoints

	amt, err := btcutil.NewAmount(cfg.MinRelayTxFee)
	if err != nil || amt < 0 {
		return fmt.Errorf("invalid minrelaytxfee %v -- want a fee in BTC/kB, 0 or more", cfg.MinRelayTxFee)
	}
	cfg.minRelayTxFee = amt

	cfg.miningAddrs = cfg.miningAddrs[:0]
	for _, s := range cfg.MiningAddrs {
		addr, err := address.DecodeAddress(s, cfg.params)
		if err != nil {
			return fmt.Errorf("mining address %q: %w", s, err)
		}
		if !addr.IsForNet(cfg.params) {
			return fmt.Errorf("mining address %q is on the wrong network", s)
		}
		cfg.miningAddrs = append(cfg.miningAddrs, addr)
	}

	if err := cfg.checkRegtestMining(); err != nil {
		return err
	}

	if cfg.Generate && len(cfg.miningAddrs) == 0 {
		return errors.New("--generate requires at least one --miningaddr")
	}

	// --connect means "only these peers", and --proxy that peers reach us
	// through it, not directly: no listening unless asked for, as in btcd.
	if (len(cfg.ConnectPeers) > 0 || cfg.Proxy != "") && len(cfg.Listeners) == 0 {
		cfg.DisableListen = true
	}
	if len(cfg.Listeners) == 0 {
		cfg.Listeners = []string{net.JoinHostPort("", cfg.params.DefaultPort)}
	}
	cfg.Listeners = normalizeAddresses(cfg.Listeners, cfg.params.DefaultPort)
	cfg.ConnectPeers = normalizeAddresses(cfg.ConnectPeers, cfg.params.DefaultPort)
	cfg.AddPeers = normalizeAddresses(cfg.AddPeers, cfg.params.DefaultPort)

	// As btcd: without credentials there is no RPC server.
	if cfg.RPCUser == "" && cfg.RPCPass == "" && cfg.RPCLimitUser == "" && cfg.RPCLimitPass == "" {
		cfg.DisableRPC = true
	}
	// A user name is no secret: unlike btcd, a user without a password is
	// refused rather than let anyone who knows the name in.
	if !cfg.DisableRPC && cfg.RPCUser != "" && cfg.RPCPass == "" {
		return errors.New("--rpcuser needs --rpcpass: with an empty password anyone who knows the user name could use the RPC server")
	}
	if !cfg.DisableRPC && cfg.RPCLimitUser != "" && cfg.RPCLimitPass == "" {
		return errors.New("--rpclimituser needs --rpclimitpass: with an empty password anyone who knows the user name could use the RPC server")
	}
	// btcd counts only whole pairs; half a pair here would let in a
	// client with an empty user name, so it is refused too.
	if !cfg.DisableRPC && cfg.RPCPass != "" && cfg.RPCUser == "" {
		return errors.New("--rpcpass needs --rpcuser")
	}
	if !cfg.DisableRPC && cfg.RPCLimitPass != "" && cfg.RPCLimitUser == "" {
		return errors.New("--rpclimitpass needs --rpclimituser")
	}
	if cfg.RPCMaxRequestBytes <= 0 {
		return fmt.Errorf("--rpcmaxrequestbytes=%d: want a positive number of bytes", cfg.RPCMaxRequestBytes)
	}
	if cfg.RPCMaxBatch <= 0 {
		return fmt.Errorf("--rpcmaxbatch=%d: want a positive number of requests", cfg.RPCMaxBatch)
	}
	if len(cfg.RPCListeners) == 0 {
		cfg.RPCListeners = []string{net.JoinHostPort("localhost", cfg.rpcPort)}
	}
	cfg.RPCListeners = normalizeAddresses(cfg.RPCListeners, cfg.rpcPort)
	if cfg.DisableTLS && !cfg.DisableRPC {
		for _, addr := range cfg.RPCListeners {
			if !isLoopback(addr) {
				return fmt.Errorf("--notls is only allowed when the RPC server listens on localhost, not %s", addr)
			}
		}
	}

	// A listener without the index would have nothing to serve: refused,
	// as --esploralisten is, rather than left unopened.
	if !cfg.ElectrumIndex && !drop {
		for _, o := range []listenOption{{option: "electrumlisten", addrs: cfg.ElectrumListeners},
			{option: "electrumtlslisten", addrs: cfg.ElectrumTLSListeners},
			{option: "electrumwslisten", addrs: cfg.ElectrumWSListeners},
			{option: "electrumwsslisten", addrs: cfg.ElectrumWSSListeners}} {
			if len(o.addrs) > 0 {
				return fmt.Errorf("--%s serves the Electrum protocol from the Electrum index: it needs --electrumindex", o.option)
			}
		}
	}
	if cfg.ElectrumIndex && len(cfg.ElectrumListeners)+len(cfg.ElectrumTLSListeners)+
		len(cfg.ElectrumWSListeners)+len(cfg.ElectrumWSSListeners) == 0 {
		cfg.ElectrumListeners = []string{net.JoinHostPort("127.0.0.1", defaultElectrumTCPPort)}
	}
	cfg.ElectrumListeners = normalizeAddresses(cfg.ElectrumListeners, defaultElectrumTCPPort)
	cfg.ElectrumTLSListeners = normalizeAddresses(cfg.ElectrumTLSListeners, defaultElectrumTLSPort)
	cfg.ElectrumWSListeners = normalizeAddresses(cfg.ElectrumWSListeners, defaultElectrumWSPort)
	cfg.ElectrumWSSListeners = normalizeAddresses(cfg.ElectrumWSSListeners, defaultElectrumWSSPort)

	if err := cfg.Electrum.validate(); err != nil {
		return err
	}
	if cfg.MetricsListen, err = normalizeMetricsListen(cfg.MetricsListen); err != nil {
		return err
	}
	if err := cfg.normalizeEsplora(); err != nil {
		return err
	}
	if err := cfg.validateListeners(); err != nil {
		return err
	}
	if len(cfg.ElectrumTLSListeners)+len(cfg.ElectrumWSSListeners)+len(cfg.EsploraTLSListeners) > 0 {
		if err := checkCertPair("electrumcert", cfg.ElectrumCert, "electrumkey", cfg.ElectrumKey, loadElectrumPair); err != nil {
			return err
		}
	}
	if !cfg.DisableRPC && !cfg.DisableTLS {
		if err := checkCertPair("rpccert", cfg.RPCCert, "rpckey", cfg.RPCKey, loadRPCPair); err != nil {
			return err
		}
	}
	if err := validateLogLevels(cfg.DebugLevel); err != nil && cfg.DebugLevel != "show" {
		return err
	}
	cfg.normalized = true
	return nil
}

// Params returns the active network's parameters (after Normalize).
func (cfg *Config) Params() *chaincfg.Params { return cfg.params }

// NetDataDir returns <datadir>/<netname>, where the block database and the
// peer address file live (after Normalize).
func (cfg *Config) NetDataDir() string { return cfg.netDataDir }

// NetLogDir returns <logdir>/<netname> (after Normalize).
func (cfg *Config) NetLogDir() string { return cfg.netLogDir }

// LogFile returns the path of the node's log file (after Normalize).
func (cfg *Config) LogFile() string { return filepath.Join(cfg.netLogDir, defaultLogFilename) }

// NetName returns the directory name btcd uses for a network: "testnet" for
// testnet3 (for historical reasons) and the parameters' name otherwise.
func NetName(params *chaincfg.Params) string {
	if params.Net == wire.TestNet3 {
		return "testnet"
	}
	return params.Name
}

// cleanAndExpandPath expands a leading ~ and environment variables and
// cleans the result.
func cleanAndExpandPath(path string) string {
	if path == "" {
		return ""
	}
	if strings.HasPrefix(path, "~") {
		if home, err := os.UserHomeDir(); err == nil {
			path = strings.Replace(path, "~", home, 1)
		}
	}
	return filepath.Clean(os.ExpandEnv(path))
}

// normalizeAddresses adds defaultPort to every address without a port and
// removes duplicates, keeping the first occurrence.
func normalizeAddresses(addrs []string, defaultPort string) []string {
	seen := make(map[string]bool, len(addrs))
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			a = net.JoinHostPort(unbracket(a), defaultPort)
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// unbracket removes one pair of brackets around host, as an IPv6 address
// is written without a port ("[::1]"): net.JoinHostPort adds its own.
func unbracket(host string) string {
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		return host[1 : len(host)-1]
	}
	return host
}

// isLoopback reports whether a host:port address names the local host only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parseCheckpoints parses --addcheckpoint values, each "<height>:<hash>"
// as in btcd.
func parseCheckpoints(strs []string) ([]chaincfg.Checkpoint, error) {
	var out []chaincfg.Checkpoint
	for _, s := range strs {
		heightStr, hashStr, ok := strings.Cut(s, ":")
		if !ok || strings.Contains(hashStr, ":") {
			return nil, fmt.Errorf("unable to parse checkpoint %q -- use the syntax <height>:<hash>", s)
		}
		height, err := strconv.ParseInt(heightStr, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("unable to parse checkpoint %q due to malformed height", s)
		}
		if hashStr == "" {
			return nil, fmt.Errorf("unable to parse checkpoint %q due to missing hash", s)
		}
		hash, err := chainhash.NewHashFromStr(hashStr)
		if err != nil {
			return nil, fmt.Errorf("unable to parse checkpoint %q due to malformed hash", s)
		}
		out = append(out, chaincfg.Checkpoint{Height: int32(height), Hash: hash})
	}
	return out, nil
}

// mergeCheckpoints returns the network's checkpoints with the added ones, in
// height order. An added checkpoint replaces the network's at its height, and
// of added checkpoints at one height the last given wins (as btcd).
func mergeCheckpoints(network, added []chaincfg.Checkpoint) []chaincfg.Checkpoint {
	if len(added) == 0 {
		return network
	}
	byHeight := make(map[int32]chaincfg.Checkpoint, len(added))
	for _, c := range added {
		byHeight[c.Height] = c
	}
	out := make([]chaincfg.Checkpoint, 0, len(network)+len(byHeight))
	for _, c := range network {
		if _, ok := byHeight[c.Height]; !ok {
			out = append(out, c)
		}
	}
	for _, c := range byHeight {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b chaincfg.Checkpoint) int { return cmp.Compare(a.Height, b.Height) })
	return out
}

// Checkpoints returns the checkpoints the chain is built with: none with
// --nocheckpoints, otherwise the network's merged with --addcheckpoint
// (after Normalize).
func (cfg *Config) Checkpoints() []chaincfg.Checkpoint {
	if cfg.DisableCheckpoints {
		return nil
	}
	return mergeCheckpoints(cfg.params.Checkpoints, cfg.checkpoints)
}

// utxoCacheBytes is the UTXO cache size in bytes for blockchain.Config.
func (cfg *Config) utxoCacheBytes() uint64 {
	return uint64(cfg.UtxoCacheMaxSizeMiB) * 1024 * 1024
}

// maxSigOpCostPerTx is btcd's mempool policy limit.
const maxSigOpCostPerTx = blockchain.MaxBlockSigOpsCost / 4

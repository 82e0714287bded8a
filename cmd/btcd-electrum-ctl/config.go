package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/btcsuite/btcd/btcutil/v2"
	flags "github.com/jessevdk/go-flags"
)

// The options are btcctl's, with this project's directories: the config
// file is ~/.btcd-electrum-ctl/btcd-electrum-ctl.conf, and when it does not
// exist the RPC credentials are taken from the node's own config file
// (~/.btcd-electrum/btcd-electrum.conf), as btcctl takes them from btcd's.

var (
	// ctlHomeDir holds this command's config file.
	ctlHomeDir = btcutil.AppDataDir("btcd-electrum-ctl", false)
	// nodeHomeDir is the node's home (its config file and RPC certificate).
	nodeHomeDir = btcutil.AppDataDir("btcd-electrum", false)

	defaultConfigFile     = filepath.Join(ctlHomeDir, "btcd-electrum-ctl.conf")
	defaultNodeConfigFile = filepath.Join(nodeHomeDir, "btcd-electrum.conf")
	defaultRPCCertFile    = filepath.Join(nodeHomeDir, "rpc.cert")
)

// config holds the command-line and config-file options.
type config struct {
	ConfigFile     string `short:"C" long:"configfile" description:"Path to configuration file"`
	ListCommands   bool   `short:"l" long:"listcommands" description:"List all of the supported commands and exit"`
	NoTLS          bool   `long:"notls" description:"Disable TLS"`
	Proxy          string `long:"proxy" description:"Connect via SOCKS5 proxy (eg. 127.0.0.1:9050)"`
	ProxyUser      string `long:"proxyuser" description:"Username for proxy server"`
	ProxyPass      string `long:"proxypass" default-mask:"-" description:"Password for proxy server"`
	RegressionTest bool   `long:"regtest" description:"Connect to the regression test network"`
	RPCCert        string `short:"c" long:"rpccert" description:"RPC server certificate chain for validation"`
	RPCPassword    string `short:"P" long:"rpcpass" default-mask:"-" description:"RPC password"`
	RPCServer      string `short:"s" long:"rpcserver" description:"RPC server to connect to"`
	RPCUser        string `short:"u" long:"rpcuser" description:"RPC username"`
	SimNet         bool   `long:"simnet" description:"Connect to the simulation test network"`
	TLSSkipVerify  bool   `long:"skipverify" description:"Do not verify tls certificates (not recommended!)"`
	TestNet3       bool   `long:"testnet" description:"Connect to testnet (version 3)"`
	TestNet4       bool   `long:"testnet4" description:"Connect to testnet (version 4)"`
	SigNet         bool   `long:"signet" description:"Connect to signet"`
	ShowVersion    bool   `short:"V" long:"version" description:"Display version information and exit"`
}

// rpcPort returns the node's default RPC port for the network flag given
// (mainnet when none is).
func (c *config) rpcPort() (string, error) {
	port, n := "8334", 0
	for _, net := range []struct {
		set  bool
		port string
	}{{c.TestNet3, "18334"}, {c.TestNet4, "48334"}, {c.RegressionTest, "18334"}, {c.SimNet, "18556"}, {c.SigNet, "38332"}} {
		if net.set {
			port = net.port
			n++
		}
	}
	if n > 1 {
		return "", errors.New("the testnet, testnet4, regtest, signet and simnet options can not be used together -- choose one of the five")
	}
	return port, nil
}

// loadConfig reads the defaults, the config file and the command line (which
// wins) and returns the options and the arguments left (the method and its
// parameters).
func loadConfig(args []string) (*config, []string, error) {
	cfg := &config{ConfigFile: defaultConfigFile, RPCCert: defaultRPCCertFile}

	pre := *cfg
	if _, err := flags.NewParser(&pre, flags.HelpFlag|flags.PassDoubleDash|flags.IgnoreUnknown).ParseArgs(args); err != nil {
		return nil, nil, err
	}
	if pre.ShowVersion || pre.ListCommands {
		return &pre, nil, nil
	}

	parser := flags.NewParser(cfg, flags.HelpFlag|flags.PassDoubleDash)
	explicit := pre.ConfigFile != defaultConfigFile
	file := expandPath(pre.ConfigFile)
	if _, err := os.Stat(file); err == nil {
		if err := flags.NewIniParser(parser).ParseFile(file); err != nil {
			return nil, nil, fmt.Errorf("config file %s: %w", file, err)
		}
	} else if explicit {
		return nil, nil, fmt.Errorf("config file %s: %w", file, err)
	} else if err := credentialsFromNodeConfig(cfg); err != nil {
		return nil, nil, err
	}
	rest, err := parser.ParseArgs(args)
	if err != nil {
		return nil, nil, err
	}
	port, err := cfg.rpcPort()
	if err != nil {
		return nil, nil, err
	}
	if cfg.RPCServer == "" {
		cfg.RPCServer = "localhost"
	}
	if _, _, err := net.SplitHostPort(cfg.RPCServer); err != nil {
		// An IPv6 address without a port is written in brackets
		// ("[::1]"); net.JoinHostPort adds its own.
		host := cfg.RPCServer
		if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
			host = host[1 : len(host)-1]
		}
		cfg.RPCServer = net.JoinHostPort(host, port)
	}
	cfg.RPCCert = expandPath(cfg.RPCCert)
	return cfg, rest, nil
}

// credentialsFromNodeConfig takes rpcuser, rpcpass and notls from the node's
// config file when it exists.
func credentialsFromNodeConfig(cfg *config) error {
	// Read as the node reads it (go-flags' ini parser: sections, quoted
	// values), so both see the same credentials.
	var node struct {
		RPCUser string `long:"rpcuser"`
		RPCPass string `long:"rpcpass"`
		NoTLS   bool   `long:"notls"`
	}
	p := flags.NewParser(&node, flags.IgnoreUnknown)
	if err := flags.NewIniParser(p).ParseFile(defaultNodeConfigFile); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("node config file %s: %w", defaultNodeConfigFile, err)
	}
	// As btcctl takes it from btcd's: a node serving plain HTTP on
	// loopback is reached without --notls each time.
	cfg.NoTLS = cfg.NoTLS || node.NoTLS
	if node.RPCUser != "" {
		cfg.RPCUser = node.RPCUser
	}
	if node.RPCPass != "" {
		cfg.RPCPassword = node.RPCPass
	}
	return nil
}

// expandPath expands a leading ~ and environment variables.
func expandPath(p string) string {
	if strings.HasPrefix(p, "~") {
		if home, err := os.UserHomeDir(); err == nil {
			p = home + p[1:]
		}
	}
	return filepath.Clean(os.ExpandEnv(p))
}

package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// writeConfigFile writes a config file and returns the --configfile flag
// naming it.
func writeConfigFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "btcd-electrum.conf")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return "--configfile=" + p
}

// TestLoadConfigNetworks pins btcd's per-network directory names and default
// ports.
func TestLoadConfigNetworks(t *testing.T) {
	tests := []struct {
		flag, dir, p2p, rpc string
	}{
		{"", "mainnet", ":8333", "localhost:8334"},
		{"--testnet", "testnet", ":18333", "localhost:18334"},
		{"--testnet4", "testnet4", ":48333", "localhost:48334"},
		{"--regtest", "regtest", ":18444", "localhost:18334"},
		{"--simnet", "simnet", ":18555", "localhost:18556"},
		{"--signet", "signet", ":38333", "localhost:38332"},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			args := []string{writeConfigFile(t, ""), "--datadir=/d", "--logdir=/l"}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			cfg, _, err := LoadConfig(args)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.NetDataDir(); got != filepath.Join("/d", tc.dir) {
				t.Errorf("data dir %s, want /d/%s", got, tc.dir)
			}
			if got := BlockDBPath(cfg.NetDataDir()); got != filepath.Join("/d", tc.dir, "blocks_ffldb") {
				t.Errorf("block database %s", got)
			}
			if got := cfg.LogFile(); got != filepath.Join("/l", tc.dir, "btcd-electrum.log") {
				t.Errorf("log file %s", got)
			}
			if len(cfg.Listeners) != 1 || cfg.Listeners[0] != tc.p2p {
				t.Errorf("P2P listeners %v, want %s", cfg.Listeners, tc.p2p)
			}
			if len(cfg.RPCListeners) != 1 || cfg.RPCListeners[0] != tc.rpc {
				t.Errorf("RPC listeners %v, want %s", cfg.RPCListeners, tc.rpc)
			}
		})
	}
}

// TestLoadConfigFileAndFlags checks that the command line overrides the
// config file, and btcd's derived defaults.
func TestLoadConfigFileAndFlags(t *testing.T) {
	file := writeConfigFile(t, "rpcuser=fromfile\nrpcpass=secret\nmaxpeers=7\nelectrumindex=1\n")
	cfg, _, err := LoadConfig([]string{file, "--regtest", "--maxpeers=9",
		"--rpclisten=127.0.0.1", "--connect=10.0.0.1", "--debuglevel=SYNC=debug,ELEC=trace"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RPCUser != "fromfile" || cfg.RPCPass != "secret" || !cfg.ElectrumIndex {
		t.Errorf("config file values not applied: %+v", cfg)
	}
	if cfg.MaxPeers != 9 {
		t.Errorf("maxpeers %d, want the command line's 9", cfg.MaxPeers)
	}
	if cfg.DisableRPC {
		t.Error("RPC disabled although credentials are set")
	}
	if cfg.RPCListeners[0] != "127.0.0.1:18334" {
		t.Errorf("rpclisten %v", cfg.RPCListeners)
	}
	if !cfg.DisableListen {
		t.Error("--connect without --listen still listens")
	}
	if cfg.ConnectPeers[0] != "10.0.0.1:18444" {
		t.Errorf("connect %v", cfg.ConnectPeers)
	}
	if len(cfg.ElectrumListeners) != 1 || cfg.ElectrumListeners[0] != "127.0.0.1:50001" {
		t.Errorf("default Electrum listener %v", cfg.ElectrumListeners)
	}
	if cfg.ElectrumCatchUpMem != indexers.DefaultCatchUpMemory {
		t.Errorf("catch-up memory %d MiB, want the default %d", cfg.ElectrumCatchUpMem, indexers.DefaultCatchUpMemory)
	}

	// Without credentials there is no RPC server, as btcd.
	cfg, _, err = LoadConfig([]string{writeConfigFile(t, ""), "--regtest"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DisableRPC {
		t.Error("RPC enabled without credentials")
	}
}

// TestLoadConfigRejects lists option combinations the node refuses.
func TestLoadConfigRejects(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"two networks", []string{"--regtest", "--simnet"}, "can not be used together"},
		{"bad level", []string{"--regtest", "--debuglevel=loud"}, "invalid"},
		{"bad subsystem", []string{"--regtest", "--debuglevel=NOPE=info"}, "subsystem"},
		{"mainnet mining address on regtest", []string{"--regtest", "--miningaddr=1BoatSLRHtKNngkdXEeobR76b53LETtpyT"}, "mining address"},
		{"notls off localhost", []string{"--regtest", "--rpcuser=u", "--rpcpass=p", "--notls", "--rpclisten=0.0.0.0"}, "--notls"},
		{"tiny maxsend", []string{"--regtest", "--electrummaxsend=1000"}, "electrummaxsend"},
		{"catch-up memory too small", []string{"--regtest", "--electrumcatchupmem=50"}, "--electrumcatchupmem"},
		{"no peers", []string{"--regtest", "--maxpeers=0"}, "maxpeers"},
		{"prune too small", []string{"--regtest", "--prune=100"}, "--prune"},
		{"prune with the Electrum index", []string{"--regtest", "--prune=2000", "--electrumindex"}, "--prune"},
		{"generate without address", []string{"--regtest", "--generate"}, "--miningaddr"},
		{"unknown flag", []string{"--regtest", "--nosuchflag"}, "unknown flag"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadConfig(append([]string{writeConfigFile(t, "")}, tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

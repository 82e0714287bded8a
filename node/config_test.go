package node

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"

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
	if cfg.ElectrumCache != indexers.DefaultCacheMiB || cfg.ElectrumUndoBlocks != indexers.DefaultUndoBlocks {
		t.Errorf("store cache %d MiB, undo blocks %d, want the defaults %d and %d", cfg.ElectrumCache,
			cfg.ElectrumUndoBlocks, indexers.DefaultCacheMiB, indexers.DefaultUndoBlocks)
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
		{"RPC user without password", []string{"--regtest", "--rpcuser=u"}, "--rpcpass"},
		{"RPC limited user without password", []string{"--regtest", "--rpcuser=u", "--rpcpass=p", "--rpclimituser=l"}, "--rpclimitpass"},
		{"notls off localhost", []string{"--regtest", "--rpcuser=u", "--rpcpass=p", "--notls", "--rpclisten=0.0.0.0"}, "--notls"},
		{"tiny maxsend", []string{"--regtest", "--electrummaxsend=1000"}, "electrummaxsend"},
		{"no store cache", []string{"--regtest", "--electrumcache=0"}, "--electrumcache"},
		{"no undo records", []string{"--regtest", "--electrumundoblocks=0"}, "--electrumundoblocks"},
		{"negative serving memory", []string{"--regtest", "--electrumservemem=-1"}, "--electrumservemem"},
		{"serving memory past bytes", []string{"--regtest", "--electrumservemem=17592186044416"}, "--electrumservemem"},
		{"catch-up memory past bytes", []string{"--regtest", "--electrumcatchupmem=17592186044416"}, "--electrumcatchupmem"},
		{"store cache past bytes", []string{"--regtest", "--electrumcache=17592186044416"}, "--electrumcache"},
		{"undo blocks past heights", []string{"--regtest", "--electrumundoblocks=4294967295"}, "--electrumundoblocks"},
		{"batch past bytes", []string{"--regtest", "--electrumcatchupbatch=18014398509481984"}, "--electrumcatchupbatch"},
		{"no peers", []string{"--regtest", "--maxpeers=0"}, "maxpeers"},
		{"prune too small", []string{"--regtest", "--prune=100"}, "--prune"},
		{"prune with the Electrum index", []string{"--regtest", "--prune=2000", "--electrumindex"}, "--prune"},
		{"generate without address", []string{"--regtest", "--generate"}, "--miningaddr"},
		{"unknown flag", []string{"--regtest", "--nosuchflag"}, "unknown flag"},
		{"exempt net not a network", []string{"--regtest", "--electrumexemptnets=127.0.0.0/8,localhost"}, "--electrumexemptnets"},
		{"exempt net bad mask", []string{"--regtest", "--electrumexemptnets=10.0.0.0/33"}, "--electrumexemptnets"},
		{"password without user", []string{"--regtest", "--rpcpass=secret"}, "--rpcpass needs --rpcuser"},
		{"limited password without user", []string{"--regtest", "--rpcuser=a", "--rpcpass=b", "--rpclimitpass=c"}, "--rpclimitpass needs --rpclimituser"},
		{"exempt none with a network", []string{"--regtest", "--electrumexemptnets=none,10.0.0.0/8"}, "--electrumexemptnets"},
		{"exempt none repeated with a network", []string{"--regtest", "--electrumexemptnets=10.0.0.0/8", "--electrumexemptnets=none"}, "--electrumexemptnets"},
		{"metrics address", []string{"--regtest", "--metricslisten=127.0.0.1:notaport"}, "--metricslisten"},
		{"electrum listener", []string{"--regtest", "--electrumindex", "--electrumtlslisten=0.0.0.0:5O002"}, "--electrumtlslisten"},
		{"rpc listener", []string{"--regtest", "--rpclisten=127.0.0.1:99999"}, "--rpclisten"},
		{"limited user shares the password", []string{"--regtest", "--rpcuser=a", "--rpcpass=same", "--rpclimituser=l", "--rpclimitpass=same"}, "--rpclimitpass"},
		{"limited user shares the name", []string{"--regtest", "--rpcuser=same", "--rpcpass=a", "--rpclimituser=same", "--rpclimitpass=b"}, "--rpclimituser"},
		{"negative orphans", []string{"--regtest", "--maxorphantx=-1"}, "--maxorphantx"},
		{"user agent comment", []string{"--regtest", "--uacomment=evil/1.0:(x)"}, "--uacomment"},
		{"profile port not a number", []string{"--regtest", "--profile=notaport"}, "--profile"},
		{"profile port below 1024", []string{"--regtest", "--profile=80"}, "--profile"},
		{"block size", []string{"--regtest", "--blockmaxsize=10"}, "--blockmaxsize"},
		{"block weight", []string{"--regtest", "--blockmaxweight=4000000"}, "--blockmaxweight"},
		{"negative rpcmaxclients", []string{"--regtest", "--rpcmaxclients=-5"}, "--rpcmaxclients"},
		{"negative rpcmaxwebsockets", []string{"--regtest", "--rpcmaxwebsockets=-5"}, "--rpcmaxwebsockets"},
		{"negative rpcmaxconcurrentreqs", []string{"--regtest", "--rpcmaxconcurrentreqs=-5"}, "--rpcmaxconcurrentreqs"},
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

// TestBlockSizeAndWeightDerived: as btcd, a block weight given alone lets
// the weight decide, and a block size given alone sets the weight it
// implies.
func TestBlockSizeAndWeightDerived(t *testing.T) {
	cfg, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--blockmaxweight=3996000"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BlockMaxSize != 999000 || cfg.BlockMaxWeight != 3996000 {
		t.Errorf("--blockmaxweight=3996000: size %d, weight %d; want 999000, 3996000", cfg.BlockMaxSize, cfg.BlockMaxWeight)
	}
	cfg, _, err = LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--blockmaxsize=500000", "--blockminsize=600000"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BlockMaxWeight != 2000000 || cfg.BlockMinSize != 500000 {
		t.Errorf("--blockmaxsize=500000: weight %d, min size %d; want 2000000, 500000", cfg.BlockMaxWeight, cfg.BlockMinSize)
	}
}

// TestAddCheckpoint checks --addcheckpoint as btcd has it: "<height>:<hash>",
// repeatable, merged into the network's checkpoints in height order, an added
// checkpoint replacing the network's at its height and the last given
// winning among added ones; bad syntax is refused with btcd's messages.
func TestAddCheckpoint(t *testing.T) {
	const (
		h1 = "0000000000000000000000000000000000000000000000000000000000000001"
		h2 = "0000000000000000000000000000000000000000000000000000000000000002"
		h3 = "0000000000000000000000000000000000000000000000000000000000000003"
	)
	cfg, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--simnet",
		"--addcheckpoint=500:" + h1, "--addcheckpoint=20:" + h2, "--addcheckpoint=500:" + h3})
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Checkpoints()
	if len(got) != 2 || got[0].Height != 20 || got[0].Hash.String() != h2 ||
		got[1].Height != 500 || got[1].Hash.String() != h3 {
		t.Fatalf("simnet checkpoints %v", got)
	}

	// On mainnet the added ones join the built-in list; one at a built-in
	// height replaces it.
	builtin := chaincfg.MainNetParams.Checkpoints
	cfg, _, err = LoadConfig([]string{writeConfigFile(t, ""), "--datadir=/d",
		"--addcheckpoint=" + strconv.Itoa(int(builtin[1].Height)) + ":" + h1, "--addcheckpoint=1:" + h2})
	if err != nil {
		t.Fatal(err)
	}
	got = cfg.Checkpoints()
	if len(got) != len(builtin)+1 {
		t.Fatalf("%d checkpoints, want %d", len(got), len(builtin)+1)
	}
	if got[0].Height != 1 || got[0].Hash.String() != h2 {
		t.Errorf("first checkpoint %d %v", got[0].Height, got[0].Hash)
	}
	if got[2].Height != builtin[1].Height || got[2].Hash.String() != h1 {
		t.Errorf("replaced checkpoint %d %v", got[2].Height, got[2].Hash)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Height <= got[i-1].Height {
			t.Fatalf("checkpoints out of order at %d: %d after %d", i, got[i].Height, got[i-1].Height)
		}
	}
	if len(chaincfg.MainNetParams.Checkpoints) != len(builtin) || builtin[1].Hash.String() == h1 {
		t.Fatal("the network's parameters were changed")
	}

	// --nocheckpoints turns all of them off.
	cfg, _, err = LoadConfig([]string{writeConfigFile(t, ""), "--simnet", "--nocheckpoints", "--addcheckpoint=5:" + h1})
	if err != nil {
		t.Fatal(err)
	}
	if cps := cfg.Checkpoints(); len(cps) != 0 {
		t.Errorf("--nocheckpoints left %v", cps)
	}

	for _, tc := range []struct{ arg, want string }{
		{"500", "use the syntax <height>:<hash>"},
		{"500:" + h1 + ":1", "use the syntax <height>:<hash>"},
		{"x:" + h1, "malformed height"},
		{"99999999999:" + h1, "malformed height"},
		{"500:", "missing hash"},
		{"500:zz", "malformed hash"},
	} {
		_, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--simnet", "--addcheckpoint=" + tc.arg})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "checkpoint") {
			t.Errorf("--addcheckpoint=%s: error %v, want one containing %q", tc.arg, err, tc.want)
		}
	}
}

// TestElectrumProgressFlag checks the progress interval's default and that a
// non-positive one is refused.
func TestElectrumProgressFlag(t *testing.T) {
	cfg, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--simnet"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ElectrumProgress != 10*time.Second {
		t.Errorf("default progress interval %v", cfg.ElectrumProgress)
	}
	cfg, _, err = LoadConfig([]string{writeConfigFile(t, ""), "--simnet", "--electrumprogress=1s"})
	if err != nil || cfg.ElectrumProgress != time.Second {
		t.Fatalf("--electrumprogress=1s: %v %v", cfg, err)
	}
	if _, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--simnet", "--electrumprogress=0s"}); err == nil ||
		!strings.Contains(err.Error(), "electrumprogress") {
		t.Errorf("--electrumprogress=0s: error %v", err)
	}
}

// TestOperatorOptions pins the defaults and forms of --electrumexemptnets (loopback v4 and v6 unless given; CIDRs or single addresses, comma-separated or repeated; none) and --metricslisten (off; a bare port is loopback), on the command line and in the config file.
func TestOperatorOptions(t *testing.T) {
	loopback := "127.0.0.0/8,::1/128"
	tests := []struct {
		conf        string
		args        []string
		wantNets    string
		wantMetrics string
	}{
		{"", nil, loopback, ""},
		{"", []string{"--electrumexemptnets=none"}, "", ""},
		{"", []string{"--electrumexemptnets=10.1.0.0/16,192.0.2.7", "--electrumexemptnets=fd00::/8"}, "10.1.0.0/16,192.0.2.7/32,fd00::/8", ""},
		{"", []string{"--metricslisten=9100"}, loopback, "127.0.0.1:9100"},
		{"", []string{"--metricslisten=:9100"}, loopback, "127.0.0.1:9100"},
		{"", []string{"--metricslisten=0.0.0.0:9100"}, loopback, "0.0.0.0:9100"},
		{"electrumexemptnets=10.9.0.0/16\nmetricslisten=9200\n", nil, "10.9.0.0/16", "127.0.0.1:9200"},
	}
	for _, tc := range tests {
		cfg, _, err := LoadConfig(append([]string{writeConfigFile(t, tc.conf), "--regtest"}, tc.args...))
		if err != nil {
			t.Fatalf("%q %v: %v", tc.conf, tc.args, err)
		}
		var nets []string
		for _, n := range cfg.Electrum.exemptNets {
			nets = append(nets, n.String())
		}
		if got := strings.Join(nets, ","); got != tc.wantNets || cfg.MetricsListen != tc.wantMetrics {
			t.Errorf("%q %v: exempt nets %q, metrics %q; want %q, %q", tc.conf, tc.args, got, cfg.MetricsListen, tc.wantNets, tc.wantMetrics)
		}
	}
}

// TestCertLinksNotWrittenThrough: a certificate and key named through links
// whose targets are gone (certbot's live/ links after a failed renewal) are
// refused at start with the load's reason, not taken for a missing pair and
// replaced by a self-signed one written through the links.
func TestCertLinksNotWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "archive")
	if err := os.Mkdir(archive, 0o700); err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "fullchain.pem"), filepath.Join(dir, "privkey.pem")
	for link, target := range map[string]string{cert: "fullchain1.pem", key: "privkey1.pem"} {
		if err := os.Symlink(filepath.Join(archive, target), link); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--electrumindex",
		"--electrumtlslisten=127.0.0.1:0", "--electrumcert=" + cert, "--electrumkey=" + key})
	if err == nil || !strings.Contains(err.Error(), "--electrumcert") {
		t.Fatalf("error %v, want the pair refused", err)
	}
	if entries, _ := os.ReadDir(archive); len(entries) != 0 {
		t.Fatalf("files written through the links: %v", entries)
	}
}

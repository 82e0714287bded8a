// Operator options as docs/OPERATIONS.md states them, each unchecked by
// earlier tests: refused values, range ends, the RPC defaults, whitelists,
// TLS pairs, drop runs, the serving memory limit, the self-signed key's
// mode, the banner and donation address.

package node

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// The documented ranges of the index's memory, cache, batch and undo options
// (docs/OPERATIONS.md, "Enabling the index" and the options table) include
// both ends: the least and the most an operator may give are taken, one past
// either end is refused, naming the option.
func TestIndexOptionRangesInclusive(t *testing.T) {
	for _, tc := range []struct {
		option      string
		least, most int
		belowLeast  bool // whether least-1 is refused (not a negative "none")
	}{
		{"electrumservemem", 0, 1048576, true},
		{"electrumcache", 1, 1048576, true},
		{"electrumcatchupmem", 64, 1048576, true},
		{"electrumundoblocks", 1, 1000000, true},
		{"electrumcatchupbatch", 0, 1048576, true},
	} {
		for _, v := range []int{tc.least, tc.most} {
			arg := "--" + tc.option + "=" + itoa(v)
			if _, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", arg}); err != nil {
				t.Errorf("%s, a documented value, refused: %v", arg, err)
			}
		}
		refused := []int{tc.most + 1}
		if tc.belowLeast {
			refused = append(refused, tc.least-1)
		}
		for _, v := range refused {
			arg := "--" + tc.option + "=" + itoa(v)
			_, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", arg})
			if err == nil || !strings.Contains(err.Error(), "--"+tc.option) {
				t.Errorf("%s, outside the documented range: error %v, want one naming --%s", arg, err, tc.option)
			}
		}
	}
}

func itoa(v int) string { return strconv.Itoa(v) }

// btcd's --prune minimum is 1536 MiB: 1536 itself is taken, 1535 refused.
func TestPruneMinimumTaken(t *testing.T) {
	if _, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--prune=1536"}); err != nil {
		t.Errorf("--prune=1536, btcd's documented minimum, refused: %v", err)
	}
	if _, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--prune=1535"}); err == nil {
		t.Error("--prune=1535 taken")
	}
}

// Options btcd refuses, with the reason, are refused here too (as the
// README promises btcd's options keep btcd's meanings); and the Electrum
// limits that cannot be negative are refused when negative, as the
// documented cost limits are refused when the soft one is above the hard
// one, whichever of the two is left at its default.
func TestRefusedOptionValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		// btcd: "The banduration option may not be less than 1s".
		{[]string{"--banduration=500ms"}, "banduration"},
		// btcd: "rejectnonstd and relaynonstd cannot be used together".
		{[]string{"--rejectnonstd", "--relaynonstd"}, "relaynonstd"},
		// btcd: a relay fee is a non-negative amount.
		{[]string{"--minrelaytxfee=-0.0001"}, "minrelaytxfee"},
		// btcd: --prune with --txindex is refused.
		{[]string{"--prune=2000", "--txindex"}, "--prune"},
		// The soft limit's default (1000) is above this hard limit.
		{[]string{"--electrumcosthardlimit=500"}, "--electrumcostsoftlimit"},
		{[]string{"--electrummaxrecv=-1"}, "--electrummaxrecv"},
		{[]string{"--electrummaxsessions=-1"}, "--electrummaxsessions"},
		{[]string{"--electrummaxsendbacklog=-1"}, "--electrummaxsendbacklog"},
		{[]string{"--electrummaxbatch=-1"}, "--electrummaxbatch"},
		{[]string{"--electrummaxsubspersession=-1"}, "--electrummaxsubspersession"},
		{[]string{"--electrummaxsubsperip=-1"}, "--electrummaxsubsperip"},
		{[]string{"--electrumconcurrency=-1"}, "--electrumconcurrency"},
		{[]string{"--electrumworkers=-1"}, "--electrumworkers"},
		{[]string{"--electrumbandwidthunit=-1"}, "--electrumbandwidthunit"},
		{[]string{"--electrumwritetimeout=-1s"}, "--electrumwritetimeout"},
		{[]string{"--electrumrequesttimeout=-1s"}, "--electrumrequesttimeout"},
		{[]string{"--electrumidletimeout=-1s"}, "--electrumidletimeout"},
		{[]string{"--electrumrequestsleep=-1s"}, "--electrumrequestsleep"},
	} {
		_, _, err := LoadConfig(append([]string{writeConfigFile(t, ""), "--regtest"}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// As btcd, the RPC server runs when only the limited user's credentials are
// given, and --notls is taken with the default RPC listener, localhost.
func TestRPCDefaultsAccepted(t *testing.T) {
	cfg, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--rpclimituser=l", "--rpclimitpass=p"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DisableRPC {
		t.Error("the limited user's credentials alone: no RPC server, btcd runs one")
	}
	cfg, _, err = LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--rpcuser=u", "--rpcpass=p", "--notls"})
	if err != nil {
		t.Fatalf("--notls with the default listener (localhost) refused: %v", err)
	}
	if len(cfg.RPCListeners) != 1 || !strings.HasPrefix(cfg.RPCListeners[0], "localhost:") {
		t.Errorf("RPC listeners %v", cfg.RPCListeners)
	}
}

// A --whitelist entry that is a single address (btcd: "eg. 192.168.1.0/24
// or ::1") covers that address, IPv4 or IPv6.
func TestWhitelistSingleAddress(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RegressionTest = true
	cfg.Whitelists = []string{"192.0.2.7", "2001:db8::1"}
	cfg.ConfigFile = filepath.Join(t.TempDir(), "none.conf")
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"192.0.2.7:18444": true, "[2001:db8::1]:18444": true,
		"192.0.2.8:18444": false, "[2001:db8::2]:18444": false,
	} {
		if got := cfg.isWhitelisted(addr); got != want {
			t.Errorf("isWhitelisted(%s) = %v, want %v", addr, got, want)
		}
	}
}

// An Esplora TLS listener alone uses the Electrum certificate: a half pair
// (the certificate without its key) is refused at start, before anything
// opens, as with the Electrum TLS listeners (docs/OPERATIONS.md, Start-up).
func TestEsploraTLSAloneChecksThePair(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "electrum.cert"), filepath.Join(dir, "electrum.key")
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--electrumindex",
		"--esploratlslisten=127.0.0.1:0", "--electrumcert=" + cert, "--electrumkey=" + key})
	if err == nil || !strings.Contains(err.Error(), "--electrumcert") {
		t.Fatalf("error %v, want the half pair refused naming --electrumcert", err)
	}
}

// A drop run listens nowhere, so the listeners its config file keeps for the
// runs after it are not probed: one another program holds does not stop the
// drop (docs/OPERATIONS.md, Verifying the index).
func TestDropRunDoesNotProbeListeners(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	cfg, _, err := LoadConfig([]string{writeConfigFile(t, "metricslisten="+busy.Addr().String()+"\n"), "--regtest",
		"--datadir=" + filepath.Join(dir, "data"), "--logdir=" + filepath.Join(dir, "logs"), "--dropelectrumindex"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckListenersFree(); err != nil {
		t.Fatalf("drop run: %v", err)
	}
	// The same options on a run that serves are refused by option.
	cfg, _, err = LoadConfig([]string{writeConfigFile(t, "metricslisten="+busy.Addr().String()+"\n"), "--regtest",
		"--datadir=" + filepath.Join(dir, "data"), "--logdir=" + filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckListenersFree(); err == nil || !strings.Contains(err.Error(), "--metricslisten") {
		t.Fatalf("serving run with a busy metrics address: %v", err)
	}
}

// --electrumservemem is MiB on top of what the node holds: a budget of
// 1024 sets a soft limit of at least 1 GiB (docs/OPERATIONS.md, options
// table), not 1024 of some smaller unit added to what is held.
func TestServeMemoryLimitInMiB(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is already set (GOMEMLIMIT)")
	}
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	const mib = 4096
	if limit := SetServeMemoryLimit(mib); limit < mib<<20 {
		t.Fatalf("--electrumservemem=%d set a soft limit of %d bytes, below %d MiB", mib, limit, mib)
	}
}

// The self-signed Electrum pair the node creates keeps its private key to
// the node's user (mode 0600); the certificate is public.
func TestSelfSignedKeyPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	cert, key := filepath.Join(dir, "electrum.cert"), filepath.Join(dir, "electrum.key")
	cfg := DefaultConfig()
	cfg.ElectrumTLSListeners = []string{"127.0.0.1:0"}
	cfg.ElectrumCert, cfg.ElectrumKey = cert, key
	if _, err := electrumConfig(cfg); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("self-signed key %s has mode %v: readable by others", key, perm)
	}
	if _, err := os.Stat(cert); err != nil {
		t.Fatal(err)
	}
}

// --electrumbanner and --electrumdonationaddress are what server.banner and
// server.donation_address answer (docs/OPERATIONS.md, options table).
func TestBannerAndDonationAddressServed(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.Electrum.Banner = "Operated by the test"
	cfg.Electrum.DonationAddress = "bcrt1qzzdonation"
	n := startNode(t, cfg)
	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	if got := c.call("server.banner"); got != "Operated by the test" {
		t.Errorf("server.banner = %v, want the --electrumbanner text", got)
	}
	if got := c.call("server.donation_address"); got != "bcrt1qzzdonation" {
		t.Errorf("server.donation_address = %v, want --electrumdonationaddress", got)
	}
}

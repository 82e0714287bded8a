package node

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"
)

// BtcdOptions are btcd's options for its optional indexes, filters and
// network routing, with btcd's names, meanings and defaults. Config embeds
// them, so they are flags of the binary like the others.
type BtcdOptions struct {
	AddrIndex          bool `long:"addrindex" description:"Maintain a full address-based transaction index which makes the searchrawtransactions RPC available"`
	NoCFilters         bool `long:"nocfilters" description:"Disable committed filtering (CF) support"`
	NoPeerBloomFilters bool `long:"nopeerbloomfilters" description:"Disable bloom filtering support"`
	DropAddrIndex      bool `long:"dropaddrindex" description:"Deletes the address-based transaction index from the database on start up and then exits."`
	DropTxIndex        bool `long:"droptxindex" description:"Deletes the hash-based transaction index from the database on start up and then exits."`
	DropCfIndex        bool `long:"dropcfindex" description:"Deletes the index used for committed filtering (CF) support from the database on start up and then exits."`
	DropElectrumIndex  bool `long:"dropelectrumindex" description:"Deletes the Electrum index from the database on start up and then exits."`

	Whitelists     []string `long:"whitelist" description:"Add an IP network or IP that will not be banned. (eg. 192.168.1.0/24 or ::1)"`
	AgentBlacklist []string `long:"agentblacklist" description:"A comma separated list of user-agent substrings which will cause the node to reject any peers whose user-agent contains any of the blacklisted substrings."`
	AgentWhitelist []string `long:"agentwhitelist" description:"A comma separated list of user-agent substrings which will cause the node to require all peers' user-agents to contain one of the whitelisted substrings. The blacklist is applied before the whitelist, and an empty whitelist will allow all agents that do not fail the blacklist."`
	ExternalIPs    []string `long:"externalip" description:"Add an ip to the list of local addresses we claim to listen on to peers"`
	Upnp           bool     `long:"upnp" description:"Use UPnP to map our listening port outside of NAT"`

	Proxy          string `long:"proxy" description:"Connect via SOCKS5 proxy (eg. 127.0.0.1:9050)"`
	ProxyUser      string `long:"proxyuser" description:"Username for proxy server"`
	ProxyPass      string `long:"proxypass" default-mask:"-" description:"Password for proxy server"`
	OnionProxy     string `long:"onion" description:"Connect to tor hidden services via SOCKS5 proxy (eg. 127.0.0.1:9050)"`
	OnionProxyUser string `long:"onionuser" description:"Username for onion proxy server"`
	OnionProxyPass string `long:"onionpass" default-mask:"-" description:"Password for onion proxy server"`
	NoOnion        bool   `long:"noonion" description:"Disable connecting to tor hidden services"`
	TorIsolation   bool   `long:"torisolation" description:"Enable Tor stream isolation by randomizing user credentials for each connection."`

	SigNetChallenge string   `long:"signetchallenge" description:"Connect to a custom signet network defined by this challenge instead of using the global default signet test network -- Can be specified multiple times"`
	SigNetSeedNode  []string `long:"signetseednode" description:"Specify a seed node for the signet network instead of using the global default signet network seed nodes"`

	RPCLimitUser string `long:"rpclimituser" description:"Username for limited RPC connections"`
	RPCLimitPass string `long:"rpclimitpass" default-mask:"-" description:"Password for limited RPC connections"`
	RPCQuirks    bool   `long:"rpcquirks" description:"Mirror some JSON-RPC quirks of Bitcoin Core -- NOTE: Discouraged unless interoperability issues need to be worked around"`

	DbType        string `long:"dbtype" description:"Database backend to use for the Block Chain"`
	MemoryProfile string `long:"memprofile" description:"Write memory profile to the specified file"`
	TraceProfile  string `long:"traceprofile" description:"Write execution trace to the specified file"`

	// Derived by normalizeBtcd.
	whitelists []*net.IPNet

	// upnpSSDPAddr replaces the SSDP multicast address --upnp searches
	// (tests point it at a loopback listener).
	upnpSSDPAddr string
}

// normalizeBtcd validates the btcd options and derives what they imply, as
// btcd's loadConfig does: --addrindex needs --txindex (turned on), a drop of
// an index cannot be combined with enabling it, the combinations btcd
// refuses are refused with its messages, custom signet parameters.
// Called by Normalize after the network is chosen.
func (cfg *Config) normalizeBtcd() error {
	if cfg.DbType == "" {
		cfg.DbType = dbType
	}
	if !slices.Contains(database.SupportedDrivers(), cfg.DbType) {
		return fmt.Errorf("the specified database type [%v] is invalid -- supported types %v",
			cfg.DbType, database.SupportedDrivers())
	}
	if cfg.TxIndex && cfg.DropTxIndex {
		return errors.New("the --txindex and --droptxindex options may not be activated at the same time")
	}
	if cfg.AddrIndex && cfg.DropAddrIndex {
		return errors.New("the --addrindex and --dropaddrindex options may not be activated at the same time")
	}
	if cfg.AddrIndex && cfg.DropTxIndex {
		return errors.New("the --addrindex and --droptxindex options may not be activated at the same time " +
			"because the address index relies on the transaction index")
	}
	// As btcd: a mainnet node always drops peers that stall the download,
	// and --connect means only those peers, so --addpeer would be ignored.
	if cfg.params.Net == wire.MainNet && cfg.DisableStallHandler {
		return errors.New("stall handler cannot be disabled on mainnet")
	}
	if len(cfg.AddPeers) > 0 && len(cfg.ConnectPeers) > 0 {
		return errors.New("the --addpeer and --connect options can not be mixed")
	}
	if cfg.ElectrumIndex && cfg.DropElectrumIndex {
		return errors.New("the --electrumindex and --dropelectrumindex options may not be activated at the same time")
	}
	if cfg.AddrIndex && !cfg.TxIndex {
		log.Infof("--addrindex requires --txindex: enabling the transaction index")
		cfg.TxIndex = true
	}
	if cfg.Prune != 0 && cfg.AddrIndex {
		return errors.New("--prune cannot be used with --addrindex")
	}

	if cfg.SigNet && (cfg.SigNetChallenge != "" || len(cfg.SigNetSeedNode) > 0) {
		challenge := chaincfg.DefaultSignetChallenge
		seeds := chaincfg.DefaultSignetDNSSeeds
		if cfg.SigNetChallenge != "" {
			c, err := hex.DecodeString(cfg.SigNetChallenge)
			if err != nil {
				return fmt.Errorf("invalid signet challenge, hex decode failed: %w", err)
			}
			challenge = c
		}
		if len(cfg.SigNetSeedNode) > 0 {
			seeds = make([]chaincfg.DNSSeed, len(cfg.SigNetSeedNode))
			for i, s := range cfg.SigNetSeedNode {
				seeds[i] = chaincfg.DNSSeed{Host: s}
			}
		}
		params := chaincfg.CustomSignetParams(challenge, seeds)
		cfg.params = &params
	}

	cfg.whitelists = cfg.whitelists[:0]
	for _, s := range cfg.Whitelists {
		_, ipnet, err := net.ParseCIDR(s)
		if err != nil {
			ip := net.ParseIP(s)
			if ip == nil {
				return fmt.Errorf("the whitelist value of '%s' is invalid", s)
			}
			bits := 32
			if ip.To4() == nil {
				bits = 128
			}
			ipnet = &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}
		}
		cfg.whitelists = append(cfg.whitelists, ipnet)
	}

	if cfg.Proxy != "" {
		if _, _, err := net.SplitHostPort(cfg.Proxy); err != nil {
			return fmt.Errorf("proxy address '%s' is invalid: %w", cfg.Proxy, err)
		}
	}
	if cfg.OnionProxy != "" {
		if _, _, err := net.SplitHostPort(cfg.OnionProxy); err != nil {
			return fmt.Errorf("onion proxy address '%s' is invalid: %w", cfg.OnionProxy, err)
		}
	}
	if cfg.NoOnion && cfg.OnionProxy != "" {
		return errors.New("the --noonion and --onion options may not be activated at the same time")
	}
	if cfg.TorIsolation && cfg.Proxy == "" && cfg.OnionProxy == "" {
		return errors.New("tor stream isolation requires either proxy or onion proxy to be set")
	}
	// A limited user that shares the admin's name or password is one guess
	// away from admin (btcd refuses both too).
	if cfg.RPCUser != "" && cfg.RPCUser == cfg.RPCLimitUser {
		return errors.New("--rpcuser and --rpclimituser must not be the same user name")
	}
	if cfg.RPCPass != "" && cfg.RPCPass == cfg.RPCLimitPass {
		return errors.New("--rpcpass and --rpclimitpass must not be the same password")
	}
	if err := cfg.normalizeMining(); err != nil {
		return err
	}
	if cfg.MaxOrphanTxs < 0 {
		return fmt.Errorf("--maxorphantx=%d: must not be negative", cfg.MaxOrphanTxs)
	}
	for _, c := range cfg.UserAgentComments {
		if strings.ContainsAny(c, "/:()") {
			return fmt.Errorf("--uacomment=%q: a user agent comment must not hold '/', ':', '(' or ')'", c)
		}
	}
	if cfg.Profile != "" {
		if port, err := strconv.Atoi(cfg.Profile); err != nil || port < 1024 || port > 65535 {
			return fmt.Errorf("--profile=%s: the profiling port must be a number from 1024 to 65535", cfg.Profile)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"rpcmaxclients", cfg.RPCMaxClients}, {"rpcmaxwebsockets", cfg.RPCMaxWebsockets},
		{"rpcmaxconcurrentreqs", cfg.RPCMaxConcurrentReqs}} {
		if f.v < 0 {
			return fmt.Errorf("--%s=%d: must not be negative", f.name, f.v)
		}
	}
	for _, ip := range cfg.ExternalIPs {
		if strings.TrimSpace(ip) == "" {
			return errors.New("empty --externalip")
		}
	}
	return nil
}

// DropRequested reports whether a --drop*index flag asks the node to delete
// indexes and exit instead of running, as btcd does.
func (cfg *Config) DropRequested() bool {
	return cfg.DropAddrIndex || cfg.DropTxIndex || cfg.DropCfIndex || cfg.DropElectrumIndex
}

// isWhitelisted reports whether a peer address (host:port) is in a
// --whitelist network: such a peer is never banned.
func (cfg *Config) isWhitelisted(addr string) bool {
	if len(cfg.whitelists) == 0 {
		return false
	}
	ip := net.ParseIP(hostOf(addr))
	if ip == nil {
		return false
	}
	for _, n := range cfg.whitelists {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// agentAllowed applies --agentblacklist, then --agentwhitelist, to a peer's
// user agent, as btcd.
func (cfg *Config) agentAllowed(userAgent string) bool {
	for _, s := range cfg.AgentBlacklist {
		if strings.Contains(userAgent, s) {
			return false
		}
	}
	if len(cfg.AgentWhitelist) == 0 {
		return true
	}
	for _, s := range cfg.AgentWhitelist {
		if strings.Contains(userAgent, s) {
			return true
		}
	}
	return false
}

// normalizeMining checks the block template's size and weight limits and
// derives one from the other as btcd does: a weight given alone lets the
// weight decide (the size limit goes to its maximum), a size given alone
// sets the weight it implies; the minimum and priority sizes are cut to the
// maximum.
func (cfg *Config) normalizeMining() error {
	const sizeMin, sizeMax = 1000, blockchain.MaxBlockBaseSize - 1000
	const weightMin, weightMax = 4000, blockchain.MaxBlockWeight - 4000
	if cfg.BlockMaxSize < sizeMin || cfg.BlockMaxSize > sizeMax {
		return fmt.Errorf("--blockmaxsize=%d: must be from %d to %d", cfg.BlockMaxSize, sizeMin, sizeMax)
	}
	if cfg.BlockMaxWeight < weightMin || cfg.BlockMaxWeight > weightMax {
		return fmt.Errorf("--blockmaxweight=%d: must be from %d to %d", cfg.BlockMaxWeight, weightMin, weightMax)
	}
	cfg.BlockPrioritySize = min(cfg.BlockPrioritySize, cfg.BlockMaxSize)
	cfg.BlockMinSize = min(cfg.BlockMinSize, cfg.BlockMaxSize)
	cfg.BlockMinWeight = min(cfg.BlockMinWeight, cfg.BlockMaxWeight)
	switch {
	case cfg.BlockMaxSize == defaultBlockMaxSize && cfg.BlockMaxWeight != defaultBlockMaxWeight:
		cfg.BlockMaxSize = blockchain.MaxBlockBaseSize - 1000
	case cfg.BlockMaxSize != defaultBlockMaxSize && cfg.BlockMaxWeight == defaultBlockMaxWeight:
		cfg.BlockMaxWeight = cfg.BlockMaxSize * blockchain.WitnessScaleFactor
	}
	return nil
}

package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	flags "github.com/jessevdk/go-flags"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/internal/listen"
)

// configFileError describes an error in the config file on one line that
// names the file, the line and the option, so that a bad value is as easy
// to find as a bad flag. The value is not repeated (it may be a password).
func configFileError(path string, err error) error {
	var ie *flags.IniError
	if !errors.As(err, &ie) || ie.LineNumber == 0 {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	option, msg := "", ie.Message
	if strings.HasPrefix(msg, "malformed key=value") {
		msg = "malformed line: want option=value" // go-flags' message quotes the line
	}
	if b, rerr := os.ReadFile(ie.File); rerr == nil {
		if lines := strings.Split(string(b), "\n"); int(ie.LineNumber) <= len(lines) {
			// The option is the line's first word, however the
			// separator was mistyped; the rest is the value, which
			// go-flags' message may quote.
			line := strings.TrimSpace(lines[ie.LineNumber-1])
			end := strings.IndexAny(line, "=: \t")
			if end < 0 {
				end = len(line)
			}
			option = line[:end]
			if value := strings.Trim(line[end:], "=: \t"); value != "" {
				msg = strings.ReplaceAll(msg, strconv.Quote(value), `"<value>"`)
			}
		}
	}
	if option == "" {
		return fmt.Errorf("config file %s, line %d: %s", ie.File, ie.LineNumber, msg)
	}
	return fmt.Errorf("config file %s, line %d, option %s: %s", ie.File, ie.LineNumber, option, msg)
}

// listenOption is a listen address option with its addresses, and an
// example address for messages.
type listenOption struct {
	option  string
	addrs   []string
	example string
}

// listenOptions returns every listen address option.
func (cfg *Config) listenOptions() []listenOption {
	return []listenOption{
		{"listen", cfg.Listeners, "0.0.0.0:8333"}, {"rpclisten", cfg.RPCListeners, "127.0.0.1:8334"},
		{"electrumlisten", cfg.ElectrumListeners, "127.0.0.1:50001"},
		{"electrumtlslisten", cfg.ElectrumTLSListeners, "0.0.0.0:50002"},
		{"electrumwslisten", cfg.ElectrumWSListeners, "127.0.0.1:50003"},
		{"electrumwsslisten", cfg.ElectrumWSSListeners, "0.0.0.0:50004"},
		{"esploralisten", cfg.EsploraListeners, "127.0.0.1:3000"},
		{"esploratlslisten", cfg.EsploraTLSListeners, "0.0.0.0:3443"},
		{"metricslisten", nonEmpty(cfg.MetricsListen), "127.0.0.1:9100"},
		{"profile", cfg.profileAddrs(), "6060"},
	}
}

// profileAddrs returns the address --profile's HTTP server listens on, as
// btcd's: localhost at the given port.
func (cfg *Config) profileAddrs() []string {
	if cfg.Profile == "" {
		return nil
	}
	return []string{net.JoinHostPort("localhost", cfg.Profile)}
}

// validateListeners checks every listen address option, so that a typo is
// reported at start rather than when the listener opens (after the index,
// which may take hours to build on an existing datadir): each address must
// be one a listener can bind, no address may serve two listeners, and two
// addresses of one listener must not overlap.
func (cfg *Config) validateListeners() error {
	var used []listenSpot
	for _, set := range cfg.listenOptions() {
		for _, a := range set.addrs {
			if err := checkListenAddr(a); err != nil {
				return fmt.Errorf("--%s=%s: %v; want host:port, [ipv6]:port or host (the default port), e.g. %s",
					set.option, a, err, set.example)
			}
			if _, port, _ := net.SplitHostPort(a); port == "0" {
				continue // a port of the system's choosing each time
			}
			if (set.option == "listen" && cfg.DisableListen) || (set.option == "rpclisten" && cfg.DisableRPC) {
				continue // that listener does not open
			}
			spot := listenSpotOf(set.option, a)
			for _, other := range used {
				if !other.overlaps(spot) {
					continue
				}
				if other.option != set.option {
					return fmt.Errorf("--%s=%s: the address is --%s's already (--%s=%s); one address serves one listener",
						set.option, a, other.option, other.option, other.addr)
				}
				// The P2P listener skips an address that does not bind,
				// as btcd's does; every other listener fails to start on
				// it, once the chain has loaded.
				if set.option != "listen" {
					return fmt.Errorf("--%s=%s overlaps --%s=%s: the two addresses cannot both be bound; give one of them",
						set.option, a, other.option, other.addr)
				}
			}
			used = append(used, spot)
		}
	}
	return nil
}

// CheckListenersFree binds each address of the listeners the node opens
// and closes it again, so that one another program holds is reported by
// its option before the node creates its directories and loads the chain
// (hours, when the index is built). The binary calls it after the options
// are checked, when the node is to run: not for --debuglevel=show or a
// --drop*index run, which listen nowhere.
func (cfg *Config) CheckListenersFree() error {
	if cfg.DropRequested() {
		return nil
	}
	return cfg.probeListeners(true)
}

// probeListeners binds each address of the listeners that open and closes
// it again, so that an address another program holds (or one this machine
// does not have) is reported by its option. The peer listener is left
// out: as in btcd, the node goes on without a peer address that does not
// bind. withMetrics includes --metricslisten and --profile, which open
// before the chain loads, so only the start-up checks probe them.
func (cfg *Config) probeListeners(withMetrics bool) error {
	for _, set := range cfg.listenOptions() {
		switch {
		case set.option == "listen", (set.option == "metricslisten" || set.option == "profile") && !withMetrics,
			set.option == "rpclisten" && cfg.DisableRPC,
			!cfg.ElectrumIndex && (strings.HasPrefix(set.option, "electrum") || strings.HasPrefix(set.option, "esplora")):
			continue // that listener does not open here
		}
		for _, a := range set.addrs {
			ls, err := listen.Listen(a)
			if err != nil {
				var oe *net.OpError
				if errors.As(err, &oe) {
					err = oe.Err // without the address, which the message names
				}
				return fmt.Errorf("--%s=%s: %v", set.option, a, err)
			}
			for _, l := range ls {
				_ = l.Close()
			}
		}
	}
	return nil
}

// listenSpot is what a listen address binds: a port on some addresses, or
// on all of one family or both (internal/listen: a host left empty is both,
// "0.0.0.0" all of IPv4, "::" all of IPv6, as btcd's listeners). A host
// name binds one of the addresses it resolves to; all of them count.
type listenSpot struct {
	option, addr string
	port         int
	ips          []netip.Addr
	all4, all6   bool
}

// listenSpotOf returns the spot of addr, an address checkListenAddr took.
func listenSpotOf(option, addr string) listenSpot {
	host, port, _ := net.SplitHostPort(addr)
	s := listenSpot{option: option, addr: addr, all4: host == "", all6: host == ""}
	s.port, _ = net.LookupPort("tcp", port)
	hosts := []string{host}
	if _, err := netip.ParseAddr(host); err != nil && host != "" {
		hosts, _ = net.LookupHost(host)
	}
	for _, h := range hosts {
		if ip, err := netip.ParseAddr(h); err == nil {
			ip = ip.Unmap()
			s.all4 = s.all4 || ip.IsUnspecified() && ip.Is4()
			s.all6 = s.all6 || ip.IsUnspecified() && ip.Is6()
			s.ips = append(s.ips, ip)
		}
	}
	return s
}

// binds reports whether s binds addresses of ip's family, and all of them.
func (s listenSpot) binds(is4 bool) (some, all bool) {
	all = s.all6
	if is4 {
		all = s.all4
	}
	return all || slices.ContainsFunc(s.ips, func(ip netip.Addr) bool { return ip.Is4() == is4 }), all
}

// overlaps reports whether s and o cannot both be bound.
func (s listenSpot) overlaps(o listenSpot) bool {
	if s.port != o.port {
		return false
	}
	for _, is4 := range []bool{true, false} {
		sSome, sAll := s.binds(is4)
		oSome, oAll := o.binds(is4)
		if sSome && oSome && (sAll || oAll) {
			return true
		}
	}
	for _, ip := range o.ips {
		if slices.Contains(s.ips, ip) {
			return true
		}
	}
	return false
}

// checkListenAddr says why a listener could not bind addr (host:port), or
// nil. A host of digits and dots that is no IP address (a port alone, taken
// for a host, or a mistyped address) is refused rather than looked up as
// a name.
func checkListenAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("bad port %q", port)
	}
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if strings.Trim(host, "0123456789.") == "" {
		return fmt.Errorf("%q is neither an IP address nor a host name (a port alone is written :PORT)", host)
	}
	if strings.ContainsAny(host, "/ ") {
		return fmt.Errorf("bad host %q", host)
	}
	if _, err := net.LookupHost(host); err != nil {
		return fmt.Errorf("host %q does not resolve", host)
	}
	return nil
}

// nonEmpty returns s as a list, empty when s is.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// checkCertPair checks a TLS certificate and key at start, not once the
// index has caught up and the listeners open: both files load as a pair
// with load, or both are missing and can be created (a self-signed pair is
// then made). certOpt and keyOpt name the options in the message.
func checkCertPair(certOpt, certFile, keyOpt, keyFile string, load func(certFile, keyFile string) error) error {
	certMissing, keyMissing := missing(certFile), missing(keyFile)
	switch {
	case certMissing && keyMissing:
		for _, f := range []string{certFile, keyFile} {
			if err := checkCreatable(f); err != nil {
				return fmt.Errorf("--%s=%s, --%s=%s: the self-signed pair cannot be created: %v",
					certOpt, certFile, keyOpt, keyFile, err)
			}
		}
		return nil
	case certMissing || keyMissing:
		return fmt.Errorf("--%s=%s, --%s=%s: only one of them exists (both, or neither for a self-signed pair)",
			certOpt, certFile, keyOpt, keyFile)
	}
	if err := load(certFile, keyFile); err != nil {
		return fmt.Errorf("--%s=%s, --%s=%s: %v", certOpt, certFile, keyOpt, keyFile, err)
	}
	return nil
}

// missing reports whether nothing is at path. A file the node cannot reach
// (a certbot link it may not follow, or one whose target is gone) is there:
// loading it says why, where taking it for missing would write a
// self-signed pair through the link.
func missing(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// loadElectrumPair loads the Electrum pair by the rule its listeners and
// reloads apply, so that a certificate they would refuse (one that has
// expired, say) is refused before the chain loads.
func loadElectrumPair(certFile, keyFile string) error {
	_, err := electrum.LoadKeyPair(certFile, keyFile)
	return err
}

// loadRPCPair loads the RPC server's pair as the server does, which, like
// btcd's, takes a certificate whatever its dates.
func loadRPCPair(certFile, keyFile string) error {
	_, err := tls.LoadX509KeyPair(certFile, keyFile)
	return err
}

// checkCreatable says why file could not be created, its directory made
// first when missing, or nil. It creates nothing: the options are checked
// before anything is written. The nearest existing directory on the path
// must be one the node may write in.
func checkCreatable(file string) error {
	dir := filepath.Dir(file)
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", dir)
			}
			if err := checkWritableDir(dir); err != nil {
				return fmt.Errorf("cannot write in %s: %v", dir, err)
			}
			return nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return err
		}
		dir = parent
	}
}

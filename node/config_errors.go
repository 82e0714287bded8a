package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	flags "github.com/jessevdk/go-flags"
)

// configFileError describes an error in the config file on one line that
// names the file, the line and the option, so that a bad value is as easy
// to find as a bad flag. The value is not repeated (it may be a password).
func configFileError(path string, err error) error {
	var ie *flags.IniError
	if !errors.As(err, &ie) || ie.LineNumber == 0 {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	option := ""
	if b, rerr := os.ReadFile(ie.File); rerr == nil {
		if lines := strings.Split(string(b), "\n"); int(ie.LineNumber) <= len(lines) {
			option, _, _ = strings.Cut(lines[ie.LineNumber-1], "=")
			option = strings.TrimSpace(option)
		}
	}
	if option == "" {
		return fmt.Errorf("config file %s, line %d: %s", ie.File, ie.LineNumber, ie.Message)
	}
	return fmt.Errorf("config file %s, line %d, option %s: %s", ie.File, ie.LineNumber, option, ie.Message)
}

// validateListeners checks every listen address option, so that a typo is
// reported at start rather than when the listener opens (after the index,
// which may take hours to build on an existing datadir).
func (cfg *Config) validateListeners() error {
	for _, set := range []struct {
		option string
		addrs  []string
	}{
		{"listen", cfg.Listeners}, {"rpclisten", cfg.RPCListeners},
		{"electrumlisten", cfg.ElectrumListeners}, {"electrumtlslisten", cfg.ElectrumTLSListeners},
		{"electrumwslisten", cfg.ElectrumWSListeners}, {"electrumwsslisten", cfg.ElectrumWSSListeners},
	} {
		for _, a := range set.addrs {
			host, port, err := net.SplitHostPort(a)
			if err == nil {
				_, err = net.LookupPort("tcp", port)
			}
			if err == nil && strings.ContainsAny(host, "/ ") {
				err = errors.New("bad host")
			}
			if err != nil {
				return fmt.Errorf("--%s=%s: want host:port, [ipv6]:port or host (the default port), e.g. 0.0.0.0:50002", set.option, a)
			}
		}
	}
	return nil
}

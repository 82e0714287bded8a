// Package listen opens the node's TCP listeners as btcd opens its own: an
// IPv4 address listens on IPv4 only, an IPv6 address on IPv6 only, and an
// empty host on both, each family a socket of its own. Go's "tcp" network
// would make 0.0.0.0 a socket of both families, so that an operator who
// opened a port to IPv4 only would serve IPv6 too.
package listen

import (
	"errors"
	"net"
	"strings"
	"syscall"
)

// Networks returns the networks a host:port address is opened on. A host
// name binds the first address it resolves to, as Go's "tcp" does.
func Networks(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return []string{"tcp"}
	}
	if host == "" {
		return []string{"tcp4", "tcp6"}
	}
	if i := strings.LastIndex(host, "%"); i > 0 {
		host = host[:i] // an IPv6 zone
	}
	switch ip := net.ParseIP(host); {
	case ip == nil:
		return []string{"tcp"}
	case ip.To4() == nil:
		return []string{"tcp6"}
	default:
		return []string{"tcp4"}
	}
}

// Listen opens addr on each of its networks; on an error none is left
// open. For an empty host, a family the machine does not have (IPv6
// disabled in its kernel) is left out when the other opened, as btcd
// leaves it out.
func Listen(addr string) ([]net.Listener, error) { return listenWith(addr, net.Listen) }

func listenWith(addr string, open func(network, addr string) (net.Listener, error)) ([]net.Listener, error) {
	var ls []net.Listener
	var missing error
	for _, network := range Networks(addr) {
		l, err := open(network, addr)
		switch {
		case err == nil:
			ls = append(ls, l)
		case missing == nil && (errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EPROTONOSUPPORT) ||
			errors.Is(err, syscall.EADDRNOTAVAIL)):
			missing = err
		default:
			for _, l := range ls {
				_ = l.Close()
			}
			return nil, err
		}
	}
	if len(ls) == 0 {
		return nil, missing
	}
	return ls, nil
}

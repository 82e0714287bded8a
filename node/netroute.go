package node

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/go-socks/socks"

	"github.com/btcsuite/btcd/addrmgr"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/connmgr"
	"github.com/btcsuite/btcd/wire/v2"
)

// addExternalIPs adds the --externalip addresses (the network's default port
// unless one is given) to the address manager's local addresses, which the
// node advertises to its outbound peers, as btcd.
func (n *Node) addExternalIPs() {
	defaultPort, _ := strconv.ParseUint(n.params.DefaultPort, 10, 16)
	for _, s := range n.cfg.ExternalIPs {
		port := uint16(defaultPort)
		host, portStr, err := net.SplitHostPort(s)
		if err != nil {
			host = s
		} else {
			p, err := strconv.ParseUint(portStr, 10, 16)
			if err != nil {
				srvrLog.Warnf("Can not parse port from %s for externalip: %v", s, err)
				continue
			}
			port = uint16(p)
		}
		na, err := n.addrManager.HostToNetAddress(host, port, n.services)
		if err != nil {
			srvrLog.Warnf("Not adding %s as externalip: %v", s, err)
			continue
		}
		if err := n.addrManager.AddLocalAddress(na, addrmgr.ManualPrio); err != nil {
			srvrLog.Warnf("Skipping specified external IP: %v", err)
		}
	}
}

// addBoundAddresses adds the addresses the P2P listeners are bound to (for
// an unspecified address, the interfaces' addresses of its family) to the
// address manager's local addresses, which the node advertises to its
// outbound peers, as btcd's initListeners does when no --externalip is
// given. An address that is not routable, such as loopback, is left out.
func (n *Node) addBoundAddresses() {
	if len(n.cfg.ExternalIPs) != 0 {
		return
	}
	for _, l := range n.p2pListeners {
		addr := l.Addr().String()
		if err := n.addBoundAddress(addr); err != nil {
			srvrLog.Warnf("Skipping bound address %s: %v", addr, err)
		}
	}
}

// addBoundAddress adds the local addresses of one bound address (btcd's
// addLocalAddress).
func (n *Node) addBoundAddress(addr string) error {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		na, err := n.addrManager.HostToNetAddress(host, uint16(port), n.services)
		if err != nil {
			return err
		}
		_ = n.addrManager.AddLocalAddress(na, addrmgr.BoundPrio)
		return nil
	}
	ifaceAddrs, err := btcutil.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range ifaceAddrs {
		ifaceIP, _, err := net.ParseCIDR(a.String())
		// 0.0.0.0 advertises IPv4 addresses only, :: IPv6 ones only.
		if err != nil || (ip.To4() == nil) != (ifaceIP.To4() == nil) {
			continue
		}
		na := wire.NetAddressV2FromBytes(time.Now(), n.services, ifaceIP, uint16(port))
		_ = n.addrManager.AddLocalAddress(na, addrmgr.BoundPrio)
	}
	return nil
}

// advertiseLocalAddress sends an outbound peer the node's best routable
// local address for it, when the node accepts connections and is in sync.
func (n *Node) advertiseLocalAddress(sp *serverPeer) {
	if n.cfg.DisableListen || !n.syncManager.IsCurrent() {
		return
	}
	lna := n.addrManager.GetBestLocalAddress(sp.NA())
	if !addrmgr.IsRoutable(lna) {
		return
	}
	if sp.WantsAddrV2() {
		_, _ = sp.PushAddrV2Msg([]*wire.NetAddressV2{lna})
		return
	}
	if l := lna.ToLegacy(); l != nil {
		_, _ = sp.PushAddrMsg([]*wire.NetAddress{l})
	}
}

// onionAddr is the net.Addr of a Tor hidden service, which is not resolved
// (connmgr hands it to dial as is).
type onionAddr struct{ addr string }

// Network is part of net.Addr.
func (a onionAddr) Network() string { return "tcp" }

// String is part of net.Addr.
func (a onionAddr) String() string { return a.addr }

// isOnion reports whether host:port names a Tor hidden service.
func isOnion(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && strings.HasSuffix(strings.ToLower(host), ".onion")
}

// resolvePeerAddr turns host:port into connmgr's address: a TCP address for
// hosts and IPs (looked up through the proxy's rules), an unresolved one for
// .onion hosts.
func (n *Node) resolvePeerAddr(addr string) (net.Addr, error) {
	if isOnion(addr) {
		if n.cfg.NoOnion {
			return nil, errors.New("tor has been disabled")
		}
		return onionAddr{addr}, nil
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("invalid port in %s", addr)
	}
	if ip := net.ParseIP(host); ip != nil {
		return &net.TCPAddr{IP: ip, Port: int(port)}, nil
	}
	ips, err := n.lookupIP(host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("no addresses found for %s", host)
	}
	return &net.TCPAddr{IP: ips[0], Port: int(port)}, nil
}

// dial is connmgr's dialer, as btcd's: .onion addresses through the --onion
// proxy (or the --proxy one), refused with --noonion; others through
// --proxy when set, else directly. With --torisolation every connection
// authenticates to the proxy with fresh random credentials, so Tor puts it on
// a circuit of its own.
func (n *Node) dial(addr net.Addr) (net.Conn, error) {
	cfg := n.cfg
	target := addr.String()
	if isOnion(target) {
		switch {
		case cfg.NoOnion:
			return nil, errors.New("tor has been disabled")
		case cfg.OnionProxy != "":
			p := &socks.Proxy{Addr: cfg.OnionProxy, Username: cfg.OnionProxyUser,
				Password: cfg.OnionProxyPass, TorIsolation: cfg.TorIsolation}
			return p.DialTimeout("tcp", target, dialTimeout)
		case cfg.Proxy == "":
			return nil, errors.New("no proxy for onion addresses: set --onion or --proxy")
		}
	}
	if cfg.Proxy != "" {
		p := &socks.Proxy{Addr: cfg.Proxy, Username: cfg.ProxyUser,
			Password: cfg.ProxyPass, TorIsolation: cfg.TorIsolation}
		return p.DialTimeout("tcp", target, dialTimeout)
	}
	return net.DialTimeout(addr.Network(), target, dialTimeout)
}

// lookupIP resolves a host name for the address manager, DNS seeding and
// peers given by name, as btcd: through Tor's RESOLVE extension of the
// --onion proxy when both proxies are set, of the --proxy proxy when it is
// the only one (unless --noonion), and with the system resolver otherwise.
func (n *Node) lookupIP(host string) ([]net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	cfg := n.cfg
	switch {
	case cfg.Proxy != "" && cfg.OnionProxy != "":
		return connmgr.TorLookupIP(host, cfg.OnionProxy)
	case cfg.Proxy != "" && !cfg.NoOnion:
		return connmgr.TorLookupIP(host, cfg.Proxy)
	}
	return net.LookupIP(host)
}

// Package selfsigned makes the self-signed TLS certificates the node
// writes when an operator gives none: for its Electrum listeners and its
// RPC server.
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"
)

// Pair returns a self-signed certificate and its key, PEM encoded, of
// organization org, valid until validUntil for localhost, 127.0.0.1, ::1,
// the machine's host name and addresses, and hosts (names or addresses).
// Addresses the machine cannot list (a sandbox without netlink sockets)
// are left out rather than failing. The key is ECDSA on P-256: every TLS
// handshake signs with it, and a P-256 signature costs about a tenth of
// the CPU of a P-521 one.
func Pair(org string, validUntil time.Time, hosts []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	names := []string{"localhost"}
	if host != "" && host != "localhost" {
		names = append(names, host)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{org}, CommonName: names[len(names)-1]},
		NotBefore:             time.Now().Add(-24 * time.Hour),
		NotAfter:              validUntil,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              names,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	addIP := func(ip net.IP) {
		if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() {
			addIP(ipn.IP)
		}
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			addIP(ip)
		} else if h != "" && !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// ListenHosts returns the hosts of listen addresses ("host:port") that a
// certificate can name: not an empty or unspecified one, which is no
// address to connect to.
func ListenHosts(listen []string) []string {
	var hosts []string
	for _, a := range listen {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		if ip, err := netip.ParseAddr(host); err == nil {
			if ip.IsUnspecified() {
				continue
			}
			host = ip.WithZone("").String()
		}
		if host != "" {
			hosts = append(hosts, host)
		}
	}
	return hosts
}

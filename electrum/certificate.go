package electrum

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The TLS and WSS listeners take their certificate from a certStore on
// every handshake, so ReloadTLS (on SIGHUP or the reloadelectrumtls RPC)
// puts a renewed certificate in use for new connections while the
// sessions already open keep theirs. A pair that does not load, does not
// match, or has expired is refused and the one in use stays.

// certStore holds the certificate in use and the files it came from.
type certStore struct {
	cur atomic.Pointer[tls.Certificate]

	// mu serializes loads; certFile and keyFile are set by the first.
	mu                sync.Mutex
	certFile, keyFile string
}

// CertificateInfo describes the certificate in use.
type CertificateInfo struct {
	CertFile string    `json:"certfile"`
	KeyFile  string    `json:"keyfile"`
	Subject  string    `json:"subject"`
	NotAfter time.Time `json:"notafter"`
	// SHA256 is the certificate's fingerprint in hex.
	SHA256 string `json:"sha256"`
}

// load resolves the files (creating a self-signed pair when none is
// configured) and loads them.
func (c *certStore) load(cfg *Config) error {
	certFile, keyFile, err := tlsFiles(cfg)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.certFile, c.keyFile = certFile, keyFile
	return c.reloadLocked()
}

// reloadLocked reads the pair again and puts it in use if it is valid.
func (c *certStore) reloadLocked() error {
	pair, err := LoadKeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("electrum: %w", err)
	}
	c.cur.Store(&pair)
	return nil
}

// LoadKeyPair reads a certificate and its key as the TLS and WSS listeners
// take them, at start and on every reload: the pair must load and match,
// and the certificate must not have expired. A program that embeds the
// server can check its options with it before anything opens.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading TLS key pair %s, %s: %w", certFile, keyFile, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return tls.Certificate{}, fmt.Errorf("parsing TLS certificate %s: %w", certFile, err)
		}
	}
	if now := time.Now(); now.After(pair.Leaf.NotAfter) {
		return tls.Certificate{}, fmt.Errorf("TLS certificate %s expired on %s", certFile,
			pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return pair, nil
}

// tlsConfig returns a server configuration that uses whatever certificate
// is current at each handshake.
func (c *certStore) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}

// info describes the certificate in use; ok is false when there is none.
func (c *certStore) info() (CertificateInfo, bool) {
	cert := c.cur.Load()
	if cert == nil || cert.Leaf == nil {
		return CertificateInfo{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return CertificateInfo{
		CertFile: c.certFile,
		KeyFile:  c.keyFile,
		Subject:  cert.Leaf.Subject.String(),
		NotAfter: cert.Leaf.NotAfter.UTC(),
		SHA256:   fingerprint(cert.Leaf.Raw),
	}, true
}

// ErrNoTLS is returned by ReloadTLS when the server has no TLS or WSS
// listener.
var ErrNoTLS = errors.New("electrum: no TLS or WSS listener")

// ReloadTLS reads the TLS certificate and key files again. New TLS and WSS
// connections use the new pair; open sessions are not disturbed. When the
// files do not hold a valid pair the certificate in use is kept, the reason
// is logged and returned. It returns the certificate in use afterwards.
func (s *Server) ReloadTLS() (CertificateInfo, error) {
	c := &s.certs
	if c.cur.Load() == nil {
		return CertificateInfo{}, ErrNoTLS
	}
	c.mu.Lock()
	err := c.reloadLocked()
	c.mu.Unlock()
	info, _ := c.info()
	if err != nil {
		s.errorf("electrum: TLS certificate not reloaded, still using %s (valid until %s): %v",
			info.SHA256[:16], info.NotAfter.Format(time.RFC3339), err)
		return info, err
	}
	s.logf("electrum: TLS certificate reloaded from %s: %s, valid until %s, sha256 %s",
		info.CertFile, info.Subject, info.NotAfter.Format(time.RFC3339), info.SHA256)
	return info, nil
}

// GetCertificate returns the certificate in use, for a tls.Config of
// another server sharing it (Config.ShareTLS): each handshake takes the
// current one, so ReloadTLS reaches that server too.
func (s *Server) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := s.certs.cur.Load(); cert != nil {
		return cert, nil
	}
	return nil, ErrNoTLS
}

// Certificate describes the TLS certificate in use; ok is false without a
// TLS or WSS listener.
func (s *Server) Certificate() (CertificateInfo, bool) { return s.certs.info() }

// fingerprint is the hex SHA-256 of a DER certificate.
func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

package electrum

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tlsFixture serves the fixture backend on a TLS listener with the pair in
// dir, its metrics registered with reg.
func tlsFixture(t *testing.T, dir string, logs *logLines, reg *prometheus.Registry) (*Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, nil)
	s := New(Config{
		Listeners:   []Listener{{Transport: TLS, Listener: l}},
		TLSCertFile: filepath.Join(dir, "electrum.cert"),
		TLSKeyFile:  filepath.Join(dir, "electrum.key"),
		Logf:        logs.logf,
	}, fx.f)
	if err := s.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(contextWithTimeout(10 * time.Second)) })
	return s, l.Addr().String()
}

// tlsSession opens a TLS session, negotiates, and returns it with the
// fingerprint of the certificate the server presented.
func tlsSession(t *testing.T, addr string) (*testClient, string) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	fp := fingerprint(c.ConnectionState().PeerCertificates[0].Raw)
	tc := newTestClient(t, c)
	tc.negotiate("1.4")
	return tc, fp
}

// TestReloadTLS renews the certificate under a running server: sessions opened before keep working, new ones get the new certificate; a pair that does not load is refused with the reason logged, and the certificate in use stays.
func TestReloadTLS(t *testing.T) {
	dir := t.TempDir()
	if err := writeSelfSigned(dir, filepath.Join(dir, "electrum.cert"), filepath.Join(dir, "electrum.key")); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	reg := prometheus.NewRegistry()
	s, addr := tlsFixture(t, dir, logs, reg)
	old, oldFP := tlsSession(t, addr)
	if info, ok := s.Certificate(); !ok || info.SHA256 != oldFP {
		t.Fatalf("Certificate() = %+v, presented %s", info, oldFP)
	}

	// Renew: a new pair written over the files.
	renewDir := t.TempDir()
	if err := writeSelfSigned(renewDir, filepath.Join(renewDir, "electrum.cert"), filepath.Join(renewDir, "electrum.key")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"electrum.cert", "electrum.key"} {
		b, err := os.ReadFile(filepath.Join(renewDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	info, err := s.ReloadTLS()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := metricValue(t, reg, "electrum_tls_certificate_expiry_timestamp_seconds", nil); !ok || int64(v) != info.NotAfter.Unix() {
		t.Fatalf("certificate expiry metric %v (present %v), want %d", v, ok, info.NotAfter.Unix())
	}
	old.must(nil, "server.ping") // the open session is not dropped
	_, newFP := tlsSession(t, addr)
	if newFP == oldFP || info.SHA256 != newFP {
		t.Fatalf("after reload: presented %s, reported %s, old %s", newFP, info.SHA256, oldFP)
	}

	// A broken certificate keeps the one in use.
	if err := os.WriteFile(filepath.Join(dir, "electrum.cert"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReloadTLS(); err == nil {
		t.Fatal("broken certificate accepted")
	}
	if _, fp := tlsSession(t, addr); fp != newFP {
		t.Fatalf("after a failed reload the server presents %s, want %s", fp, newFP)
	}
	if lines := logs.matching("not reloaded"); len(lines) != 1 || !strings.Contains(lines[0], "electrum.cert") {
		t.Fatalf("failed reload log lines: %q", lines)
	}
	old.must(nil, "server.ping")
}

// TestReloadTLSWithoutTLS checks that a server without TLS listeners says so.
func TestReloadTLSWithoutTLS(t *testing.T) {
	fx := newFixture(t, nil)
	if _, err := fx.s.ReloadTLS(); err != ErrNoTLS {
		t.Fatalf("ReloadTLS without TLS: %v", err)
	}
}

// TestReloadTLSRefusesExpired checks that an expired certificate is not put in use.
func TestReloadTLSRefusesExpired(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "electrum.cert"), filepath.Join(dir, "electrum.key")
	if err := writeSelfSigned(dir, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	s, addr := tlsFixture(t, dir, &logLines{}, prometheus.NewRegistry())
	_, fp := tlsSession(t, addr)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	if _, err := s.ReloadTLS(); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired certificate: %v", err)
	}
	if _, got := tlsSession(t, addr); got != fp {
		t.Fatalf("the server presents %s after refusing an expired certificate, want %s", got, fp)
	}
}

package esplora

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

// lockedLogBuf is a goroutine-safe buffer for the standard logger.
type lockedLogBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedLogBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedLogBuf) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A client that refuses the certificate of the Esplora TLS listener (a
// browser or curl meeting a self-signed one, a scanner) fails the handshake;
// the failure is the client's, and nothing is written for it to the
// process's standard logger (stderr), as for the Electrum listeners.
func TestTLSHandshakeFailureNotOnStderr(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := electrum.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "e.cert"), filepath.Join(dir, "e.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	stderr := &lockedLogBuf{}
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(stderr)
	t.Cleanup(func() { log.SetOutput(prevOut); log.SetFlags(prevFlags) })

	var logfMu sync.Mutex
	var logf []string
	s := New(Config{
		TLSListen:   []string{"127.0.0.1:0"},
		TLSCertFile: certFile,
		TLSKeyFile:  keyFile,
		Logf: func(f string, a ...any) {
			logfMu.Lock()
			logf = append(logf, f)
			logfMu.Unlock()
		},
	}, nil, nil)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	addr := s.Addrs()[0].String()

	for i := 0; i < 3; i++ {
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		raw.SetDeadline(time.Now().Add(20 * time.Second)) // hang guard
		// Verification on, as a browser or curl without -k: the
		// self-signed certificate is refused and the client sends an
		// alert.
		tc := tls.Client(raw, &tls.Config{ServerName: "localhost"})
		if err := tc.Handshake(); err == nil {
			t.Fatal("handshake with an untrusted self-signed certificate succeeded")
		}
		// The server closes the connection once it has handled (and
		// logged) the failure.
		io.Copy(io.Discard, raw)
		raw.Close()
	}
	if out := stderr.String(); out != "" {
		t.Fatalf("client-caused TLS handshake failures written to the process's standard logger (stderr), one line per connection:\n%s", out)
	}
}

package esplora

import (
	"context"
	"net"
	"strings"
	"testing"
)

// TestURLsSchemeOfEmptyHostListener: an address with an empty host
// (":3000") opens two sockets, IPv4 and IPv6; URLs, which the server logs at
// start and the node prints in its start-up summary, gives each listener
// the scheme it serves, not one guessed from its place in the list.
func TestURLsSchemeOfEmptyHostListener(t *testing.T) {
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 here: %v", err)
	}
	probe.Close()
	var logged []string
	s := New(Config{Listen: []string{":0"}, Logf: func(f string, a ...any) {
		logged = append(logged, f)
	}}, nil, nil)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	urls := s.URLs()
	t.Logf("Listen [\":0\"] (plain HTTP only): URLs %v", urls)
	if len(urls) != len(s.Addrs()) {
		t.Fatalf("%d URLs for %d listeners", len(urls), len(s.Addrs()))
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, "http://") {
			t.Errorf("URL %q for a plain HTTP listener (no TLSListen configured): want http://", u)
		}
	}
}

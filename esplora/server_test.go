package esplora

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestStartOnce checks that a second Start, or a Start after Shutdown, is
// refused: a second set of listeners with its own http.Server would keep
// serving after Shutdown, which would then wait for it forever.
func TestStartOnce(t *testing.T) {
	s := New(Config{Listen: []string{"127.0.0.1:0"}}, nil, nil)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	first := s.Addrs()[0].String()
	// A request answered (whatever the answer) shows the listener's Serve
	// goroutine running.
	hc := &http.Client{Timeout: 5 * time.Second}
	if resp, err := hc.Get("http://" + first + "/nosuchroute"); err == nil {
		resp.Body.Close()
	}
	if err := s.Start(); err == nil {
		t.Errorf("a second Start succeeded (listening on %v after %s)", s.Addrs(), first)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Shutdown with a 1 s context still blocked 30 s later")
	}
	if err := s.Start(); err == nil {
		t.Errorf("Start after Shutdown succeeded (listening on %v)", s.Addrs())
		_ = s.Shutdown(ctx)
	}

	// A server never started does not start after Shutdown either.
	s = New(Config{Listen: []string{"127.0.0.1:0"}}, nil, nil)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Errorf("Start after Shutdown of a server never started succeeded (listening on %v)", s.Addrs())
		_ = s.Shutdown(ctx)
	}
}

// TestPathPrefixWithoutSlashRefused checks that Start refuses a PathPrefix
// without a leading slash, which no request path matches, as the node
// refuses such an --esplorapath, and takes one with it.
func TestPathPrefixWithoutSlashRefused(t *testing.T) {
	for _, p := range []string{"api", "api/", "/api x"} {
		s := New(Config{Listen: []string{"127.0.0.1:0"}, PathPrefix: p}, nil, nil)
		if err := s.Start(); err == nil {
			t.Errorf("PathPrefix %q: Start succeeded, serving %v", p, s.URLs())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = s.Shutdown(ctx)
		cancel()
	}
	s := New(Config{Listen: []string{"127.0.0.1:0"}, PathPrefix: "/api/"}, nil, nil)
	if err := s.Start(); err != nil {
		t.Fatalf("PathPrefix \"/api/\": %v", err)
	}
	defer s.Shutdown(context.Background())
	if u := s.URLs()[0]; u != "http://"+s.Addrs()[0].String()+"/api" {
		t.Errorf("PathPrefix \"/api/\": URL %q", u)
	}
}

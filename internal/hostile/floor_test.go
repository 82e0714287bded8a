package hostile

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestFloor probes an echo server as the benchmark does, and counts the
// failures once the server is gone.
func TestFloor(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ServeEcho(l) }()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r := Floor(ctx, l.Addr().String(), 20*time.Millisecond)
	if r.Requests < 5 || r.Errors != 0 || r.Wrong != 0 || len(r.Latencies) != r.Requests {
		t.Fatalf("floor against a live echo: %+v", r)
	}
	if r.P50 <= 0 || r.P99 < r.P50 || r.Max < r.P99 {
		t.Fatalf("percentiles out of order: %v %v %v", r.P50, r.P99, r.Max)
	}

	l.Close()
	if err := <-served; err == nil {
		t.Fatal("ServeEcho returned no error once its listener was closed")
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	r = Floor(ctx2, l.Addr().String(), 20*time.Millisecond)
	if r.Errors == 0 || len(r.Latencies) != 0 {
		t.Fatalf("floor against no server: %+v", r)
	}
}

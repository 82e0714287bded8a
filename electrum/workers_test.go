package electrum

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Every function handed to the workers runs exactly once, whether a worker
// was idle or a new one started, before and after the server stops.
func TestWorkersRunEverything(t *testing.T) {
	quit := make(chan struct{})
	w := newWorkers(quit, new(sync.WaitGroup))
	var ran atomic.Int64
	var wg sync.WaitGroup
	for round := 0; round < 2; round++ {
		for i := 0; i < 500; i++ {
			wg.Add(1)
			w.run(func() {
				defer wg.Done()
				ran.Add(1)
			})
		}
		wg.Wait()
		if round == 0 {
			close(quit)
		}
	}
	if got := ran.Load(); got != 1000 {
		t.Fatalf("%d functions ran, want 1000", got)
	}
}

package electrum

import (
	"context"
	"testing"
	"time"
)

// Large answers take their bytes from one budget for all sessions while they
// are built: a second one waits until the first is encoded, a request whose
// time runs out while waiting is answered "server busy", and small answers
// never wait.
func TestBuildBudgetBoundsLargeAnswers(t *testing.T) {
	srv := New(Config{MaxSend: 200_000, MaxSendBacklog: 100_000}, nil)
	budget := srv.cfg.buildBudget()
	if want := max(4*int64(srv.cfg.MaxSendBacklog), 2*int64(srv.cfg.MaxSend)); budget != want || budget < buildBudgetMin {
		t.Fatalf("budget %d, want %d", budget, want)
	}
	// An answer larger than the budget takes all of it rather than never
	// being built.
	n := int(budget) / historyEntryLen
	release, err := srv.reserveBuild(context.Background(), n, historyEntryLen)
	if err != nil || release == nil {
		t.Fatalf("first large answer: %v", err)
	}

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := srv.reserveBuild(short, n/4, historyEntryLen); err == nil {
		t.Fatal("a second large answer was built while the budget was spent")
	} else if rerr, ok := err.(*RPCError); !ok || rerr.Code != codeServerBusy {
		t.Fatalf("waiting past the request's time: %v, want server busy", err)
	}

	small, err := srv.reserveBuild(short, 10, historyEntryLen)
	if err != nil || small != nil {
		t.Fatalf("a small answer waited or took from the budget: %v", err)
	}

	got := make(chan error, 1)
	go func() {
		r, err := srv.reserveBuild(context.Background(), n/4, historyEntryLen)
		if r != nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("built before the budget was released: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := <-got; err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if !srv.building.TryAcquire(budget) {
		t.Fatal("the budget was not all given back")
	}
}

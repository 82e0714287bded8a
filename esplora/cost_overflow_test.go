package esplora

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestOverflowDebtLocksOutNewcomersAfterFloodDecayed: a flood filled the
// cost accounts (maxAccounts /64s, each over the soft limit) and, while they
// were full, one abuser without an account of its own sent an 8 MB body,
// charged to the shared overflow account. Two hours later every one of the
// flood's accounts has decayed to zero: nobody is slowed, any of them may be
// evicted. A client from a new address must then get an account of its own
// (docs/OPERATIONS.md: "past that a new address takes the place of one under
// the soft limit, and when there is none the new addresses share one
// account"). It was refused 429 on the abuser's debt: a refused request was
// never charged, so no account was created, no sweep ran, and every new
// address stayed refused until the overflow account had decayed (here
// (1600-20)/0.002 s, about nine days).
//
// The flood and the abuser's charge are placed two hours back through
// current's own now argument (as TestCostAccountsBounded does); the newcomer
// is a real HTTP request now.
func TestOverflowDebtLocksOutNewcomersAfterFloodDecayed(t *testing.T) {
	s, addr := startBare(t, Config{CostSoftLimit: 5, CostHardLimit: 20, RequestSleep: time.Millisecond})
	l := s.limits
	past := time.Now().Add(-2 * time.Hour)
	s.costs.mu.Lock()
	// The flood, two hours ago: 10.5 each (over soft 5, under hard 20).
	for i := 0; i < maxAccounts; i++ {
		acc := s.costs.current(fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff), l, past)
		acc.cost += requestCost + float64(10*int(l.unit))/l.unit
	}
	// The abuser, then: an 8 MB POST /tx charged as charge does.
	acc := s.costs.current("198.51.100.7", l, past)
	acc.cost += requestCost + float64(8_000_000)/l.unit
	_, own := s.costs.m["198.51.100.7"]
	s.costs.mu.Unlock()
	if own {
		t.Fatalf("setup: the abuser got an account of its own; want it charged in the overflow account")
	}
	// Now: every flood account has decayed to nothing.
	now := time.Now()
	s.costs.mu.Lock()
	held, live := len(s.costs.m), 0
	for _, a := range s.costs.m {
		if a.decayed(l, now) > 0 {
			live++
		}
	}
	overflow := s.costs.overflow.decayed(l, now)
	s.costs.mu.Unlock()

	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Get("http://" + addr + "/nothing") // 127.0.0.1: a new address
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("%d accounts held, %d of them above zero; overflow account %.0f (hard limit 20); new client's first request: %d",
		held, live, overflow, resp.StatusCode)
	if resp.StatusCode == http.StatusTooManyRequests {
		t.Fatalf("a new client's first request refused 429 on the shared overflow account's debt (%.0f) although all %d accounts held are at zero and may be evicted to give it its own",
			overflow, held)
	}
}

// TestOverflowLockoutNeverClears: as above, then 30,000 further new
// addresses (more than a quarter of maxAccounts, after which an account
// created would sweep the accounts decayed to nothing) each send a request.
// Each gets an account of its own in place of a dead one, and the next new
// client is answered: they were all refused on the overflow account's debt
// while the 100,000 dead accounts stayed.
func TestOverflowLockoutNeverClears(t *testing.T) {
	s := New(Config{CostSoftLimit: 5, CostHardLimit: 20, RequestSleep: time.Millisecond}, nil, nil)
	l := s.limits
	past := time.Now().Add(-2 * time.Hour)
	s.costs.mu.Lock()
	for i := 0; i < maxAccounts; i++ {
		acc := s.costs.current(fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff), l, past)
		acc.cost += requestCost + float64(10*int(l.unit))/l.unit
	}
	s.costs.current("198.51.100.7", l, past).cost += requestCost + float64(8_000_000)/l.unit
	s.costs.mu.Unlock()
	serve := func(i int) int {
		r := httptest.NewRequest(http.MethodGet, "/nothing", nil)
		r.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:1", (i>>16)&255, (i>>8)&255, i&255)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	const newcomers = 30_000
	refused := 0
	for i := 0; i < newcomers; i++ {
		if serve(i) == http.StatusTooManyRequests {
			refused++
		}
	}
	last := serve(newcomers)
	now := time.Now()
	s.costs.mu.Lock()
	held, live := len(s.costs.m), 0
	for _, a := range s.costs.m {
		if a.decayed(l, now) > 0 {
			live++
		}
	}
	s.costs.mu.Unlock()
	t.Logf("%d of %d new clients refused; %d accounts held, %d above zero; next new client: %d", refused, newcomers, held, live, last)
	if last == http.StatusTooManyRequests {
		t.Fatalf("after %d new clients (%d refused 429) the accounts still hold %d dead accounts (%d above zero) and a new client is still refused: the shared overflow debt locks out every new address",
			newcomers, refused, held, live)
	}
}

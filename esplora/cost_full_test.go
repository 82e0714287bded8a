package esplora

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNewClientChargedWhenAccountsFullOfSlowed: once the accounts are at
// maxAccounts and every one read is over the soft limit (slowed, not
// refused), a new address has no account of its own but is still charged
// (in the shared overflow account): pushed past the hard limit, it gets
// 429. It was charged nothing and never slowed nor refused.
func TestNewClientChargedWhenAccountsFullOfSlowed(t *testing.T) {
	s, addr := startBare(t, Config{CostSoftLimit: 5, CostHardLimit: 20, RequestSleep: time.Millisecond})
	// maxAccounts other /64s, each charged 10 units of bytes (10.5 with the
	// request): over the soft limit 5, under the hard limit 20; at 0.002 a
	// second of decay they stay over the soft limit for 45 minutes.
	for i := 0; i < maxAccounts; i++ {
		s.costs.charge(fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff), s.limits, 10*int(s.limits.unit))
	}
	s.costs.mu.Lock()
	held := len(s.costs.m)
	s.costs.mu.Unlock()
	client := &http.Client{Timeout: 60 * time.Second}
	const abuser = "127.0.0.1"
	// The abuser: one 8 MB POST /tx (1,600 units, 80 times the hard limit).
	resp, err := client.Post("http://"+addr+"/tx", "text/plain", strings.NewReader(strings.Repeat("00", 4_000_000)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	after := accountCost(s, abuser)
	resp, err = client.Get("http://" + addr + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("%d accounts held over the soft limit; abuser's cost after an 8 MB POST: %.0f; its next request: %d", held, after, resp.StatusCode)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("client that sent 8 MB (1,600 units, hard limit 20) not charged while the accounts are full of slowed clients: cost %.0f, next request answered %d, want 429",
			after, resp.StatusCode)
	}
}

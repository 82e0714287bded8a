package esplora

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestCostAccountsReturnToRest: 10,000 clients (behind a reverse proxy on
// loopback, told apart by X-Forwarded-For as docs/OPERATIONS.md says) make a
// request each and leave; their accounts decay to nothing. As new clients
// come (300 more), the departed clients' accounts are forgotten, as the
// Electrum server forgets its decayed subnet groups; they were kept until
// there were maxAccounts (100,000) of them.
func TestCostAccountsReturnToRest(t *testing.T) {
	_, loop, _ := net.ParseCIDR("127.0.0.0/8")
	// A hard limit of 1e9 decays 100,000 a second: a request's 0.5 plus
	// its bytes is gone within microseconds.
	s, addr := startBare(t, Config{ExemptNets: []*net.IPNet{loop}, CostHardLimit: 1e9})
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(i int) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/nothing", nil)
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", (i>>16)&255, (i>>8)&255, i&255))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	const departed, newcomers = 10_000, 300
	for i := 0; i < departed; i++ {
		get(i)
	}
	// Wait (hang guard only) until every account has decayed to nothing.
	for end := time.Now().Add(30 * time.Second); ; {
		s.costs.mu.Lock()
		live := 0
		now := time.Now()
		for _, acc := range s.costs.m {
			if acc.cost-now.Sub(acc.stamp).Seconds()*s.limits.hard/10000 > 0 {
				live++
			}
		}
		s.costs.mu.Unlock()
		if live == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d accounts still carry cost", live)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := departed; i < departed+newcomers; i++ {
		get(i)
	}
	s.costs.mu.Lock()
	n := len(s.costs.m)
	s.costs.mu.Unlock()
	t.Logf("%d accounts held after %d decayed clients left and %d new ones came", n, departed, newcomers)
	if n > newcomers {
		t.Fatalf("%d cost accounts held; want at most the %d clients whose cost has not decayed (the %d departed clients' accounts, all at zero, are never forgotten below maxAccounts=%d)",
			n, newcomers, departed, maxAccounts)
	}
}

package esplora

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestThrottledAccountSurvivesAddressFlood: a client pushed past the hard
// cost limit is refused (429) until its account decays. A flood of requests
// from fresh addresses (IPv6 /64s of one /40, each a separate account, none
// of them near the soft limit) does not make the server forget the
// throttled client's account: past maxAccounts an account went at random
// for every new one, the throttled one among them, its cost reset to zero.
func TestThrottledAccountSurvivesAddressFlood(t *testing.T) {
	// soft 5, hard 20: an account decays 0.002 a second, so a flood
	// request's 0.5 outlives the test and a throttled client stays so.
	s, addr := startBare(t, Config{CostSoftLimit: 5, CostHardLimit: 20, RequestSleep: time.Millisecond})
	client := &http.Client{Timeout: 60 * time.Second}
	// The abuser: one 8 MB POST /tx (charged by the bytes read).
	resp, err := client.Post("http://"+addr+"/tx", "text/plain", strings.NewReader(strings.Repeat("00", 4_000_000)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	const abuser = "127.0.0.1"
	resp, err = client.Get("http://" + addr + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("abuser not refused before the flood: %d", resp.StatusCode)
	}
	before := accountCost(s, abuser)
	// The flood: one cheap request from each of 100 /64s through the
	// server, then a request's charge from each of 800,000 more (the
	// accounts' part of a request, without the HTTP around it).
	const flood = 800_000
	for i := 0; i < 100; i++ {
		r := httptest.NewRequest(http.MethodGet, "/nothing", nil)
		r.RemoteAddr = fmt.Sprintf("[2001:db9:%x:%x::1]:1", i>>16, i&0xffff)
		s.ServeHTTP(httptest.NewRecorder(), r)
	}
	for i := 0; i < flood; i++ {
		s.costs.charge(fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff), s.limits, 0)
	}
	s.costs.mu.Lock()
	held := len(s.costs.m)
	_, kept := s.costs.m[abuser]
	s.costs.mu.Unlock()
	resp, err = client.Get("http://" + addr + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("abuser's cost %.0f (hard limit 20) before the flood; after %d new addresses: %d accounts held, abuser's account kept %v, its next request %d",
		before, flood, held, kept, resp.StatusCode)
	if !kept || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("throttled client's account (cost %.0f, hard limit 20) forgotten after a flood of %d cheap new addresses: its request now answered %d, want 429",
			before, flood, resp.StatusCode)
	}
}

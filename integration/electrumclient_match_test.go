package integration

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestNextStatusMatchMayCallClient: NextStatus's match may call the
// client, for example to check the status against the history: it does
// not run under the client's lock, which the call needs.
func TestNextStatusMatchMayCallClient(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{})
	c, err := DialElectrum(ctx, n.ElectrumAddr)
	if err != nil {
		t.Fatal(err)
	}
	// No deferred Close: were the lock held forever, Close (which waits
	// for the read loop, itself waiting for the lock) would hang too.
	if _, _, err := c.Version(ctx, "match-test", "1.4"); err != nil {
		t.Fatal(err)
	}
	sh := ScriptHash(MiningScript())
	if _, err := c.SubscribeScriptHash(ctx, sh); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var calls int
		status, err := c.NextStatus(ctx, sh, func(s *string) bool {
			calls++
			h, err := c.GetHistory(ctx, sh)
			return err == nil && len(h) == 1 && s != nil && *s == *Status(h)
		})
		if err == nil && (status == nil || calls == 0) {
			t.Errorf("NextStatus returned %v after %d matches", str(status), calls)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("NextStatus: %v", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("NextStatus whose match calls the client (GetHistory) never returned: the match runs under the client's lock, which the call needs")
	}
	if c.PendingNotifications() != 0 {
		t.Errorf("%d notifications still queued after NextStatus took the only one", c.PendingNotifications())
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("Close hung")
	}
}

// TestConcurrentTakersGetEachNotificationOnce: callers waiting for
// notifications at once, with a match that calls the client, each get
// the oldest queued one they accept, and every notification goes to
// exactly one of them.
func TestConcurrentTakersGetEachNotificationOnce(t *testing.T) {
	const takers, each = 4, 50
	ctx := testContext(t)
	addr := scriptedServer(t, func(req map[string]any) []string {
		id, _ := json.Marshal(req["id"])
		out := []string{`{"jsonrpc":"2.0","id":` + string(id) + `,"result":null}`}
		if req["method"] == "server.version" {
			for i := range takers * each {
				out = append(out, fmt.Sprintf(`{"jsonrpc":"2.0","method":"x","params":[%d]}`, i))
			}
		}
		return out
	})
	c, err := DialElectrum(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(ctx, "server.version"); err != nil {
		t.Fatal(err)
	}
	got := make([][]int, takers)
	var wg sync.WaitGroup
	for k := range takers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				n, err := c.Notification(ctx, "x", func(Notification) bool {
					_, err := c.Call(ctx, "ping")
					return err == nil
				})
				var p []int
				if err != nil || json.Unmarshal(n.Params, &p) != nil || len(p) != 1 {
					t.Errorf("taker %d: %+v %v", k, n, err)
					return
				}
				got[k] = append(got[k], p[0])
			}
		}()
	}
	wg.Wait()
	seen := make(map[int]int)
	for k, g := range got {
		for i, v := range g {
			seen[v]++
			if i > 0 && v <= g[i-1] {
				t.Errorf("taker %d got %d after %d: not the oldest queued", k, v, g[i-1])
			}
		}
	}
	for i := range takers * each {
		if seen[i] != 1 {
			t.Errorf("notification %d taken %d times, want once", i, seen[i])
		}
	}
	if n := c.PendingNotifications(); n != 0 {
		t.Errorf("%d notifications left", n)
	}
}

package rpcext

import (
	"testing"
	"time"
)

// TestUnauthenticatedWebsocketsDoNotLockOutClients: a client without
// credentials that opens websockets and sends nothing holds a slot of
// MaxWebsockets for the 10 s it has to authenticate, and opens the next one
// as soon as the server closes it: every slot stays taken by someone who
// never authenticates, and a wallet with the right credentials (rpcclient
// sends them with the upgrade) is answered 503 for as long as the attacker
// keeps it up. An authenticated upgrade is admitted while unauthenticated
// connections hold the slots.
func TestUnauthenticatedWebsocketsDoNotLockOutClients(t *testing.T) {
	t.Parallel()
	const slots = 4
	ts := startServer(t, newTestNode(t), func(c *Config) { c.MaxWebsockets = slots })
	// The attacker: each of its connections is re-opened once the server
	// closes it.
	reopened := make(chan struct{}, 4*slots)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	for i := 0; i < slots; i++ {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				conn, _, err := wsDial(t, ts, false)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				reopened <- struct{}{}
				conn.SetReadDeadline(time.Now().Add(requestReadTimeout + 20*time.Second))
				_, _, _ = conn.ReadMessage() // until the server closes it
				conn.Close()
			}
		}()
	}
	waitOpen := func() {
		for i := 0; i < slots; i++ {
			select {
			case <-reopened:
			case <-time.After(requestReadTimeout + 20*time.Second):
				t.Fatal("the unauthenticated websockets were not opened")
			}
		}
	}
	for round := 0; round < 2; round++ {
		waitOpen() // the attacker holds every slot (again, after the timeout)
		conn, resp, err := wsDial(t, ts, true)
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Fatalf("round %d: a websocket with the right credentials: %v (status %d) while %d unauthenticated ones hold the slots",
				round, err, status, slots)
		}
		conn.Close()
	}
}

package rpcext

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/gorilla/websocket"
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

// TestWebsocketSubscriptionsBounded: notifyreceived (open to the limited
// user) adds every address of every message to the client's subscriptions
// and nothing bounds them: a client sending message after message, each
// within MaxRequestBytes, makes the server hold any number of them (about
// 100 bytes each). A client's subscriptions are bounded, as an Electrum
// session's are (--electrummaxsubspersession, 75,000).
func TestWebsocketSubscriptionsBounded(t *testing.T) {
	t.Parallel()
	const bound = 75_000
	ts := startServer(t, newTestNode(t), func(c *Config) {
		c.LimitUser, c.LimitPass = "lim", "limpass"
	})
	d := websocket.Dialer{TLSClientConfig: ts.tlsConfig(t)}
	h := http.Header{}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth("lim", "limpass")
	h.Set("Authorization", req.Header.Get("Authorization"))
	conn, _, err := d.Dial("wss://"+ts.addr+"/ws", h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const messages, perMessage = 4, 30_000
	next := uint64(0)
	accepted := 0
	for m := 0; m < messages; m++ {
		addrs := make([]string, perMessage)
		for i := range addrs {
			var h160 [20]byte
			next++
			binary.BigEndian.PutUint64(h160[:], next)
			a, err := address.NewAddressPubKeyHash(h160[:], ts.node.params)
			if err != nil {
				t.Fatal(err)
			}
			addrs[i] = a.EncodeAddress()
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "1.0", "id": m, "method": "notifyreceived",
			"params": []any{addrs}})
		conn.SetWriteDeadline(time.Now().Add(time.Minute)) // hang guards
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		if err := conn.WriteMessage(websocket.TextMessage, body); err != nil {
			t.Logf("message %d: %v (disconnected)", m, err)
			break
		}
		_, reply, err := conn.ReadMessage()
		if err != nil {
			t.Logf("message %d: %v (disconnected)", m, err)
			break
		}
		if !strings.Contains(string(reply), `"error":null`) {
			t.Logf("message %d refused: %.200s", m, reply)
			break
		}
		accepted += perMessage
	}
	held := 0
	ts.srv.mu.Lock()
	for c := range ts.srv.ws {
		c.mu.Lock()
		held += len(c.watch.received) + len(c.watch.spent)
		c.mu.Unlock()
	}
	ts.srv.mu.Unlock()
	t.Logf("%d addresses sent in %d messages of %d: %d subscriptions held", messages*perMessage, messages, perMessage, held)
	if held > bound {
		t.Fatalf("one websocket client holds %d subscriptions (%d accepted), want at most %d", held, accepted, bound)
	}
}

package rpcext

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
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

// smallReceiveBuffer dials with a small socket receive buffer, as a client
// that reads slowly has: the server's writes block soon after it stops
// reading, instead of filling megabytes of kernel buffers.
func smallReceiveBuffer(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return d.DialContext(ctx, network, addr)
}

// TestUnreadWebsocketMessagesBounded: a websocket client that lets more
// than 10,000 messages wait unread is disconnected (docs/OPERATIONS.md).
// The writer takes the whole queue at once and sets its count back to zero
// before it writes it, so the messages it has taken and not yet written
// count for nothing: a client that reads a little at the right moment has
// twice the bound (and twice the 64 MiB) waiting for it, and stays.
func TestUnreadWebsocketMessagesBounded(t *testing.T) {
	t.Parallel()
	ts := startServer(t, newTestNode(t), func(c *Config) { c.DisableTLS = true })
	d := websocket.Dialer{NetDialContext: smallReceiveBuffer, ReadBufferSize: 4096}
	h := http.Header{}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(testUser, testPass)
	h.Set("Authorization", req.Header.Get("Authorization"))
	conn, _, err := d.Dial("ws://"+ts.addr+"/ws", h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var client *wsClient
	for client == nil {
		ts.srv.mu.Lock()
		for c := range ts.srv.ws {
			client = c
		}
		ts.srv.mu.Unlock()
	}
	queued := func() int {
		client.mu.Lock()
		defer client.mu.Unlock()
		return len(client.out)
	}
	// Each answer echoes its 2,000-byte id: the kernel's buffers take a
	// few hundred of them at most.
	id := strings.Repeat("x", 2000)
	const burst = 9000 // under the bound of 10,000
	sent := 0
	disconnected := func() bool {
		select {
		case <-client.quit:
			return true
		default:
			return false
		}
	}
	// send reports false once the server has disconnected the client.
	send := func(n int) bool {
		for i := 0; i < n; i++ {
			conn.SetWriteDeadline(time.Now().Add(time.Minute))
			msg := fmt.Sprintf(`{"jsonrpc":"1.0","id":"%s%d","method":"getblockcount","params":[]}`, id, sent)
			if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				if disconnected() {
					return false
				}
				t.Fatalf("request %d: %v", sent, err)
			}
			sent++
		}
		return true
	}
	// settled waits until the server has answered every request sent (the
	// queue no longer grows) and returns the queue's length.
	settled := func() int {
		deadline := time.Now().Add(time.Minute) // a hang guard
		last, same := -1, 0
		for same < 5 {
			if time.Now().After(deadline) {
				t.Fatalf("the queue still grows: %d", queued())
			}
			time.Sleep(100 * time.Millisecond)
			if q := queued(); q == last {
				same++
			} else {
				last, same = q, 0
			}
		}
		return last
	}
	send(burst)
	// What is not queued was written: it waits in the kernel's buffers.
	inKernel := burst - settled()
	// Read until the writer has taken the queue; then stop reading.
	read := 0
	for queued() > 0 {
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		if _, _, err := conn.ReadMessage(); err != nil {
			t.Fatalf("reading answer %d: %v", read, err)
		}
		read++
	}
	if !send(burst) {
		return // disconnected: the bound holds
	}
	q := settled()
	inServer := sent - read - inKernel
	t.Logf("%d requests, %d answers read, about %d in the kernel's buffers; in the server: %d queued, %d taken by the writer",
		sent, read, inKernel, q, inServer-q)
	if disconnected() {
		return // the bound holds
	}
	if inServer > wsMaxQueuedMessages {
		t.Fatalf("%d answers wait in the server for a connected client that does not read (%d counted in its queue), bound %d",
			inServer, q, wsMaxQueuedMessages)
	}
}

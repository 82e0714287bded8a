package electrum

// The metrics and log lines count what their help texts and
// docs/OPERATIONS.md say, on every path that does the thing.

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// TestHardLimitDisconnectionLoggedOnce: a session cut off at the hard cost
// limit inside a batch is logged once, not once per batch member left
// (which would let a client choose how many lines it costs).
func TestHardLimitDisconnectionLoggedOnce(t *testing.T) {
	var logs logLines
	fx := newFixture(t, func(c *Config) {
		c.ExemptNets = otherNets(t)
		c.CostSoftLimit = 250
		c.CostHardLimit = 1050
		c.RequestSleep = time.Millisecond
		c.Logf = logs.logf
	})
	c := fx.client(t, "1.4")
	// 60 members, each an unknown method (an error costs 100): the
	// session crosses the hard limit about the 11th member.
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < 60; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"no.such.method"}`)
	}
	b.WriteByte(']')
	c.send(b.String())
	select {
	case <-c.batches:
	case <-time.After(30 * time.Second):
		t.Fatal("no batch answer")
	}
	if !c.closedByServer() {
		t.Fatal("session over the hard limit not closed")
	}
	costCounted(fx.s)
	lines := logs.matching("disconnected: excessive resource usage")
	if len(lines) != 1 {
		t.Fatalf("one disconnection at the hard limit logged %d times (want once); first: %q", len(lines), lines[0])
	}
}

// TestResponseTooLargeCountsAsError: a request answered "response too
// large" counts in electrum_request_errors_total.
func TestResponseTooLargeCountsAsError(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	fx.s, fx.addr = startServerMetrics(t, fx.f, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Banner = strings.Repeat("b", minMaxSend+1)
	}, reg)
	c := fx.client(t, "1.4")
	if _, rerr := c.call("server.banner"); rerr == nil || !strings.Contains(rerr.Message, "response too large") {
		t.Fatalf("oversized banner answered %v, want response too large", rerr)
	}
	labels := map[string]string{"method": "server.banner"}
	if v, _ := metricValue(t, reg, "electrum_requests_total", labels); v != 1 {
		t.Fatalf("electrum_requests_total{server.banner} = %v, want 1", v)
	}
	if v, _ := metricValue(t, reg, "electrum_request_errors_total", labels); v != 1 {
		t.Fatalf("server.banner answered with an error (response too large), electrum_request_errors_total = %v, want 1", v)
	}
}

// TestTLSHandshakeRefusalCounted: a TLS connection refused because its
// address has MaxSessionsPerIP handshakes pending is counted in
// electrum_sessions_refused_total and logged, as every refusal is.
func TestTLSHandshakeRefusalCounted(t *testing.T) {
	var logs logLines
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startServerMetrics(t, fx.f, func(c *Config) {
		c.Listeners = append(c.Listeners, Listener{Transport: TLS, Listener: l})
		c.CertDir = t.TempDir()
		c.MaxSessionsPerIP = 1
		c.Logf = logs.logf
	}, reg)
	// The first connection holds the address's one handshake place.
	first, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		pending := s.handshakes
		s.mu.Unlock()
		if pending == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first connection's handshake was not pending within 30 s")
		}
	}
	second, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := second.Read(make([]byte, 1)); err == nil {
		t.Fatal("second connection not closed")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("second connection not refused (still open)")
	}
	total := 0.0
	for r := RefusalReason(0); r < numRefusalReasons; r++ {
		v, _ := metricValue(t, reg, "electrum_sessions_refused_total", map[string]string{"reason": r.String()})
		total += v
	}
	if total != 1 {
		t.Errorf("a TLS connection refused for the per-address limit: electrum_sessions_refused_total sums to %v, want 1", total)
	}
	if l := logs.matching("refused a connection"); len(l) != 1 {
		t.Errorf("refusal log lines %q, want one", l)
	}
}

// TestCostGroupsGaugeFalls: electrum_cost_groups forgets a subnet once its
// sessions have closed and its cost has decayed, without waiting for new
// connections.
func TestCostGroupsGaugeFalls(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	s, addr := startServerMetrics(t, fx.f, func(c *Config) {
		c.ExemptNets = otherNets(t)
		// Decay of a group: CostHardLimit/10,000 a second = 100/s.
		c.CostHardLimit = 1_000_000
		c.CostSoftLimit = 500_000
	}, reg)
	c := dial(t, addr)
	c.negotiate("1.4")
	c.must(nil, "blockchain.scripthash.get_balance", fx.shA.String())
	if v, _ := metricValue(t, reg, "electrum_cost_groups", nil); v != 1 {
		t.Fatalf("electrum_cost_groups = %v with one session, want 1", v)
	}
	c.conn.Close()
	for deadline := time.Now().Add(10 * time.Second); s.SessionCount() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("session not closed")
		}
	}
	// The session's cost (a few units) decays at 100 a second.
	time.Sleep(time.Second)
	if v, _ := metricValue(t, reg, "electrum_cost_groups", nil); v != 0 {
		t.Fatalf("electrum_cost_groups = %v with no session open and the subnet's cost decayed, want 0", v)
	}
}

// TestWebSocketOversizeNotClientClosed: a session the server closes for a
// WebSocket message over MaxRecv (1009) is counted as a protocol error,
// not as closed by the client.
func TestWebSocketOversizeNotClientClosed(t *testing.T) {
	fx := newFixtureChain(t)
	reg := prometheus.NewRegistry()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startServerMetrics(t, fx.f, func(c *Config) {
		c.Listeners = append(c.Listeners, Listener{Transport: WS, Listener: l})
		c.MaxRecv = 1000
	}, reg)
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+l.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["t","1.4"]}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	big := `{"jsonrpc":"2.0","id":2,"method":"server.ping","params":["` + strings.Repeat("x", 5000) + `"]}`
	// The client's frame goes out in more than one write; the server
	// may reset the connection before the last (its close is then
	// lost), so neither error is checked: the session's end is.
	ws.WriteMessage(websocket.TextMessage, []byte(big))
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err = ws.ReadMessage()
	t.Logf("client read after the oversized frame: %v", err)
	for deadline := time.Now().Add(10 * time.Second); s.SessionCount() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("session not closed")
		}
	}
	if v, _ := metricValue(t, reg, "electrum_sessions_disconnected_total", map[string]string{"reason": "client_closed"}); v != 0 {
		t.Fatalf("a session the server closed (frame over MaxRecv, 1009) counted as client_closed (%v)", v)
	}
}

// TestNotificationsCountedOnlyWhenQueued: electrum_notifications_total
// counts the notifications queued, not those a session cut off as not
// reading never got.
func TestNotificationsCountedOnlyWhenQueued(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	fx.s, fx.addr = startServerMetrics(t, fx.f, func(c *Config) {
		// Room for one notification (about 160 bytes) and no more.
		c.MaxSendBacklog = 200
		c.CostHardLimit = -1
	}, reg)
	c := fx.client(t, "1.4")
	for _, sh := range []string{fx.shA.String(), fx.shB.String(), fx.shC.String()} {
		c.must(nil, "blockchain.scripthash.subscribe", sh)
	}
	tx := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}},
		wire.NewTxOut(1_0000_0000, fx.a), wire.NewTxOut(1_0000_0000, fx.b), wire.NewTxOut(1_0000_0000, fx.c))
	if err := fx.f.Broadcast(tx); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool([]indexers.ScriptHash{fx.shA, fx.shB, fx.shC})
	if err := fx.s.flushNotifications(contextWithTimeout(10e9)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for fx.s.Stats().Disconnected[DisconnectNotReading.String()] == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if d := fx.s.Stats().Disconnected[DisconnectNotReading.String()]; d != 1 {
		t.Fatalf("session not cut off as not reading (%d); the test's premise failed", d)
	}
	if v, _ := metricValue(t, reg, "electrum_notifications_total", nil); v > 1 {
		t.Fatalf("electrum_notifications_total = %v; at most one notification was queued before the session was cut off", v)
	}
}

// TestOversizeRequestBytesCounted: the bytes of a request over MaxRecv,
// read to its end and refused, count in electrum_received_bytes_total.
func TestOversizeRequestBytesCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	fx.s, fx.addr = startServerMetrics(t, fx.f, func(c *Config) {
		c.MaxRecv = 1000
		c.CostHardLimit = -1
	}, reg)
	c := fx.client(t, "1.4")
	tcp := map[string]string{"transport": "tcp"}
	before, _ := metricValue(t, reg, "electrum_received_bytes_total", tcp)
	const size = 100_000
	ch := c.expectNullID()
	c.send(`{"jsonrpc":"2.0","id":7,"method":"server.ping","params":["` + strings.Repeat("x", size) + `"]}`)
	if r := c.await(ch); r.Error == nil || !strings.Contains(r.Error.Message, "request too large") {
		t.Fatalf("oversized request answered %+v", r)
	}
	after, _ := metricValue(t, reg, "electrum_received_bytes_total", tcp)
	if after-before < size {
		t.Fatalf("a %d-byte request received: electrum_received_bytes_total grew by %v", size, after-before)
	}
}

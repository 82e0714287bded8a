package electrum

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestSessionLimits checks the total and per-IP session limits: a refused connection gets -102 or -101 and is closed, while admitted sessions go on.
func TestSessionLimits(t *testing.T) {
	t.Run("per IP", func(t *testing.T) {
		fx := newFixture(t, func(c *Config) { c.MaxSessionsPerIP = 2 })
		a, b := fx.client(t, "1.4"), fx.client(t, "1.4")
		r, closed := refusedConn(t, fx.addr)
		if r.Error == nil || r.Error.Code != codeExcessiveUsage || !closed {
			t.Fatalf("third session from one IP: %+v", r)
		}
		a.must(nil, "server.ping")
		b.must(nil, "server.ping")
	})
	t.Run("total", func(t *testing.T) {
		fx := newFixture(t, func(c *Config) { c.MaxSessions = 1 })
		a := fx.client(t, "1.4")
		r, closed := refusedConn(t, fx.addr)
		if r.Error == nil || r.Error.Code != codeServerBusy || !closed {
			t.Fatalf("session over the total: %+v", r)
		}
		a.must(nil, "server.ping")
	})
}

// refusedConn connects, reads the one line a refused connection gets and
// reports whether the server closed the connection after it.
func refusedConn(t *testing.T, addr string) (rpcResponse, bool) {
	t.Helper()
	return refusedConnFrom(t, addr, nil)
}

// refusedConnFrom is refusedConn from a local IP address (any when nil).
func refusedConnFrom(t *testing.T, addr string, local net.IP) (rpcResponse, bool) {
	t.Helper()
	d := net.Dialer{}
	if local != nil {
		d.LocalAddr = &net.TCPAddr{IP: local}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	var resp rpcResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	_, err = r.ReadByte()
	return resp, err == io.EOF
}

// TestResponseAndHistoryLimits checks "response too large" and "history too large" at the response limit, confirmed and mempool entries counted together.
func TestResponseAndHistoryLimits(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Banner = strings.Repeat("b", minMaxSend+1)
		// The fake's histories change below without a new tip, which
		// an index never does: the answer cache would rightly keep them.
		c.AnswerCache = -1
	})
	limit := fx.s.cfg.historyLimit()
	fx.f.setExtraHistory(fx.shB, limit-3) // tx1 + tx2 + tx3 = exactly the limit
	fx.f.setExtraHistory(fx.shA, limit+1)
	c := fx.client(t, "1.4")
	if _, rerr := c.call("server.banner"); rerr == nil || rerr.Code != codeInvalidRequest || !strings.Contains(rerr.Message, "response too large") {
		t.Fatalf("oversized banner: %v", rerr)
	}
	var hist []historyItem
	c.must(&hist, "blockchain.scripthash.get_history", fx.shB.String())
	if len(hist) != limit {
		t.Fatalf("history at the limit has %d entries, want %d", len(hist), limit)
	}
	for _, m := range []string{"blockchain.scripthash.get_history", "blockchain.scripthash.subscribe"} {
		if _, rerr := c.call(m, fx.shA.String()); rerr == nil || rerr.Code != codeBadRequest || rerr.Message != "history too large" {
			t.Fatalf("%s over the limit: %v", m, rerr)
		}
	}
	// One more mempool entry pushes B over the limit as well.
	fx.f.setExtraHistory(fx.shB, limit-2)
	if _, rerr := c.call("blockchain.scripthash.get_history", fx.shB.String()); rerr == nil || rerr.Message != "history too large" {
		t.Fatalf("history over the limit with mempool: %v", rerr)
	}
	// An unspent list over the limit is a response too large, not a
	// history too large: the history of C is short.
	fx.f.setExtraUnspent(fx.shC, fx.s.cfg.unspentLimit()+1)
	if _, rerr := c.call("blockchain.scripthash.listunspent", fx.shC.String()); rerr == nil || rerr.Code != codeInvalidRequest ||
		rerr.Message != fmt.Sprintf("response too large (over %d bytes)", minMaxSend) {
		t.Fatalf("listunspent over the limit: %v", rerr)
	}
	c.must(nil, "blockchain.scripthash.get_history", fx.shC.String())
	fx.f.setExtraUnspent(fx.shC, 0)
	own, _, err := fx.f.Unspent(fx.shC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fx.f.setExtraUnspent(fx.shC, fx.s.cfg.unspentLimit()-len(own)-len(fx.f.MempoolUnspent(fx.shC)))
	var utxos []json.RawMessage
	c.must(&utxos, "blockchain.scripthash.listunspent", fx.shC.String())
	if len(utxos) != fx.s.cfg.unspentLimit() {
		t.Fatalf("unspent list at the limit has %d entries, want %d", len(utxos), fx.s.cfg.unspentLimit())
	}
	// The session is still served.
	c.must(nil, "server.ping")
}

// TestErrorAnswersWithinMaxSend: an error message repeats at most maxEcho
// bytes of the client's input, however long the input and however JSON
// escapes it (each '<' is six bytes in an answer), and an answer whose id
// alone would take it over MaxSend is the error saying so, with id null.
func TestErrorAnswersWithinMaxSend(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.MaxSend = minMaxSend })
	lc := dialLines(t, fx.addr)
	lc.negotiate()
	long := strings.Repeat("<", 900_000)
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"` + long + `"}`,
		`{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_balance","params":["` + long + `"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"blockchain.transaction.broadcast","params":["` + long + `"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"server.ping","params":{"` + long + `":1}}`,
	} {
		lc.send(req)
		ans := lc.line()
		var resp rpcResponse
		decodeInto(t, ans, &resp)
		if resp.Error == nil || len(ans) > 1000 || !strings.Contains(resp.Error.Message, strings.Repeat("<", maxEcho-10)+"...") {
			t.Fatalf("a %d-byte request answered with %d bytes: %.300s", len(req), len(ans), ans)
		}
	}
	// An id longer than MaxSend (MaxRecv is larger here).
	lc.send(`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", minMaxSend) + `","method":"server.ping"}`)
	ans := lc.line()
	if want := fmt.Sprintf(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"response too large (over %d bytes)"},"id":null}`, minMaxSend); string(ans) != want {
		t.Fatalf("answer to an id over MaxSend: %.300s (%d bytes)", ans, len(ans))
	}
}

// TestBatchAnswerWithinMaxSend: a batch's answer, brackets, commas and
// replacement errors included, stays within MaxSend. The largest answers
// give way to their errors until it fits: here the banner's, which alone
// nearly fills MaxSend, and the 999 pings after it are answered.
func TestBatchAnswerWithinMaxSend(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Banner = strings.Repeat("b", minMaxSend-60)
	})
	lc := dialLines(t, fx.addr)
	lc.negotiate()
	var b strings.Builder
	b.WriteString(`[{"jsonrpc":"2.0","id":1,"method":"server.banner"}`)
	for i := 2; i <= 1000; i++ {
		fmt.Fprintf(&b, `,{"jsonrpc":"2.0","id":%d,"method":"server.ping"}`, i)
	}
	b.WriteString(`]`)
	lc.send(b.String())
	ans := lc.line()
	if len(ans) > minMaxSend {
		t.Fatalf("batch answer is %d bytes, over MaxSend %d by %d", len(ans), minMaxSend, len(ans)-minMaxSend)
	}
	var rs []rpcResponse
	decodeInto(t, ans, &rs)
	if len(rs) != 1000 || rs[0].Error == nil || rs[0].Error.Code != codeInvalidRequest {
		t.Fatalf("%d answers, the first %+v; want 1000, the banner's response too large", len(rs), rs[0])
	}
	for i, r := range rs[1:] {
		if r.Error != nil || string(r.Result) != "null" {
			t.Fatalf("ping %d answered %+v", i+2, r)
		}
	}
	// Ids so long that not even the members' errors fit: the batch is
	// answered with one error.
	id := `"` + strings.Repeat("i", minMaxSend/2) + `"`
	lc.send(`[{"jsonrpc":"2.0","id":` + id + `,"method":"server.ping"},{"jsonrpc":"2.0","id":` + id + `,"method":"server.ping"}]`)
	ans = lc.line()
	if want := fmt.Sprintf(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"response too large (over %d bytes)"},"id":null}`, minMaxSend); string(ans) != want {
		t.Fatalf("answer to a batch whose errors do not fit: %.300s (%d bytes)", ans, len(ans))
	}
}

// TestRequestTimeout checks that a request slower than RequestTimeout is answered -102 and the session goes on.
func TestRequestTimeout(t *testing.T) {
	// A place for the ping beside the slow handler, which keeps its own
	// until it finishes (500 ms, past the -102): with the default of one
	// place per GOMAXPROCS, -cpu 1 (or a one-CPU machine) left the ping
	// waiting behind it until its own timeout.
	fx := newFixture(t, func(c *Config) { c.RequestTimeout = 50 * time.Millisecond; c.Workers = 2 })
	c := fx.client(t, "1.4")
	fx.f.mu.Lock()
	fx.f.slow = 500 * time.Millisecond
	fx.f.mu.Unlock()
	if _, rerr := c.call("blockchain.scripthash.get_history", fx.shA.String()); rerr == nil || rerr.Code != codeServerBusy {
		t.Fatalf("slow request: %v", rerr)
	}
	c.must(nil, "server.ping")
}

// TestRequestTimeoutAnswersOnce checks that a request whose handler is still
// running at RequestTimeout is answered -102 then, alone or in a batch, and
// that the handler's own answer, once it finishes, is not sent as well.
func TestRequestTimeoutAnswersOnce(t *testing.T) {
	// Places enough for the held handlers and the pings beside them.
	fx := newFixture(t, func(c *Config) { c.RequestTimeout = 50 * time.Millisecond; c.Workers = 8 })
	c := fx.client(t, "1.4")
	hold := make(chan struct{})
	fx.f.mu.Lock()
	fx.f.hold = hold
	fx.f.mu.Unlock()
	// The read waits on hold, so the -102 can only come from the timer.
	if _, rerr := c.call("blockchain.scripthash.get_history", fx.shA.String()); rerr == nil || rerr.Code != codeServerBusy {
		t.Fatalf("request still running at the timeout: %v", rerr)
	}
	c.send(`[{"jsonrpc":"2.0","id":"b1","method":"blockchain.scripthash.get_balance","params":["` + fx.shB.String() + `"]},{"jsonrpc":"2.0","id":"b2","method":"server.ping","params":[]}]`)
	var batch []rpcResponse
	select {
	case batch = <-c.batches:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to the batch")
	}
	if len(batch) != 2 || batch[0].Error == nil || batch[0].Error.Code != codeServerBusy || batch[1].Error != nil {
		t.Fatalf("batch with a member still running at the timeout: %+v", batch)
	}
	c.must(nil, "server.ping")
	// Any answer without a waiter (the late ones) lands here.
	late := c.expectNullID()
	fx.f.mu.Lock()
	fx.f.hold = nil
	fx.f.mu.Unlock()
	close(hold)
	// The handlers finish: they leave the work gate once their answers
	// are encoded, and no request holds a slot. A round trip after that
	// shows what they sent.
	deadline := time.Now().Add(10 * time.Second)
	for (gateHeld(fx.s.gate) > 0 || requestsInFlight(fx.s) > 0) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	c.must(nil, "server.ping")
	select {
	case r := <-late:
		t.Fatalf("a second answer after the timeout's: %s %s %v", r.ID, r.Result, r.Error)
	default:
	}
}

// TestSubscriptionLimits checks the per-session and per-IP subscription limits (code 4) and that closing a session returns its subscriptions.
func TestSubscriptionLimits(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.MaxSubsPerSession = 2; c.MaxSubsPerIP = 3 })
	a := fx.client(t, "1.4")
	a.must(nil, "blockchain.scripthash.subscribe", fx.shA.String())
	a.must(nil, "blockchain.scripthash.subscribe", fx.shB.String())
	a.must(nil, "blockchain.scripthash.subscribe", fx.shB.String()) // resubscribing costs nothing
	if _, rerr := a.call("blockchain.scripthash.subscribe", fx.shC.String()); rerr == nil || rerr.Code != codeLimitExceeded {
		t.Fatalf("third subscription in a session: %v", rerr)
	}
	b := fx.client(t, "1.4")
	b.must(nil, "blockchain.scripthash.subscribe", fx.shC.String())
	if _, rerr := b.call("blockchain.scripthash.subscribe", fx.shA.String()); rerr == nil || rerr.Code != codeLimitExceeded {
		t.Fatalf("fourth subscription from one IP: %v", rerr)
	}
	// Closing a session returns its subscriptions to the IP.
	a.conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for fx.s.SessionCount() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	b.must(nil, "blockchain.scripthash.subscribe", fx.shA.String())
}

// TestCostThrottling checks that a session reaching the hard cost limit is answered -101 and disconnected while another session is served.
func TestCostThrottling(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.CostSoftLimit = 50
		c.CostHardLimit = 250
		c.RequestSleep = 20 * time.Millisecond
	})
	// The well-behaved client is on another subnet: sessions of one
	// subnet share their cost (TestSubnetCostGroup).
	good := dialFrom(t, fx.addr, net.IPv4(127, 0, 1, 1))
	good.negotiate("1.4")
	c := fx.client(t, "1.4")
	// Every error costs 100: the third unknown method crosses the hard
	// limit, and the request after it is answered -101 before the close.
	var last *RPCError
	for i := 0; i < 10; i++ {
		_, rerr := c.call("no.such.method")
		last = rerr
		if rerr != nil && rerr.Code == codeExcessiveUsage {
			break
		}
	}
	if last == nil || last.Code != codeExcessiveUsage {
		t.Fatalf("never throttled: %v", last)
	}
	if !c.closedByServer() {
		t.Fatal("session at the hard limit left open")
	}
	good.must(nil, "server.ping")
}

// TestEmptyLinesCutAtHardLimit: a client sending nothing but empty lines
// sends no request for the throttle to refuse; the bytes it is charged as
// they are read take it to the hard limit, where it is answered -101 and
// disconnected as any session is.
func TestEmptyLinesCutAtHardLimit(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.CostSoftLimit = 50
		c.CostHardLimit = 250
	})
	c := sessionFrom(t, fx.s, "10.60.0.1")
	c.negotiate("1.4")
	cut := c.expectNullID()
	// 2 MB of newlines cost 400; the write ends when the session closes.
	go c.conn.Write(bytes.Repeat([]byte("\n"), 2_000_000))
	if r := c.await(cut); r.Error == nil || r.Error.Code != codeExcessiveUsage {
		t.Fatalf("a stream of empty lines past the hard limit answered %+v, want -101", r)
	}
	if !c.closedByServer() {
		t.Fatal("session at the hard limit left open")
	}
}

// TestIdleTimeout checks that a session that sends nothing is disconnected.
func TestIdleTimeout(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	c := fx.client(t, "1.4")
	if !c.closedByServer() {
		t.Fatal("idle session left open")
	}
}

// requestsInFlight counts the requests of all sessions holding a slot.
func requestsInFlight(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for ss := range s.sessions {
		n += len(ss.sem)
	}
	return n
}

// gateHeld counts the places of the work gate held, the spare included.
func gateHeld(g *workGate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

// TestBatchWithNotificationAtHardLimitAnswered: at the hard cost limit a
// batch holding a request and a notification is answered -101, and the
// session is closed once that answer is written, not before.
func TestBatchWithNotificationAtHardLimitAnswered(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.CostSoftLimit = 50
		c.CostHardLimit = 250
		c.RequestSleep = time.Millisecond
	})
	c := fx.client(t, "1.4")
	// Three error answers of errorCost each take the session to the limit.
	for i := 0; i < 3; i++ {
		if _, rerr := c.call("no.such.method"); rerr != nil && rerr.Code == codeExcessiveUsage {
			t.Fatalf("hard limit reached after %d errors", i+1)
		}
	}
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"server.ping"},{"jsonrpc":"2.0","method":"server.ping"}]`)
	var rs []rpcResponse
	select {
	case rs = <-c.batches:
	case <-c.done:
		// The close follows the answer: both may be ready at once.
		select {
		case rs = <-c.batches:
		default:
			t.Fatal("session closed without answering the batch")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	if len(rs) != 1 || rs[0].Error == nil || rs[0].Error.Code != codeExcessiveUsage {
		t.Fatalf("batch answer %+v, want one -101", rs)
	}
	if !c.closedByServer() {
		t.Fatal("session kept open after its -101")
	}
}

// TestTimedOutSubscribeNotKept: a subscription whose answer was -102 (the
// request timed out) is undone once its handler finishes: it holds no slot
// of the subscription limits and sends no notifications. The same for
// blockchain.headers.subscribe.
func TestTimedOutSubscribeNotKept(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.RequestTimeout = 50 * time.Millisecond })
	c := fx.client(t, "1.4.2")
	fx.f.mu.Lock()
	fx.f.slow = 300 * time.Millisecond
	fx.f.mu.Unlock()
	if _, rerr := c.call("blockchain.scripthash.subscribe", fx.shA.String()); rerr == nil || rerr.Code != codeServerBusy {
		t.Fatalf("slow subscribe: %v, want -102", rerr)
	}
	fx.f.mu.Lock()
	fx.f.slow = 0
	// headers.subscribe reads the tip under this lock: held, it times out.
	done := make(chan *RPCError, 1)
	go func() {
		_, rerr := c.call("blockchain.headers.subscribe")
		done <- rerr
	}()
	rerr := <-done
	time.Sleep(300 * time.Millisecond)
	fx.f.mu.Unlock()
	if rerr == nil || rerr.Code != codeServerBusy {
		t.Fatalf("headers.subscribe with the tip held: %v, want -102", rerr)
	}
	deadline := time.Now().Add(10 * time.Second)
	for fx.s.SubscriptionCount() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions held after the subscribe was answered -102", fx.s.SubscriptionCount())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the headers handler finishes too
	fx.mineAndNotify(fx.a)
	c.noNote(fx.s)
	var was bool
	c.must(&was, "blockchain.scripthash.unsubscribe", fx.shA.String())
	if was {
		t.Fatal("unsubscribe after a timed-out subscribe returned true")
	}
}

// scriptHashN is a distinct script hash for test subscriptions.
func scriptHashN(tag byte, i int) indexers.ScriptHash {
	var sh indexers.ScriptHash
	sh[0] = tag
	sh[1], sh[2], sh[3] = byte(i>>16), byte(i>>8), byte(i)
	return sh
}

// sessionFrom runs a session of s for a client at ip over an in-memory
// pipe (the machine has no other address than loopback's).
func sessionFrom(t *testing.T, s *Server, ip string) *testClient {
	t.Helper()
	cli, srv := net.Pipe()
	go s.runSession(newLineConn(srv, s.cfg.MaxRecv), &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}, TCP)
	return newTestClient(t, cli)
}

// TestGetBalanceChargedPerUnspent: get_balance sums every confirmed
// unspent output of its script, and is charged 1 + their number / 50, as
// ElectrumX charges it and as listunspent is charged here; a flat 1 let a
// client have a script of 50,000 outputs scanned again and again far under
// the soft cost limit.
func TestGetBalanceChargedPerUnspent(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.AnswerCache = -1 })
	const n = 50_000
	fx.f.setExtraUnspent(fx.shC, n)
	c := fx.client(t, "1.4")
	before := ownCost(fx.s, "127.0.0.1")
	c.must(nil, "blockchain.scripthash.get_balance", fx.shC.String())
	after := ownCost(fx.s, "127.0.0.1")
	if want := 1.0 + float64(n)/50; after-before < want*0.9 {
		t.Fatalf("get_balance over %d unspent outputs charged %.2f, want about %.0f (1 + n/50)", n, after-before, want)
	}
}

// ownCost returns the cost of the session whose address starts with ip.
func ownCost(s *Server, ip string) float64 {
	for _, si := range s.Sessions() {
		if strings.HasPrefix(si.Address, ip) {
			return si.Cost
		}
	}
	return -1
}

// TestPerIPLimitsGroupIPv6By64: an IPv6 client is handed a /64, so the
// per-IP session and subscription limits count a /64 as one address.
func TestPerIPLimitsGroupIPv6By64(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, func(c *Config) { c.MaxSessionsPerIP, c.MaxSubsPerIP = 2, 3 })
	a, b := sessionFrom(t, s, "2001:db8:1:2::1"), sessionFrom(t, s, "2001:db8:1:2::2")
	a.negotiate("1.4")
	b.negotiate("1.4")
	third := sessionFrom(t, s, "2001:db8:1:2::3")
	if !third.closedByServer() {
		t.Fatal("a third session from one /64 was admitted with MaxSessionsPerIP 2")
	}
	other := sessionFrom(t, s, "2001:db8:1:3::1")
	other.negotiate("1.4")
	got := 0
	for i, c := range []*testClient{a, b, a, b} {
		if _, rerr := c.call("blockchain.scripthash.subscribe", scriptHashN(1, i).String()); rerr == nil {
			got++
		}
	}
	if got != 3 {
		t.Fatalf("%d subscriptions held from one /64 with MaxSubsPerIP 3", got)
	}
}

// TestNotificationsCostAsRequests: a call sent without an id (a JSON-RPC
// notification) is charged as the request would be: errorCost when it
// fails, its answer's bytes when it does not. A refused member of a
// broadcast_package costs what a refused broadcast does.
func TestNotificationsCostAsRequests(t *testing.T) {
	fx := newFixtureChain(t)
	// A soft limit above what the test spends: costs are counted (and
	// decay at the hard limit's ten-thousandth a second), nobody is slowed.
	s, addr := startServer(t, fx.f, func(c *Config) { c.CostSoftLimit, c.CostHardLimit = 5000, 10000 })
	// charged waits until the session from ip has been charged at least
	// want more than before (notifications run beside later requests).
	charged := func(what, ip string, before, want float64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a hang guard
		for ownCost(s, ip)-before < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s cost %.1f, want at least %.1f", what, ownCost(s, ip)-before, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	bad := txHex(spend([]wire.OutPoint{{Hash: chainhash.Hash{0xde, 0xad}, Index: 0}}, wire.NewTxOut(1000, fx.a)))
	c := dialFrom(t, addr, net.ParseIP("127.0.1.1"))
	c.negotiate("1.6")
	before := ownCost(s, "127.0.1.1")
	for i := 0; i < 5; i++ {
		c.send(`{"jsonrpc":"2.0","method":"blockchain.transaction.broadcast","params":["` + bad + `"]}`)
	}
	charged("5 failing notifications", "127.0.1.1", before, 5*errorCost)

	p := dialFrom(t, addr, net.ParseIP("127.0.2.1"))
	p.negotiate("1.6")
	before = ownCost(s, "127.0.2.1")
	// Four parents spending outputs nobody has, and their child.
	pkg := make([]string, 5)
	var parents []wire.OutPoint
	for i := range pkg[:4] {
		tx := spend([]wire.OutPoint{{Hash: chainhash.Hash{0xbe, byte(i)}, Index: 0}}, wire.NewTxOut(1000, fx.a))
		pkg[i] = txHex(tx)
		parents = append(parents, wire.OutPoint{Hash: tx.TxHash(), Index: 0})
	}
	pkg[4] = txHex(spend(parents, wire.NewTxOut(1000, fx.a)))
	p.call("blockchain.transaction.broadcast_package", pkg)
	if got := ownCost(s, "127.0.2.1") - before; got < 5*errorCost {
		t.Fatalf("a package of 5 refused members cost %.1f, want at least %d", got, 5*errorCost)
	}

	h := dialFrom(t, addr, net.ParseIP("127.0.3.1"))
	h.negotiate("1.6")
	fx.f.setExtraHistory(fx.shA, 20_000)
	before = ownCost(s, "127.0.3.1")
	h.call("blockchain.scripthash.get_history", fx.shA.String())
	asked := ownCost(s, "127.0.3.1") - before
	before = ownCost(s, "127.0.3.1")
	h.send(`{"jsonrpc":"2.0","method":"blockchain.scripthash.get_history","params":["` + fx.shA.String() + `"]}`)
	charged("a long history asked without an id", "127.0.3.1", before, asked*0.9)
}

// TestSubscribeUnsubscribeRaceLeavesNoRegistration: subscribe and
// unsubscribe of one script hash pipelined by many sessions at once leave
// no registration behind once the sessions close (an unsubscribe running
// between a subscribe's two steps once left one, with the closed session
// it points to).
func TestSubscribeUnsubscribeRaceLeavesNoRegistration(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.CostHardLimit = -1 })
	const sessions, pairs = 8, 1500
	deadline := time.Now().Add(90 * time.Second) // a hang guard
	var wg sync.WaitGroup
	for k := 0; k < sessions; k++ {
		c := fx.client(t, "1.4.2")
		wg.Add(1)
		go func() {
			defer wg.Done()
			chs := make([]chan rpcResponse, 0, 2*pairs)
			for i := 0; i < pairs; i++ {
				sh := scriptHashN(byte(k+1), i).String()
				chs = append(chs, c.start("blockchain.scripthash.subscribe", sh), c.start("blockchain.scripthash.unsubscribe", sh))
			}
			for _, ch := range chs {
				select {
				case <-ch:
				case <-time.After(time.Until(deadline)):
					return
				}
			}
			c.conn.Close()
		}()
	}
	wg.Wait()
	for time.Now().Before(deadline) && fx.s.SessionCount() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if n := fx.s.SubscriptionCount(); n > 0 {
		t.Fatalf("%d registrations outlive their closed sessions", n)
	}
}

// TestPendingTLSHandshakesBounded: connections to a TLS port (TLS or WSS)
// that never handshake hold no more places than sessions from their
// address could: past MaxSessionsPerIP the server closes them at once.
func TestPendingTLSHandshakesBounded(t *testing.T) {
	for _, tr := range []Transport{TLS, WSS} {
		t.Run(tr.String(), func(t *testing.T) {
			fx := newFixtureChain(t)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s, _ := startServer(t, fx.f, func(c *Config) {
				c.Listeners = append(c.Listeners, Listener{Transport: tr, Listener: l})
				c.CertDir = t.TempDir()
				c.MaxSessionsPerIP = 3
			})
			var conns []net.Conn
			for i := 0; i < 8; i++ {
				c, err := net.Dial("tcp", l.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				conns = append(conns, c)
			}
			// Each connection is admitted or refused on a goroutine of
			// its own: wait until all 8 have been.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				s.mu.Lock()
				handshakes := s.handshakes
				s.mu.Unlock()
				if handshakes+int(s.counters.refused[RefusedPerIP].Load()) >= 8 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d handshakes pending and %d refused of 8 connections after 30 s",
						handshakes, s.counters.refused[RefusedPerIP].Load())
				}
			}
			pending := 0
			for _, c := range conns {
				// Closed by the server: EOF at once; pending: the deadline.
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				if _, err := c.Read(make([]byte, 1)); err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						pending++
					}
				}
			}
			if pending > 3 {
				t.Fatalf("%d silent connections from one address pending their %s handshake, MaxSessionsPerIP 3", pending, tr)
			}
		})
	}
}

// A batch whose answer fits in MaxSend is answered whole, however much
// longer its members' error answers would be: 1000 pings with 300-byte ids
// answer in about 340 KB, within MaxSend (350,000), where their errors
// would take about 395 KB.
func TestBatchOfShortAnswersThatFitsIsAnswered(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.MaxSend = minMaxSend })
	lc := dialLines(t, fx.addr)
	lc.negotiate()
	var b strings.Builder
	b.WriteString("[")
	want := 1 // brackets less one comma
	for i := 0; i < 1000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		id := fmt.Sprintf(`"%0300d"`, i)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%s,"method":"server.ping"}`, id)
		want += len(`{"jsonrpc":"2.0","result":null,"id":`+id+`}`) + 1
	}
	b.WriteString("]")
	if want > minMaxSend {
		t.Fatalf("test setup: the batch's answer would be %d bytes", want)
	}
	lc.send(b.String())
	ans := lc.line()
	if !strings.HasPrefix(string(ans), "[") {
		t.Fatalf("a batch whose %d-byte answer fits in MaxSend %d was answered %.200s", want, minMaxSend, ans)
	}
	var rs []rpcResponse
	decodeInto(t, ans, &rs)
	if len(rs) != 1000 {
		t.Fatalf("%d answers", len(rs))
	}
}

// TestLongLinesWithinLineBudget: requests being read hold their buffers
// within one budget for all sessions (lineBudget). A long request that
// finds it spent is skipped and answered -102, its session goes on, and
// once the lines holding the budget end, a long request is read again and
// the budget is whole.
func TestLongLinesWithinLineBudget(t *testing.T) {
	fx := newFixtureChain(t)
	s, _ := startServer(t, fx.f, func(c *Config) {
		c.MaxRecv = 200_000
		c.MaxSendBacklog = 100_000 // the budget is 4 × MaxRecv, 800,000
	})
	// A ping of 190,000 bytes: its buffer of 256 KiB takes 192 KiB of the
	// budget (what it holds past 64 KiB); four take 786,432 bytes.
	head := []byte(`{"jsonrpc":"2.0","id":1,"method":"server.ping"` + strings.Repeat(" ", 190_000))
	tail := []byte("}\n")
	answer := func(r *bufio.Reader) rpcResponse {
		t.Helper()
		line, err := r.ReadBytes('\n')
		var resp rpcResponse
		if err != nil || json.Unmarshal(line, &resp) != nil {
			t.Fatalf("answer %.200q: %v", line, err)
		}
		return resp
	}
	var holders []net.Conn
	for i := 0; i < 4; i++ {
		c := pipeSession(t, s, fmt.Sprintf("10.61.%d.1", i))
		pipeNegotiate(t, c)
		if _, err := c.Write(head); err != nil { // returns once read
			t.Fatal(err)
		}
		holders = append(holders, c)
	}
	c := pipeSession(t, s, "10.61.9.1")
	pipeNegotiate(t, c)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	go c.Write(append(head, tail...))
	if a := answer(r); a.Error == nil || a.Error.Code != codeServerBusy {
		t.Fatalf("a long request past the budget answered %+v, want -102", a)
	}
	for _, h := range holders {
		h.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := h.Write(tail); err != nil {
			t.Fatal(err)
		}
		if a := answer(bufio.NewReader(h)); a.Error != nil {
			t.Fatalf("a long request within the budget answered %+v", a)
		}
	}
	go c.Write(append(head, tail...))
	if a := answer(r); a.Error != nil {
		t.Fatalf("a long request once the budget is free answered %+v", a)
	}
	if !s.lines.TryAcquire(s.cfg.lineBudget()) {
		t.Fatal("the line budget is not whole once every long request was read")
	}
}

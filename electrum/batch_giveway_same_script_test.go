package electrum

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestBatchGiveWayKeepsLaterSubscribeOfSameScript: a batch subscribes to
// script A twice (a wallet re-sending its subscriptions), then asks for
// enough to go one byte past MaxSend. The first subscribe's answer (longer
// id) gives way to "response too large"; the second, for the same script, is
// answered its status. The client's last word on A is "subscribed": the
// first subscribe's undo must not drop the subscription the second one
// answered for (the state it shares), and notifications for A come.
func TestBatchGiveWayKeepsLaterSubscribeOfSameScript(t *testing.T) {
	batchGiveWaySameSubscription(t, "blockchain.scripthash.subscribe", true)
}

// TestBatchGiveWayKeepsLaterHeadersSubscribe is the same for
// blockchain.headers.subscribe: the session keeps its header
// notifications, as its last headers.subscribe was answered.
func TestBatchGiveWayKeepsLaterHeadersSubscribe(t *testing.T) {
	batchGiveWaySameSubscription(t, "blockchain.headers.subscribe", false)
}

func batchGiveWaySameSubscription(t *testing.T, method string, script bool) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Concurrency = 1 // the ping below runs only once the batch's afters ran
	})
	params := `[]`
	if script {
		params = `["` + fx.shA.String() + `"]`
	}
	id1 := strings.Repeat("a", 40)
	sub1 := `{"jsonrpc":"2.0","id":"` + id1 + `","method":"` + method + `","params":` + params + `}`
	sub2 := `{"jsonrpc":"2.0","id":"b","method":"` + method + `","params":` + params + `}`

	// The lengths of the two answers, from another session.
	probe := dialNegotiated(t, fx.addr)
	probe.send(sub1)
	len1 := len(probe.line())
	probe.send(sub2)
	len2 := len(probe.line())
	probe.conn.Close()
	err1 := len(encodeResponse(true, json.RawMessage(`"`+id1+`"`), nil,
		rpcErrorf(codeInvalidRequest, "response too large (over %d bytes)", minMaxSend)))
	if err1 >= len1 {
		t.Fatalf("test setup: error %d bytes, answer %d", err1, len1)
	}
	// Pings with long ids (their errors longer than their answers, so
	// they never give way) take the array one byte past MaxSend.
	pingLen := func(idLen int) int {
		return len(encodeResponse(true, json.RawMessage(`"`+strings.Repeat("9", idLen)+`"`), json.RawMessage("null"), nil)) + 1
	}
	target := minMaxSend + 1
	rest := target - (1 + len1 + 1 + len2 + 1)
	const idLen = 400
	n := rest / pingLen(idLen)
	extra := rest - n*pingLen(idLen)
	var b strings.Builder
	b.WriteString("[" + sub1 + "," + sub2)
	total := 1 + len1 + 1 + len2 + 1
	for i := 0; i < n; i++ {
		l := idLen
		if i == n-1 {
			l += extra
		}
		fmt.Fprintf(&b, `,{"jsonrpc":"2.0","id":"%0*d","method":"server.ping"}`, l, i)
		total += pingLen(l)
	}
	b.WriteString("]")
	if total != target || n+2 > DefaultMaxBatch {
		t.Fatalf("test setup: answer %d bytes (want %d), %d members", total, target, n+2)
	}

	lc := dialNegotiated(t, fx.addr)
	lc.send(b.String())
	ans := lc.line()
	if len(ans) > minMaxSend {
		t.Fatalf("batch answer %d bytes over MaxSend", len(ans))
	}
	var rs []rpcResponse
	decodeInto(t, ans, &rs)
	var got1, got2 *rpcResponse
	for i := range rs {
		switch string(rs[i].ID) {
		case `"` + id1 + `"`:
			got1 = &rs[i]
		case `"b"`:
			got2 = &rs[i]
		}
	}
	if got1 == nil || got1.Error == nil || got2 == nil || got2.Error != nil {
		t.Fatalf("test setup: want the first subscribe refused and the second answered; got %+v / %+v", got1, got2)
	}
	lc.ping("p")
	regs := fx.s.SubscriptionCount()

	// A block paying A: A's status and the tip change; the subscription
	// the client was last answered for must be notified.
	fx.mineAndNotify(fx.a)
	fx.flush(t)
	saw := false
	lc.toPing(func(raw []byte) {
		l := string(raw)
		if strings.Contains(l, `"method":"`+method+`"`) && (!script || strings.Contains(l, fx.shA.String())) {
			saw = true
		}
	})
	if !saw {
		t.Fatalf("%s answered (member \"b\") after the same subscription's first member gave way is never notified; %d scripthash registrations after the batch",
			method, regs)
	}
}

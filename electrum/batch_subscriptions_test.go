package electrum

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// A batch with a notification member (no id) before its subscriptions:
// when headers.subscribe's answer gives way to its error to fit MaxSend, the
// scripthash subscription answered in the same batch still delivers its
// notifications (what runs after each answer stays that answer's, the
// notification's apart).
func TestBatchGiveWayKeepsOtherSubscriptionLive(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Concurrency = 1 // the ping below runs only once the batch's afters ran
	})
	subS := `{"jsonrpc":"2.0","id":"s","method":"blockchain.scripthash.subscribe","params":["` + fx.shC.String() + `"]}`
	subH := `{"jsonrpc":"2.0","id":"h","method":"blockchain.headers.subscribe","params":[]}`

	// The lengths of the two answers, from another session.
	probe := dialLines(t, fx.addr)
	probe.negotiate()
	probe.send(subS)
	lenS := len(probe.line())
	probe.send(subH)
	lenH := len(probe.line())
	probe.conn.Close()
	errH := len(encodeResponse(true, json.RawMessage(`"h"`), nil,
		rpcErrorf(codeInvalidRequest, "response too large (over %d bytes)", minMaxSend)))
	if errH >= lenH {
		t.Fatalf("test setup: headers.subscribe answer %d bytes, its error %d", lenH, errH)
	}

	// Pings with long ids take the array one byte past MaxSend; their
	// errors are longer than their answers, so only headers.subscribe can
	// give way, and doing so makes the array fit.
	pingLen := func(idLen int) int {
		return len(encodeResponse(true, json.RawMessage(`"`+strings.Repeat("9", idLen)+`"`), json.RawMessage("null"), nil)) + 1
	}
	target := minMaxSend + 1
	rest := target - (1 + lenS + 1 + lenH + 1)
	const idLen = 400
	n := rest / pingLen(idLen)
	extra := rest - n*pingLen(idLen)
	var b strings.Builder
	b.WriteString(`[{"jsonrpc":"2.0","method":"server.ping"},` + subS + "," + subH)
	total := 1 + lenS + 1 + lenH + 1
	for i := 0; i < n; i++ {
		l := idLen
		if i == n-1 {
			l += extra
		}
		id := fmt.Sprintf("%0*d", l, i)
		fmt.Fprintf(&b, `,{"jsonrpc":"2.0","id":"%s","method":"server.ping"}`, id)
		total += pingLen(l)
	}
	b.WriteString("]")
	if total != target || n+3 > DefaultMaxBatch {
		t.Fatalf("test setup: answer %d bytes (want %d), %d members", total, target, n+3)
	}

	lc := dialLines(t, fx.addr)
	lc.negotiate()
	lc.send(b.String())
	ans := lc.line()
	if len(ans) > minMaxSend {
		t.Fatalf("batch answer %d bytes over MaxSend", len(ans))
	}
	var rs []rpcResponse
	decodeInto(t, ans, &rs)
	var gotS, gotH *rpcResponse
	for i := range rs {
		switch string(rs[i].ID) {
		case `"s"`:
			gotS = &rs[i]
		case `"h"`:
			gotH = &rs[i]
		}
	}
	if gotS == nil || gotS.Error != nil || gotH == nil || gotH.Error == nil {
		t.Fatalf("test setup: want scripthash.subscribe answered and headers.subscribe refused; got %+v / %+v", gotS, gotH)
	}

	// C's status changes: the subscription the client was answered must
	// be notified.
	fx.mineAndNotify(p2wpkh(0xdd), fx.tx2)
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	sawStatus := false
	for {
		l := string(lc.line())
		if strings.Contains(l, `"id":"end"`) {
			break
		}
		if strings.Contains(l, `"method":"blockchain.scripthash.subscribe"`) && strings.Contains(l, fx.shC.String()) {
			sawStatus = true
		}
	}
	if !sawStatus {
		t.Fatalf("scripthash subscription answered in a batch beside a notification and a refused headers.subscribe is never notified")
	}
}

// A batch refused whole (its errors alone do not fit in MaxSend) undoes
// every subscription its members made, with a notification member among
// them: the session is not left subscribed to headers with its
// notifications held back.
func TestBatchRefusedWholeUndoesHeadersSubscribe(t *testing.T) {
	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Concurrency = 1 // the ping below runs only once the batch's afters ran
	})
	empty := p2wpkh(0xee)
	var b strings.Builder
	b.WriteString(`[{"jsonrpc":"2.0","method":"server.ping"}`)
	// 800 pings with 450-byte ids answer in about 390 KB, past MaxSend;
	// their errors are longer still.
	for i := 0; i < 800; i++ {
		fmt.Fprintf(&b, `,{"jsonrpc":"2.0","id":"%0450d","method":"server.ping"}`, i)
	}
	b.WriteString(`,{"jsonrpc":"2.0","id":"h","method":"blockchain.headers.subscribe","params":[]}`)
	b.WriteString(`,{"jsonrpc":"2.0","id":"s","method":"blockchain.scripthash.subscribe","params":["` + indexers.ScriptHashFromScript(empty).String() + `"]}`)
	b.WriteString("]")

	lc := dialLines(t, fx.addr)
	lc.negotiate()
	lc.send(b.String())
	ans := string(lc.line())
	if !strings.HasPrefix(ans, "{") || !strings.Contains(ans, "response too large") {
		t.Fatalf("test setup: batch not refused whole: %.200s", ans)
	}
	lc.send(`{"jsonrpc":"2.0","id":"p","method":"server.ping"}`)
	if l := string(lc.line()); !strings.Contains(l, `"id":"p"`) {
		t.Fatalf("ping: %.200s", l)
	}
	for _, si := range fx.s.Sessions() {
		if si.HeadersSubscribed {
			t.Errorf("a batch refused whole left its session subscribed to headers")
		}
	}
	if n := fx.s.SubscriptionCount(); n != 0 {
		t.Errorf("a batch refused whole left %d scripthash subscriptions", n)
	}

	// The client, told it is not subscribed, subscribes again; a new block
	// must be notified.
	lc.send(`{"jsonrpc":"2.0","id":"h2","method":"blockchain.headers.subscribe","params":[]}`)
	if l := string(lc.line()); !strings.Contains(l, `"result"`) {
		t.Fatalf("headers.subscribe: %.200s", l)
	}
	fx.mineAndNotify(p2wpkh(0xdd))
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	saw := false
	for {
		l := string(lc.line())
		if strings.Contains(l, `"id":"end"`) {
			break
		}
		if strings.Contains(l, `"method":"blockchain.headers.subscribe"`) {
			saw = true
		}
	}
	if !saw {
		t.Fatalf("after a batch refused whole, headers.subscribe answered but the next block was never notified (headers left pending)")
	}
}

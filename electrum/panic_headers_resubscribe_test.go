package electrum

import (
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TipPanic is the fake backend whose next ChainTip read panics once
// armed (run recovers and answers an internal error).
type TipPanic struct {
	*fakeBackend
	armed chan struct{}
}

func (b *TipPanic) ChainTip() (indexers.Tip, error) {
	select {
	case <-b.armed:
		panic(": tip read failed")
	default:
	}
	return b.fakeBackend.ChainTip()
}

// TestPanickedHeadersResubscribeKeepsTips: a headers subscriber repeats
// blockchain.headers.subscribe and the handler panics after taking its
// claim. The claim is settled all the same, and the next tip is notified
// (PROTOCOL.md §6), the subscription having been answered before.
func TestPanickedHeadersResubscribeKeepsTips(t *testing.T) {
	fx := newFixtureChain(t)
	sb := &TipPanic{fakeBackend: fx.f, armed: make(chan struct{}, 1)}
	fx.s, fx.addr = startServer(t, sb, nil)

	lc := dialLines(t, fx.addr)
	lc.negotiate()
	lc.send(`{"jsonrpc":"2.0","id":"first","method":"blockchain.headers.subscribe","params":[]}`)
	var first rpcResponse
	decodeInto(t, lc.line(), &first)
	if first.Error != nil {
		t.Fatalf("test setup: first subscribe %v", first.Error)
	}
	sb.armed <- struct{}{}
	lc.send(`{"jsonrpc":"2.0","id":"again","method":"blockchain.headers.subscribe","params":[]}`)
	var again rpcResponse
	decodeInto(t, lc.line(), &again)
	if again.Error == nil {
		t.Fatalf("test setup: the re-subscribe did not fail: %s", again.Result)
	}
	h1 := fx.mineAndNotify(p2wpkh(0xdd))
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	var told []int32
	for {
		l := lc.line()
		if strings.Contains(string(l), `"id":"end"`) {
			break
		}
		var n rpcResponse
		decodeInto(t, l, &n)
		if n.Method == "blockchain.headers.subscribe" {
			var p []headerResult
			decodeInto(t, n.Params, &p)
			if len(p) == 1 {
				told = append(told, p[0].Height)
			}
		}
	}
	if len(told) == 0 || told[len(told)-1] != h1 {
		t.Fatalf("new tip %d after a failed headers re-subscribe; the client was told heights %v", h1, told)
	}
}

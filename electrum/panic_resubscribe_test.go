package electrum

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// StatusPanic is the fake backend whose next Status read (a subscribe's)
// panics once armed: a bug in a backend read, which run() recovers from.
type StatusPanic struct {
	*fakeBackend
	armed chan struct{}
}

func (b *StatusPanic) Status(sh indexers.ScriptHash, limit int) (StatusHasher, indexers.Tip, error) {
	select {
	case <-b.armed:
		panic(": status read failed")
	default:
	}
	return b.fakeBackend.Status(sh, limit)
}

// TestPanickedResubscribeKeepsSubscription: a client subscribed to A
// re-subscribes, and the handler panics after it took its claim (the
// request is answered an internal error). The claim is settled all the
// same: the client keeps the subscription it was answered before (a
// failed re-subscribe does not end it, as in ElectrumX, whose
// hashX_subscribe replaces hashX_subs only once the status computes), and
// A's next change is told (PROTOCOL.md, scripthash.subscribe:
// "Notification ... whenever status changes").
func TestPanickedResubscribeKeepsSubscription(t *testing.T) {
	fx := newFixtureChain(t)
	sb := &StatusPanic{fakeBackend: fx.f, armed: make(chan struct{}, 1)}
	fx.s, fx.addr = startServer(t, sb, nil)

	lc := dialLines(t, fx.addr)
	lc.negotiate()
	lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"first","method":"blockchain.scripthash.subscribe","params":["%s"]}`, fx.shA))
	var first rpcResponse
	decodeInto(t, lc.line(), &first)
	var s0 *string
	decodeInto(t, first.Result, &s0)
	if first.Error != nil || s0 == nil {
		t.Fatalf("test setup: first subscribe %s %v", first.Result, first.Error)
	}

	sb.armed <- struct{}{}
	lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"again","method":"blockchain.scripthash.subscribe","params":["%s"]}`, fx.shA))
	var again rpcResponse
	decodeInto(t, lc.line(), &again)
	if again.Error == nil {
		t.Fatalf("test setup: the re-subscribe did not fail: %s", again.Result)
	}

	pay := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(49_9999_0000, fx.a))
	if err := fx.f.Broadcast(pay); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool([]indexers.ScriptHash{fx.shA})
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	var told []string
	for {
		l := lc.line()
		if strings.Contains(string(l), `"id":"end"`) {
			break
		}
		var n rpcResponse
		decodeInto(t, l, &n)
		if n.Method == "blockchain.scripthash.subscribe" {
			var p []*string
			decodeInto(t, n.Params, &p)
			if len(p) == 2 && p[1] != nil {
				told = append(told, *p[1])
			}
		}
	}
	if len(told) == 0 || told[len(told)-1] == *s0 {
		t.Fatalf("A's status changed after a failed re-subscribe; the client was told %q, nothing after %q", told, *s0)
	}
}

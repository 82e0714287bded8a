package electrum

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// StatusStall is the fake backend whose next Status read (the one a
// subscribe makes; the notifier reads with Statuses) waits once armed.
type StatusStall struct {
	*fakeBackend
	armed   chan struct{}
	stalled chan struct{}
	resume  chan struct{}
}

func (b *StatusStall) Status(sh indexers.ScriptHash, limit int) (StatusHasher, indexers.Tip, error) {
	select {
	case <-b.armed:
		b.stalled <- struct{}{}
		<-b.resume
	default:
	}
	return b.fakeBackend.Status(sh, limit)
}

// TestIdlessResubscribeKeepsStatusChange: a client subscribed to A
// (told S0) sends a re-subscribe to A as a JSON-RPC notification (no id:
// it gets no answer). While that subscribe runs, A's status changes to S1.
// The client was never told S1, so the server owes it a notification of
// S1 once the subscribe's claim is settled (PROTOCOL.md §"scripthash.subscribe":
// "Notification ... whenever status changes").
func TestIdlessResubscribeKeepsStatusChange(t *testing.T) {
	fx := newFixtureChain(t)
	sb := &StatusStall{fakeBackend: fx.f, armed: make(chan struct{}, 1),
		stalled: make(chan struct{}, 1), resume: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-sb.resume:
		default:
			close(sb.resume)
		}
	})
	fx.s, fx.addr = startServer(t, sb, func(c *Config) { c.Concurrency = 1 })

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
	lc.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"blockchain.scripthash.subscribe","params":["%s"]}`, fx.shA))
	select {
	case <-sb.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("id-less subscribe never read the status")
	}
	pay := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(49_9999_0000, fx.a))
	if err := fx.f.Broadcast(pay); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool([]indexers.ScriptHash{fx.shA})
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	close(sb.resume)

	// Concurrency 1: the ping runs once the id-less subscribe's worker,
	// its after included, is done; what that queued comes first.
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
			if len(p) == 2 && p[1] != nil && strings.EqualFold(*p[0], fx.shA.String()) {
				told = append(told, *p[1])
			}
		}
	}

	probe := dialLines(t, fx.addr)
	probe.negotiate()
	probe.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"p","method":"blockchain.scripthash.subscribe","params":["%s"]}`, fx.shA))
	var pr rpcResponse
	decodeInto(t, probe.line(), &pr)
	var now *string
	decodeInto(t, pr.Result, &now)
	if now == nil || *now == *s0 {
		t.Fatalf("test setup: the broadcast did not change A's status")
	}
	if len(told) == 0 || told[len(told)-1] != *now {
		t.Fatalf("client was told %q of A (after its answer %q), never the current status %q", told, *s0, *now)
	}
}

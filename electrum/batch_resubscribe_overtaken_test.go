package electrum

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// balanceStall is the fake backend with one script's Balance read held
// until resume is closed: it keeps a batch's later member running, its
// earlier answers held, while the test moves the chain on.
type balanceStall struct {
	*fakeBackend
	sh      indexers.ScriptHash
	stalled chan struct{}
	resume  chan struct{}
}

func (b *balanceStall) Balance(sh indexers.ScriptHash) (int, int64, indexers.Tip, error) {
	if sh == b.sh {
		b.stalled <- struct{}{}
		<-b.resume
	}
	return b.fakeBackend.Balance(sh)
}

// TestBatchResubscribeAnswerNotOvertakenByNewerStatus: a session holds a
// subscription to A and re-subscribes in a batch (a wallet re-sending its
// subscriptions); while a later member of the batch runs, A's
// status changes, and the notifier must hold that change until the batch's
// array carrying the re-subscribe's older answer is queued, or the client
// would end with the older status. docs/PROTOCOL.md §6: "a status or tip is never
// replaced by one read earlier".
func TestBatchResubscribeAnswerNotOvertakenByNewerStatus(t *testing.T) {
	fx := newFixtureChain(t)
	z := indexers.ScriptHashFromScript(p2wpkh(0x5a))
	sb := &balanceStall{fakeBackend: fx.f, sh: z, stalled: make(chan struct{}, 1), resume: make(chan struct{})}
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

	lc.send(fmt.Sprintf(`[{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.subscribe","params":["%s"]},`+
		`{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.get_balance","params":["%s"]}]`, fx.shA, z))
	select {
	case <-sb.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("batch's second member never ran")
	}
	// A's status changes while the batch holds the re-subscribe's answer.
	pay := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(49_9999_0000, fx.a))
	if err := fx.f.Broadcast(pay); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool([]indexers.ScriptHash{fx.shA})
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	close(sb.resume)

	var told []string
	note := func(l []byte) {
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
	for done := false; !done; {
		l := lc.line()
		if len(l) > 0 && l[0] == '[' {
			var rs []rpcResponse
			decodeInto(t, l, &rs)
			for _, r := range rs {
				if string(r.ID) == "1" {
					var s *string
					decodeInto(t, r.Result, &s)
					if r.Error != nil || s == nil {
						t.Fatalf("test setup: re-subscribe answered %v", r.Error)
					}
					told = append(told, *s)
				}
			}
			done = true
			continue
		}
		note(l)
	}
	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	for {
		l := lc.line()
		if strings.Contains(string(l), `"id":"end"`) {
			break
		}
		note(l)
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
	if last := told[len(told)-1]; last != *now {
		t.Fatalf("client's last word on A is %q (read before the change), not the current %q; in order it was told %q", last, *now, told)
	}
}

package electrum

import (
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TipStall is the fake backend whose next ChainTip read (the one
// headers.subscribe makes) waits once armed.
type TipStall struct {
	*fakeBackend
	armed   chan struct{}
	stalled chan struct{}
	resume  chan struct{}
}

func (b *TipStall) ChainTip() (indexers.Tip, error) {
	select {
	case <-b.armed:
		b.stalled <- struct{}{}
		<-b.resume
	default:
	}
	return b.fakeBackend.ChainTip()
}

// TestIdlessHeadersResubscribeKeepsNewTip: a client subscribed to
// headers (answered tip H0) sends blockchain.headers.subscribe again as a
// JSON-RPC notification (no id, so no answer). While it runs a block H1 is
// connected. Nothing was sent for the id-less subscribe, so H1, which its
// claim held back, is owed to the client as a notification (PROTOCOL.md §6:
// a notification of every new tip).
func TestIdlessHeadersResubscribeKeepsNewTip(t *testing.T) {
	fx := newFixtureChain(t)
	sb := &TipStall{fakeBackend: fx.f, armed: make(chan struct{}, 1),
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
	lc.send(`{"jsonrpc":"2.0","id":"first","method":"blockchain.headers.subscribe","params":[]}`)
	var first rpcResponse
	decodeInto(t, lc.line(), &first)
	var h0 headerResult
	decodeInto(t, first.Result, &h0)
	if first.Error != nil || h0.Hex == "" {
		t.Fatalf("test setup: first subscribe %s %v", first.Result, first.Error)
	}

	sb.armed <- struct{}{}
	lc.send(`{"jsonrpc":"2.0","method":"blockchain.headers.subscribe","params":[]}`)
	select {
	case <-sb.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("id-less headers.subscribe never read the tip")
	}
	h1 := fx.mineAndNotify(p2wpkh(0xdd))
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	close(sb.resume)

	lc.send(`{"jsonrpc":"2.0","id":"end","method":"server.ping"}`)
	var told []int64
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
				told = append(told, int64(p[0].Height))
			}
		}
	}
	if int64(h1) <= int64(h0.Height) {
		t.Fatalf("test setup: mined height %d not above %d", h1, h0.Height)
	}
	if len(told) == 0 || told[len(told)-1] != int64(h1) {
		t.Fatalf("after its answer at height %d the client was told heights %v, never the new tip %d", h0.Height, told, h1)
	}
}

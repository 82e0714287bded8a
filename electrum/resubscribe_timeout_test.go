package electrum

import (
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// stallReadsBackend is the node's IndexBackend whose reads can be made to wait
// once: Statuses (the notifier's read) before it reads the index, Status
// (a subscribe's read) after it did. It widens windows a busy server has;
// it changes no result.
type stallReadsBackend struct {
	*IndexBackend
	armedPass, stalledPass, resumePass chan struct{}
	armedSub, stalledSub, resumeSub    chan struct{}
}

func (b *stallReadsBackend) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	select {
	case <-b.armedPass:
		b.stalledPass <- struct{}{}
		<-b.resumePass
	default:
	}
	return b.IndexBackend.Statuses(shs, limit)
}

func (b *stallReadsBackend) Status(sh indexers.ScriptHash, limit int) (StatusHasher, indexers.Tip, error) {
	h, tip, err := b.IndexBackend.Status(sh, limit)
	select {
	case <-b.armedSub:
		b.stalledSub <- struct{}{}
		<-b.resumeSub
	default:
	}
	return h, tip, err
}

// A session subscribed to S (status null) subscribes to S again while the
// server is busy, and the second subscribe is answered -102 (timed out),
// which leaves nothing behind: the status its handler read (T in the
// mempool) and recorded, which the notifier's pass then found and so did
// not send, is told to the client, which would otherwise hold null for good.
func TestResubscribeTimedOutStillTold(t *testing.T) {
	var sb *stallReadsBackend
	n := newRealNodeServing(t, 0, func(c *Config) { c.RequestTimeout = 3 * time.Second }, func(b *IndexBackend) Backend {
		sb = &stallReadsBackend{IndexBackend: b,
			armedPass: make(chan struct{}, 1), stalledPass: make(chan struct{}, 1), resumePass: make(chan struct{}),
			armedSub: make(chan struct{}, 1), stalledSub: make(chan struct{}, 1), resumeSub: make(chan struct{})}
		return sb
	})
	t.Cleanup(func() {
		for _, ch := range []chan struct{}{sb.resumePass, sb.resumeSub} {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	})
	c := dial(t, n.addr)
	c.negotiate("1.4")
	payTo := p2wpkh(0x6e)
	sh := indexers.ScriptHashFromScript(payTo)
	var first *string
	c.must(&first, "blockchain.scripthash.subscribe", sh.String())
	if first != nil {
		t.Fatalf("first status %s", showStatus(first))
	}

	// A payment to S: its pass is slow to start (a busy notifier).
	sb.armedPass <- struct{}{}
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, payTo))
	other := dial(t, n.addr)
	other.negotiate("1.4")
	other.must(nil, "blockchain.transaction.broadcast", txHex(tx))
	<-sb.stalledPass

	// The client subscribes again; the server is too slow to answer in
	// time.
	sb.armedSub <- struct{}{}
	ch := c.start("blockchain.scripthash.subscribe", sh.String())
	<-sb.stalledSub
	r := c.await(ch)
	if r.Error == nil || r.Error.Code != codeServerBusy {
		t.Fatalf("second subscribe answered %s %v, want -102", r.Result, r.Error)
	}
	close(sb.resumeSub)
	// The handler finishes on its own.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, ok := sessionStatus(n.srv, sh); ok && st != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the timed-out subscribe never finished")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(sb.resumePass)

	var fresh *string
	f := dial(t, n.addr)
	f.negotiate("1.4")
	f.must(&fresh, "blockchain.scripthash.subscribe", sh.String())
	if fresh == nil {
		t.Fatal("fresh subscribe: null")
	}
	// The change is told by the timed-out handler's end, which runs on
	// its own after its -102, or by the pass: wait for it.
	last, notes := first, 0
	told := time.After(30 * time.Second)
	for !equalStatus(last, fresh) {
		select {
		case m := <-c.notes:
			if m.Method == "blockchain.scripthash.subscribe" {
				_, last = statusOf(t, m)
				notes++
			}
		case <-told:
			t.Fatalf("client's last status %s (answer null, re-subscribe -102, %d notifications in 30 s), server's %s: it is never told T",
				showStatus(last), notes, showStatus(fresh))
		}
	}
}

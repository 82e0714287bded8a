package electrum

// A realNode whose server reads through a backend that can stop the
// notifier inside a pass: right after it read a chunk of statuses from the
// index, before it adds their mempool parts and delivers them. This only
// widens a window the notifier always has (a pass takes time); it changes
// no result.

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/mempool"
)

// stallBackend is IndexBackend whose Statuses (the notifier's read) can be
// made to wait once, after it read the index.
type stallBackend struct {
	*IndexBackend
	armed   chan struct{} // one token: the next Statuses waits
	stalled chan struct{} // signalled when it waits
	resume  chan struct{} // closed to let it go on
	// The same once a status of the notifier is complete (its hasher's
	// Sum, after the mempool part was added), before it is delivered.
	armedMem   chan struct{}
	stalledMem chan struct{}
	resumeMem  chan struct{}
}

// stallHasher stops in Sum when its backend is armed for it.
type stallHasher struct {
	StatusHasher
	b *stallBackend
}

func (h stallHasher) Sum() []byte {
	sum := h.StatusHasher.Sum()
	select {
	case <-h.b.armedMem:
		h.b.stalledMem <- struct{}{}
		<-h.b.resumeMem
	default:
	}
	return sum
}

func (b *stallBackend) Statuses(shs []indexers.ScriptHash, limit int) ([]StatusHasher, []error, indexers.Tip, error) {
	sts, errs, tip, err := b.IndexBackend.Statuses(shs, limit)
	for i := range sts {
		if sts[i] != nil {
			sts[i] = stallHasher{StatusHasher: sts[i], b: b}
		}
	}
	select {
	case <-b.armed:
		b.stalled <- struct{}{}
		<-b.resume
	default:
	}
	return sts, errs, tip, err
}

// newStallNode is newRealNode with the server on a stallBackend.
func newStallNode(t testing.TB) (*realNode, *stallBackend) {
	t.Helper()
	n := &realNode{t: t}
	n.h = testchain.New(t, testchain.ElectrumIndex(t.TempDir(), indexers.Options{OnCommit: n.onCommit}, &n.idx, nil))
	if err := n.h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.h.MineEmpty(20); err != nil {
		t.Fatal(err)
	}
	_, tipH := n.h.Tip()
	for _, c := range n.h.Coins() {
		if (!c.Coinbase || tipH+1-c.Height >= int32(n.h.Params.CoinbaseMaturity)) && c.Script.Kind.Spendable() && c.Value > 2_0000_0000 {
			n.coins = append(n.coins, c)
		}
	}
	if len(n.coins) < 6 {
		t.Fatalf("only %d mature coins", len(n.coins))
	}
	var err error
	n.minerTo, err = address.NewAddressWitnessPubKeyHash(bytes.Repeat([]byte{0x99}, 20), n.h.Params)
	if err != nil {
		t.Fatal(err)
	}
	n.fees = mempool.NewFeeEstimator(mempool.DefaultEstimateFeeMaxRollback, 1)
	chain := n.h.Chain
	n.pool = testchain.NewTxPool(chain, n.h.Params, n.fees)
	n.overlay = indexers.NewMempool(n.idx.PrevOut)
	n.backend = &IndexBackend{
		Params:  n.h.Params,
		Chain:   chain,
		Index:   n.idx,
		Mempool: n.overlay,
		Pool:    n.pool,
		Relay: &PoolRelay{Pool: n.pool, Fees: n.fees, OnAccept: func(descs []*mempool.TxDesc) {
			n.srv.NotifyMempool(n.overlay.Add(descs...))
		}},
	}
	sb := &stallBackend{IndexBackend: n.backend, armed: make(chan struct{}, 1),
		stalled: make(chan struct{}, 1), resume: make(chan struct{}),
		armedMem: make(chan struct{}, 1), stalledMem: make(chan struct{}, 1), resumeMem: make(chan struct{})}
	t.Cleanup(func() {
		for _, ch := range []chan struct{}{sb.resume, sb.resumeMem} {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	})
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n.srv = New(Config{Listeners: []Listener{{Transport: TCP, Listener: tcp}}}, sb)
	n.addr = tcp.Addr().String()
	chain.Subscribe(n.onChain)
	if err := n.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.srv.Shutdown(contextWithTimeout(10 * time.Second))
	})
	return n, sb
}

// statusFromHistory is the status §4.2 gives a get_history answer.
func statusFromHistory(t testing.TB, hist []historyItem) *string {
	t.Helper()
	dg := indexers.NewStatusHasher()
	for _, e := range hist {
		dg.Add(mustHash(t, e.TxHash), e.Height)
	}
	return statusHex(dg.Sum())
}

func showStatus(s *string) string {
	if s == nil {
		return "null"
	}
	return (*s)[:12]
}

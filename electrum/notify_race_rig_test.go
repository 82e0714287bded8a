package electrum

// A realNode whose server reads through a backend that can stop the
// notifier inside a pass: right after it read a chunk of statuses from the
// index, before it adds their mempool parts and delivers them. This only
// widens a window the notifier always has (a pass takes time); it changes
// no result.

import (
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
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
	var sb *stallBackend
	n := newRealNodeServing(t, 0, nil, func(b *IndexBackend) Backend {
		sb = &stallBackend{IndexBackend: b, armed: make(chan struct{}, 1),
			stalled: make(chan struct{}, 1), resume: make(chan struct{}),
			armedMem: make(chan struct{}, 1), stalledMem: make(chan struct{}, 1), resumeMem: make(chan struct{})}
		return sb
	})
	// Before the server's shutdown (cleanups run last first): a stalled
	// notifier would hold it.
	t.Cleanup(func() {
		for _, ch := range []chan struct{}{sb.resume, sb.resumeMem} {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
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

package indexers_test

import (
	"errors"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestLimitsAtTheBoundary: every read that takes a limit answers a list
// of exactly limit entries and refuses limit-1, for long histories read in
// runs, split unspent scans and statuses resumed from a midstate.
func TestLimitsAtTheBoundary(t *testing.T) {
	r, _, _ := newReopenableRig(t, indexers.Options{UndoBlocks: 3})
	a, b := edgeScript(50), edgeScript(51)
	var cbs []*wire.MsgTx
	for i := 0; i < 110; i++ {
		blk := r.mine(edgeScript(int64(10 + i%3)))
		cbs = append(cbs, blk.MsgBlock().Transactions[0])
	}
	r.mine(edgeScript(60), bigTxs(cbs, 70, a, b)...)
	check := func(what string) {
		t.Helper()
		m, err := testchain.BuildModel(r.h)
		if err != nil {
			t.Fatal(err)
		}
		for _, pk := range [][]byte{a, b} {
			sh := shOf(pk)
			n := len(m.History[sh])
			if _, _, err := r.idx.History(sh, n); err != nil {
				t.Errorf("%s: History limit %d of %d entries: %v", what, n, n, err)
			}
			if _, _, err := r.idx.History(sh, n-1); !errors.Is(err, indexers.ErrHistoryTooLarge) {
				t.Errorf("%s: History limit %d of %d entries: %v", what, n-1, n, err)
			}
			// Twice: the second resumes from the midstate of the first.
			for i := 0; i < 2; i++ {
				if st, _, err := r.idx.Status(sh, n); err != nil || st.Len() != n {
					t.Errorf("%s: Status limit %d of %d entries: %v", what, n, n, err)
				}
				if _, _, err := r.idx.Status(sh, n-1); !errors.Is(err, indexers.ErrHistoryTooLarge) {
					t.Errorf("%s: Status limit %d of %d entries: %v", what, n-1, n, err)
				}
			}
			if _, _, err := r.idx.HistoryPage(sh, nil, 25, n); err != nil {
				t.Errorf("%s: HistoryPage limit %d: %v", what, n, err)
			}
			if _, _, err := r.idx.HistoryPage(sh, nil, 25, n-1); !errors.Is(err, indexers.ErrHistoryTooLarge) {
				t.Errorf("%s: HistoryPage limit %d of %d: %v", what, n-1, n, err)
			}
			u := len(m.Unspent[sh])
			if u == 0 {
				continue
			}
			if us, _, err := r.idx.Unspent(sh, u); err != nil || len(us) != u {
				t.Errorf("%s: Unspent limit %d of %d: %d, %v", what, u, u, len(us), err)
			}
			if _, _, err := r.idx.Unspent(sh, u-1); !errors.Is(err, indexers.ErrHistoryTooLarge) {
				t.Errorf("%s: Unspent limit %d of %d: %v", what, u-1, u, err)
			}
		}
	}
	_, ht := r.h.Tip()
	m0, _ := testchain.BuildModel(r.h)
	t.Logf("height %d, history of a %d, unspent of a %d", ht, len(m0.History[shOf(a)]), len(m0.Unspent[shOf(a)]))
	check("after the big block")
	// One more entry for a: a block paying it once.
	r.mine(a)
	check("after one more entry")
	r.checkAgainstModel("limits")
}

package indexers_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestVerifyReportsAtMostMaxDiffs pins VerifyOptions.MaxDiffs ("bounds
// the differences reported"): an index with more damaged rows than MaxDiffs
// reports exactly MaxDiffs of them, and the default bound when none is set.
// It also pins the kind of a history row whose positions repeat: malformed
// (verify.go, malformed: positions must ascend), not a row of another value.
func TestVerifyReportsAtMostMaxDiffs(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, propIndex(t, &idx))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(7))
	spec := testchain.DefaultSpec()
	spec.Txs = 10
	for i := 0; i < 3; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	verifyIndexOK(t, h, idx, "before")
	store := idx.Store()
	verify := func(max int) *indexers.VerifyResult {
		t.Helper()
		res, err := indexers.Verify(context.Background(), h.DB, h.Chain, indexers.VerifyOptions{Index: idx, MaxDiffs: max})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// A history row whose one position is repeated.
	var hk, hv []byte
	for k, v := range indexRows(t, idx) {
		if len(k) > 3 && k[2] == 'h' && rowHeight([]byte(k)) > 101 {
			hk, hv = []byte(k), v
			break
		}
	}
	if hk == nil {
		t.Fatal("no history row above the mature coins")
	}
	if err := store.Put(hk, append(bytes.Clone(hv[:2]), hv[:2]...), nil); err != nil {
		t.Fatal(err)
	}
	res := verify(0)
	var found *indexers.Difference
	for i := range res.Differences {
		if bytes.Equal(res.Differences[i].Key, hk) {
			found = &res.Differences[i]
		}
	}
	if found == nil || found.Table != "history" || found.Kind != "malformed" {
		t.Fatalf("history row with a repeated position reported as %+v; want table history, kind malformed", found)
	}
	if err := store.Put(hk, hv, nil); err != nil {
		t.Fatal(err)
	}

	// Thirty stray rows: thirty differences, more than any bound below.
	for i := 0; i < 30; i++ {
		if err := store.Put([]byte(fmt.Sprintf("Exz-stray%02d", i)), []byte{1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, max := range []int{1, 3, 29} {
		if res := verify(max); len(res.Differences) != max || res.OK() {
			t.Errorf("MaxDiffs %d: %d differences reported", max, len(res.Differences))
		}
	}
	if res := verify(0); len(res.Differences) != indexers.DefaultVerifyMaxDiffs {
		t.Errorf("default MaxDiffs: %d differences reported, want %d", len(res.Differences), indexers.DefaultVerifyMaxDiffs)
	}
	if res := verify(100); len(res.Differences) != 30 {
		t.Errorf("MaxDiffs 100: %d differences reported, want the 30 stray rows", len(res.Differences))
	}
}

// TestVerifyReportsUnspentAtAnotherTransaction pins the row pass's check
// of an unspent row's position (verify.go, rowPass: "position %d of block
// %d does not hold transaction"): the fingerprint covers the amount only,
// so a position naming another existing transaction of the same block is
// found by that check alone. Such a row orders listunspent wrongly and is
// restored at the wrong place by an undo.
func TestVerifyReportsUnspentAtAnotherTransaction(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, propIndex(t, &idx))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(11))
	spec := testchain.DefaultSpec()
	spec.Txs = 10
	for i := 0; i < 3; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	verifyIndexOK(t, h, idx, "before")
	var key, val []byte
	for k, v := range indexRows(t, idx) {
		if len(k) == 54 && k[2] == 'u' && rowHeight([]byte(k)) > 101 {
			if _, n, err := idx.Block(rowHeight([]byte(k))); err == nil && n >= 2 {
				key, val = []byte(k), bytes.Clone(v)
				break
			}
		}
	}
	if key == nil {
		t.Fatal("no unspent row in a block of two transactions or more")
	}
	// Another transaction of the block: position 0 or 1, whichever it is not.
	if val[8] == 0 && val[9] == 0 {
		val[9] = 1
	} else {
		val[8], val[9] = 0, 0
	}
	if err := idx.Store().Put(key, val, nil); err != nil {
		t.Fatal(err)
	}
	res, err := indexers.Verify(context.Background(), h.DB, h.Chain, indexers.VerifyOptions{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	var found *indexers.Difference
	for i := range res.Differences {
		if bytes.Equal(res.Differences[i].Key, key) {
			found = &res.Differences[i]
		}
	}
	if res.OK() || found == nil || found.Table != "unspent" || found.Kind != "value" {
		t.Fatalf("unspent row moved to another transaction of its block: OK %v, reported %+v; want an unspent value difference",
			res.OK(), found)
	}
}

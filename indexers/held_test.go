package indexers_test

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// heldIndex builds an index that holds the balances of scripts with at
// least three unspent outputs and keeps no answer in its read cache, so
// that every balance comes from a held row or a scan.
func heldIndex(idx **indexers.ElectrumIndex) testchain.IndexFactory {
	return func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		*idx = indexers.NewElectrumIndex(db, params)
		(*idx).SetReadCacheBytes(0)
		(*idx).SetHeldMin(3)
		return indexers.NewManager(db, *idx)
	}
}

// heldRows returns the number of held balance rows in the database and
// whether they are marked exact at the index tip.
func heldRows(t *testing.T, h *testchain.Harness) (rows int, marked bool) {
	t.Helper()
	tipVal := indexRows(t, h.DB)[string(indexers.TipKey)]
	for k, v := range indexRows(t, h.DB) {
		switch {
		case k == "Exq":
			marked = bytes.Equal(v, tipVal)
		case indexers.IsHeldKey([]byte(k)):
			rows++
		}
	}
	return rows, marked
}

// checkBalances compares the balance of every script of the model with the
// index's.
func checkBalances(t *testing.T, h *testchain.Harness, idx *indexers.ElectrumIndex, step string) {
	t.Helper()
	m, err := testchain.BuildModel(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range m.ScriptHashes() {
		got, _, err := idx.Balance(sh)
		if err != nil {
			t.Fatalf("%s: Balance(%v): %v", step, sh, err)
		}
		if got != m.Balance[sh] {
			t.Fatalf("%s: Balance(%v) = %d, model %d", step, sh, got, m.Balance[sh])
		}
	}
}

// Balances read from scans are held as rows that follow blocks and reorgs,
// are loaded again on a restart, are ignored once a catch-up moved the tip
// without them, and are replaced (never mixed with the old ones) when
// balances are held again.
func TestHeldBalancesFollowChain(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, heldIndex(&idx))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(31))
	spec := testchain.DefaultSpec()
	spec.Txs = 30
	for i := 0; i < 10; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}

	// Scans hold the balances of the scripts with three or more outputs.
	checkBalances(t, h, idx, "first reads")
	idx.WaitHeldWriter()
	held := idx.HeldScripts()
	if held == 0 {
		t.Fatal("no balance held after reading every script")
	}
	if rows, marked := heldRows(t, h); rows != held || !marked {
		t.Fatalf("%d held rows (marked at the tip: %v), %d held in memory", rows, marked, held)
	}

	// Blocks and reorganizations move them, in their transactions.
	for i := 0; i < 4; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.ReorgReplay(rng, 3, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Reorg(rng, 2, spec); err != nil {
		t.Fatal(err)
	}
	if rows, marked := heldRows(t, h); rows != idx.HeldScripts() || !marked || rows == 0 {
		t.Fatalf("after reorgs: %d held rows (marked: %v), %d in memory", rows, marked, idx.HeldScripts())
	}
	checkBalances(t, h, idx, "after reorgs")
	verifyOK(t, h, "after reorgs")

	// A restart loads them.
	before := idx.HeldScripts()
	if err := h.Reopen(heldIndex(&idx)); err != nil {
		t.Fatal(err)
	}
	idx.WaitHeldWriter()
	if got := idx.HeldScripts(); got != before {
		t.Fatalf("%d balances held after a restart, %d before", got, before)
	}
	checkBalances(t, h, idx, "after a restart")

	// Blocks connected without the index: its catch-up moves the tip
	// without the held rows, which readers and the next start ignore.
	if err := h.Reopen(nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Reopen(heldIndex(&idx)); err != nil {
		t.Fatal(err)
	}
	idx.WaitHeldWriter()
	if rows, marked := heldRows(t, h); marked && rows != idx.HeldScripts() {
		t.Fatalf("after a catch-up: %d held rows marked at the tip, %d in memory", rows, idx.HeldScripts())
	}
	checkBalances(t, h, idx, "after a catch-up")
	verifyOK(t, h, "after a catch-up")

	// Held again: the rows of the older tip are gone first.
	idx.WaitHeldWriter()
	if rows, marked := heldRows(t, h); rows != idx.HeldScripts() || !marked || rows == 0 {
		t.Fatalf("held again: %d held rows (marked: %v), %d in memory", rows, marked, idx.HeldScripts())
	}
	if _, err := h.Mine(rng, spec); err != nil {
		t.Fatal(err)
	}
	checkBalances(t, h, idx, "held again")
	verifyOK(t, h, "held again")
}

// A held balance that does not match the stored unspent rows is reported
// by verification, with its script.
func TestVerifyReportsWrongHeldBalance(t *testing.T) {
	var idx *indexers.ElectrumIndex
	h := testchain.New(t, heldIndex(&idx))
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(32))
	spec := testchain.DefaultSpec()
	spec.Txs = 30
	for i := 0; i < 6; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			t.Fatal(err)
		}
	}
	checkBalances(t, h, idx, "reads")
	idx.WaitHeldWriter()
	verifyOK(t, h, "held")
	var key, val []byte
	for k, v := range indexRows(t, h.DB) {
		if k != "Exq" && indexers.IsHeldKey([]byte(k)) {
			key, val = []byte(k), bytes.Clone(v)
			break
		}
	}
	if key == nil {
		t.Fatal("no held balance row")
	}
	val[7]++
	if err := h.DB.Update(func(dbTx database.Tx) error { return dbTx.Metadata().Put(key, val) }); err != nil {
		t.Fatal(err)
	}
	res, err := indexers.Verify(t.Context(), h.DB, h.Chain, indexers.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Differences) != 1 || res.Differences[0].Table != "held" || res.Differences[0].Kind != "value" ||
		res.Differences[0].HashX == "" {
		t.Fatalf("differences %v, want one held value", res.Differences)
	}
}

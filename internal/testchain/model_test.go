package testchain

import (
	"crypto/sha256"
	"math/rand"
	"reflect"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestModelAgreesWithUtxoSet checks the model's unspent outputs against
// btcd's own UTXO set: every model unspent output is unspent in btcd with the
// same value and script, and every output of the chain the model calls spent
// or unindexed is handled as the rules say.
func TestModelAgreesWithUtxoSet(t *testing.T) {
	h := New(t, nil)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(5))
	for i := 0; i < 25; i++ {
		if _, err := h.Mine(rng, DefaultSpec()); err != nil {
			t.Fatal(err)
		}
		if i%8 == 7 {
			if _, err := h.Reorg(rng, 2, DefaultSpec()); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := BuildModel(h)
	if err != nil {
		t.Fatal(err)
	}
	at, err := BuildModelAt(h, m.Tip)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(at, m) {
		t.Fatal("BuildModelAt(tip) differs from BuildModel")
	}
	if tip, height := h.Tip(); m.Tip != tip || m.Height != height {
		t.Fatalf("model at %v/%d, chain at %v/%d", m.Tip, m.Height, tip, height)
	}

	unspent := make(map[wire.OutPoint]bool)
	for sh, us := range m.Unspent {
		var sum int64
		for i, u := range us {
			op := wire.OutPoint{Hash: u.TxHash, Index: u.Vout}
			unspent[op] = true
			e, err := h.Chain.FetchUtxoEntry(op)
			if err != nil {
				t.Fatal(err)
			}
			if e == nil || e.IsSpent() {
				t.Fatalf("model unspent %v is not in btcd's UTXO set", op)
			}
			if e.Amount() != u.Value || e.BlockHeight() != u.Height ||
				indexers.ScriptHash(sha256.Sum256(e.PkScript())) != sh {
				t.Fatalf("model unspent %v differs from btcd's entry", op)
			}
			if i > 0 {
				a, b := m.Txs[us[i-1].TxHash], m.Txs[u.TxHash]
				if a.Height > b.Height || a.Height == b.Height && (a.Pos > b.Pos || a.Pos == b.Pos && us[i-1].Vout >= u.Vout) {
					t.Fatalf("unspent outputs of %v out of order at %d", sh, i)
				}
			}
			sum += u.Value
		}
		if m.Balance[sh] != sum {
			t.Fatalf("balance of %v is %d, unspent outputs sum to %d", sh, m.Balance[sh], sum)
		}
	}

	// Every output of the chain: indexed and unspent in btcd iff in the
	// model's unspent set; unindexed outputs are never in btcd's UTXO set
	// or are exactly the ones the rule excludes.
	unindexed := 0
	for height := int32(1); height <= m.Height; height++ {
		block, err := h.Chain.BlockByHeight(height)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range block.Transactions() {
			for i, out := range tx.MsgTx().TxOut {
				op := wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)}
				if !Indexed(out.PkScript) {
					unindexed++
					if unspent[op] {
						t.Fatalf("unindexed output %v in the model", op)
					}
					continue
				}
				e, err := h.Chain.FetchUtxoEntry(op)
				if err != nil {
					t.Fatal(err)
				}
				inUtxoSet := e != nil && !e.IsSpent()
				if inUtxoSet != unspent[op] {
					t.Fatalf("output %v: btcd unspent %v, model unspent %v", op, inUtxoSet, unspent[op])
				}
			}
		}
	}
	if unindexed == 0 {
		t.Fatal("chain has no unindexed outputs; the test lost its OP_RETURN and malformed cases")
	}

	// Histories are in chain order with one entry per transaction, and
	// every transaction is located.
	for sh, hist := range m.History {
		for i, e := range hist {
			p, ok := m.Txs[e.TxHash]
			if !ok || p.Height != e.Height {
				t.Fatalf("history of %v names %v at %d, located at %+v", sh, e.TxHash, e.Height, p)
			}
			if i > 0 {
				q := m.Txs[hist[i-1].TxHash]
				if q.Height > p.Height || q.Height == p.Height && q.Pos >= p.Pos {
					t.Fatalf("history of %v out of order at %d", sh, i)
				}
			}
		}
		if m.Status(sh) == nil || len(m.StatusHex(sh)) != 64 {
			t.Fatalf("script %v with history has no status", sh)
		}
	}
	var none indexers.ScriptHash
	if m.Status(none) != nil || m.StatusHex(none) != "" {
		t.Fatal("script without history has a status")
	}
}

// TestIndexedRule pins which outputs an Electrum index holds.
func TestIndexedRule(t *testing.T) {
	cases := []struct {
		name   string
		script []byte
		want   bool
	}{
		{"op_return", opReturnScript([]byte("x")), false},
		{"bare op_return", []byte{0x6a}, false},
		{"truncated push", []byte{0x4c, 0x20, 1, 2, 3}, false},
		{"too large", make([]byte, 10001), false},
		{"empty", nil, true},
		{"op_true", []byte{0x51}, true},
		{"p2wsh", NewSpendableScript(KindP2WSH, 1).PkScript, true},
		{"op_false", newUnspendableScript(3).PkScript, true},
		{"p2pkh", newUnspendableScript(0).PkScript, true},
	}
	for _, c := range cases {
		if got := Indexed(c.script); got != c.want {
			t.Errorf("%s: Indexed = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestModelAtSideBranch builds the model of a block that left the main chain:
// it is the model the main chain had when that block was the tip.
func TestModelAtSideBranch(t *testing.T) {
	h := New(t, nil)
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 6; i++ {
		if _, err := h.Mine(rng, DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	before, err := BuildModel(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Reorg(rng, 3, DefaultSpec()); err != nil {
		t.Fatal(err)
	}
	after, err := BuildModel(h)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(before.History, after.History) {
		t.Fatal("reorganization left every history unchanged")
	}
	old, err := BuildModelAt(h, before.Tip)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(old, before) {
		t.Fatal("model of the old tip differs from the model built when it was the tip")
	}
}

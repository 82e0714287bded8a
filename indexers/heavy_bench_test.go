package indexers_test

import (
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// heavyFixture is an index whose chain pays a handful of scripts over and
// over: each holds tens of thousands of history entries and unspent
// outputs, as exchange and pool addresses do on mainnet.
type heavyFixture struct {
	idx     *indexers.ElectrumIndex
	scripts []indexers.ScriptHash
}

func newHeavyFixture(b *testing.B, txs int) *heavyFixture {
	b.Helper()
	var idx *indexers.ElectrumIndex
	h, err := testchain.CreateWith(filepath.Join(b.TempDir(), "chain"), testchain.Options{
		Pool:  testchain.NewScriptPool(6, 3),
		Index: testchain.ElectrumIndex(b.TempDir(), indexers.Options{}, &idx, nil),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	if err := h.MineBulk(rand.New(rand.NewSource(3)), txs); err != nil {
		b.Fatal(err)
	}
	m, err := testchain.BuildModel(h)
	if err != nil {
		b.Fatal(err)
	}
	return &heavyFixture{idx: idx, scripts: m.ScriptHashes()}
}

// BenchmarkHeavyScriptReads times the reads of the script with the most
// unspent outputs and of the one with the longest history (the index keeps
// no read cache but the status midstates).
func BenchmarkHeavyScriptReads(b *testing.B) {
	f := newHeavyFixture(b, 120_000)
	var most, longest indexers.ScriptHash
	nu, nh := 0, 0
	for _, sh := range f.scripts {
		us, _, err := f.idx.Unspent(sh, 0)
		if err != nil {
			b.Fatal(err)
		}
		hist, _, err := f.idx.History(sh, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(us) > nu {
			most, nu = sh, len(us)
		}
		if len(hist) > nh {
			longest, nh = sh, len(hist)
		}
	}
	b.Logf("most unspent outputs: %d; longest history: %d", nu, nh)
	b.Run("Unspent", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := f.idx.Unspent(most, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("IsUnspent", func(b *testing.B) {
		us, _, err := f.idx.Unspent(most, 0)
		if err != nil {
			b.Fatal(err)
		}
		u := us[len(us)/2]
		op := wire.OutPoint{Hash: u.TxHash, Index: u.Vout}
		for i := 0; i < b.N; i++ {
			if ok, _, err := f.idx.IsUnspent(most, u.Height, op); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("UnspentTotals", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, _, err := f.idx.UnspentTotals(most); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("History", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := f.idx.History(longest, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The status of the longest history resumes from the midstate the
	// first read cached: only the rows after it are read.
	b.Run("Status", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := f.idx.Status(longest, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

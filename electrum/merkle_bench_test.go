package electrum

import (
	"math/rand"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// BenchmarkHeaderProof is a cp_height proof at a mainnet-sized height, with
// the roots of full 1024-block chunks kept from an earlier proof
// ("chunks") and computed for each proof ("none").
func BenchmarkHeaderProof(b *testing.B) {
	const cpHeight = 900_000
	rng := rand.New(rand.NewSource(1))
	hashes := make([]chainhash.Hash, cpHeight+1)
	for i := range hashes {
		rng.Read(hashes[i][:])
	}
	at := func(h int32) (chainhash.Hash, error) { return hashes[h], nil }
	for _, c := range []struct {
		name   string
		forget bool
	}{{"chunks", false}, {"none", true}} {
		b.Run(c.name, func(b *testing.B) {
			m := newHeaderMerkle()
			if _, _, err := m.proof(0, cpHeight, at); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if c.forget {
					m = newHeaderMerkle()
				}
				if _, _, err := m.proof(int32(rng.Intn(cpHeight)), cpHeight, at); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

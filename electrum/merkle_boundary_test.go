package electrum

import (
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestMerkleBranchAgainstBtcd checks every branch of trees of 1..130
// leaves (the 32/64-transaction chunk boundaries of the index included)
// against btcd's own merkle tree (blockchain.BuildMerkleTreeStore), an
// independent computation.
func TestMerkleBranchAgainstBtcd(t *testing.T) {
	for n := 1; n <= 130; n++ {
		txs := make([]*btcutil.Tx, n)
		leaves := make([]chainhash.Hash, n)
		for i := range txs {
			tx := wire.NewMsgTx(1)
			tx.LockTime = uint32(i*7919 + n)
			txs[i] = btcutil.NewTx(tx)
			leaves[i] = *txs[i].Hash()
		}
		store := blockchain.BuildMerkleTreeStore(txs, false)
		want := *store[len(store)-1]
		if got := merkleRoot(leaves); got != want {
			t.Fatalf("n=%d: root %v, btcd %v", n, got, want)
		}
		for pos := 0; pos < n; pos++ {
			br, root := merkleBranch(leaves, pos, -1)
			if root != want || rootFromBranch(leaves[pos], br, pos) != want {
				t.Errorf("n=%d pos=%d: branch does not fold to btcd's root", n, pos)
			}
		}
	}
}

// TestHeaderProofChunked checks cp_height proofs computed with chunked
// subtrees (a small chunk depth) against a plain tree, for every height and
// checkpoint.
func TestHeaderProofChunked(t *testing.T) {
	hashes := make([]chainhash.Hash, 70)
	for i := range hashes {
		hashes[i] = chainhash.DoubleHashH([]byte{byte(i), 1})
	}
	at := func(h int32) (chainhash.Hash, error) { return hashes[h], nil }
	for depth := 1; depth <= 3; depth++ {
		m := newHeaderMerkle()
		m.depth = depth
		for cp := 0; cp < len(hashes); cp++ {
			for h := 0; h <= cp; h++ {
				br, root, err := m.proof(int32(h), int32(cp), at)
				if err != nil {
					t.Fatal(err)
				}
				wantBr, wantRoot := merkleBranch(hashes[:cp+1], h, -1)
				_ = wantBr
				if root != wantRoot || rootFromBranch(hashes[h], br, h) != wantRoot || len(br) != len(wantBr) {
					t.Errorf("depth %d cp %d height %d: proof differs from a plain tree", depth, cp, h)
				}
			}
		}
	}
}

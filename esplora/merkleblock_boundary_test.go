package esplora

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/btcutil/v2/bloom"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestMerkleBlockAgainstBtcd compares the merkleblock-proof and
// merkle-proof of every position of blocks of 1..100 transactions with
// btcd's own BIP 37 builder (btcutil/bloom.NewMerkleBlock) and merkle tree
// (blockchain.BuildMerkleTreeStore).
func TestMerkleBlockAgainstBtcd(t *testing.T) {
	for n := 1; n <= 100; n++ {
		msg := &wire.MsgBlock{Header: wire.BlockHeader{Version: 1}}
		txids := make([]chainhash.Hash, n)
		utxs := make([]*btcutil.Tx, n)
		for i := 0; i < n; i++ {
			tx := wire.NewMsgTx(1)
			tx.LockTime = uint32(1000*n + i)
			msg.Transactions = append(msg.Transactions, tx)
			txids[i] = tx.TxHash()
			utxs[i] = btcutil.NewTx(tx)
		}
		store := blockchain.BuildMerkleTreeStore(utxs, false)
		msg.Header.MerkleRoot = *store[len(store)-1]
		block := btcutil.NewBlock(msg)
		for pos := 0; pos < n; pos++ {
			f := bloom.NewFilter(1, 0, 0.000001, wire.BloomUpdateNone)
			f.AddHash(&txids[pos])
			want, matched := bloom.NewMerkleBlock(block, f)
			if len(matched) != 1 || matched[0] != uint32(pos) {
				continue // a false positive of the filter: not comparable
			}
			got := merkleBlock(msg.Header, txids, pos)
			var a, b bytes.Buffer
			if err := got.BtcEncode(&a, wire.ProtocolVersion, wire.BaseEncoding); err != nil {
				t.Fatal(err)
			}
			if err := want.BtcEncode(&b, wire.ProtocolVersion, wire.BaseEncoding); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("n=%d pos=%d: merkleblock differs from btcd's", n, pos)
			}
			// merkle-proof folds to the header's root.
			h := txids[pos]
			p := pos
			for _, s := range merkleBranch(txids, pos) {
				if p&1 == 1 {
					h = merkleParent(s, h)
				} else {
					h = merkleParent(h, s)
				}
				p >>= 1
			}
			if h != msg.Header.MerkleRoot {
				t.Errorf("n=%d pos=%d: merkle-proof does not fold to the root", n, pos)
			}
		}
	}
}

package electrum

import (
	"encoding/json"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
)

// TestProofsAfterReplayReorg: after a reorganization that re-mines the
// replaced blocks' transactions at other heights and positions, every
// transaction of the new branch gets a proof at its new height and place,
// verbose transaction.get names its new block, and its old height is
// refused.
func TestProofsAfterReplayReorg(t *testing.T) {
	n := newRealNode(t, 0, proofUnthrottled)
	c := dial(t, n.addr)
	c.negotiate([]string{"1.4", "1.6"})
	for _, k := range []int{40, 70, 35} {
		mineExact(t, n, nil, k)
	}
	_, oldTip := n.h.Tip()
	old := map[string]int32{}
	for h := oldTip - 2; h <= oldTip; h++ {
		b, _ := n.h.Chain.BlockByHeight(h)
		for _, tx := range b.Transactions() {
			old[tx.Hash().String()] = h
		}
	}
	spec := testchain.BlockSpec{Txs: 3, MaxInputs: 1, MaxOutputs: 2, MaxFee: 100}
	if _, err := n.h.ReorgReplay(newRand(5), 2, spec); err != nil {
		t.Fatal(err)
	}
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	_, tip := n.h.Tip()
	for h := oldTip - 2; h <= tip; h++ {
		b, err := n.h.Chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		checkBlockProofs(t, c, b, tip)
		for _, tx := range b.Transactions() {
			if oh, ok := old[tx.Hash().String()]; ok && oh != h {
				if _, rerr := c.call("blockchain.transaction.get_merkle", tx.Hash().String(), oh); rerr == nil {
					t.Fatalf("tx %s: proof at its old height %d", tx.Hash(), oh)
				}
			}
		}
	}
}

// checkBlockProofs checks get_merkle, id_from_pos and verbose get of
// every transaction of block b (main chain, tip height tip).
func checkBlockProofs(t *testing.T, c *testClient, b *btcutil.Block, tip int32) {
	t.Helper()
	height := b.Height()
	k := len(b.Transactions())
	store := blockchain.BuildMerkleTreeStore(b.Transactions(), false)
	for pos, tx := range b.Transactions() {
		var m merkleResult
		c.must(&m, "blockchain.transaction.get_merkle", tx.Hash().String(), height)
		if m.Pos != pos || m.BlockHeight != height || !sameHashes(m.Merkle, branchFromStore(store, k, pos)) ||
			foldBranch(t, *tx.Hash(), m.Merkle, pos) != b.MsgBlock().Header.MerkleRoot {
			t.Fatalf("height %d pos %d: proof %+v", height, pos, m)
		}
		var id string
		c.must(&id, "blockchain.transaction.id_from_pos", height, pos)
		if id != tx.Hash().String() {
			t.Fatalf("height %d pos %d: id_from_pos %s", height, pos, id)
		}
		var v map[string]json.RawMessage
		c.must(&v, "blockchain.transaction.get", tx.Hash().String(), true)
		var bh string
		var conf int64
		json.Unmarshal(v["blockhash"], &bh)
		json.Unmarshal(v["confirmations"], &conf)
		if bh != b.Hash().String() || conf != int64(tip-height+1) {
			t.Fatalf("height %d pos %d: verbose blockhash %s confirmations %d, want %s %d", height, pos, bh, conf, b.Hash(), tip-height+1)
		}
	}
}

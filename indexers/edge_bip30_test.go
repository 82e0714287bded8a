package indexers_test

import (
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestBIP30OverwrittenCoinbase does what mainnet blocks 91842 and 91880
// do: a block repeats the coinbase (same txid) of an earlier block whose
// output is still unspent, and consensus lets the new output replace the
// old one: btcd (as Bitcoin Core) holds one X:0, created at the later
// height, and once it is spent the script holds nothing. btcd connects
// such a block with BFFastAdd (as below its checkpoints), which skips the
// BIP 30 check as its exception for the two mainnet blocks does; the
// index's table of those blocks takes this one too for the test.
func TestBIP30OverwrittenCoinbase(t *testing.T) {
	r := newEdgeRig(t)
	pk := edgeScript(1001)
	sh := shOf(pk)

	// Height 1: coinbase X pays pk.
	tip, _ := r.h.Tip()
	cb := r.coinbase(1, pk, blockchain.CalcBlockSubsidy(1, r.h.Params))
	r.submit(r.block(tip, cb), blockchain.BFNone)
	x := cb.TxHash()
	for i := 0; i < 3; i++ {
		r.mine(edgeScript(int64(2000 + i)))
	}
	// Height 5: the very same coinbase again (the subsidy is the same below
	// the regtest halving at 150), while X:0 of height 1 is unspent.
	tip, _ = r.h.Tip()
	dup := r.block(tip, cb.Copy())
	indexers.BIP30Overwrites[dup.Hash().String()] = 1
	t.Cleanup(func() { delete(indexers.BIP30Overwrites, dup.Hash().String()) })
	r.submit(dup, blockchain.BFFastAdd)
	if _, height := r.h.Tip(); height != 5 {
		t.Fatalf("tip at %d", height)
	}
	e, err := r.h.Chain.FetchUtxoEntry(wire.OutPoint{Hash: x, Index: 0})
	if err != nil || e == nil || e.BlockHeight() != 5 {
		t.Fatalf("btcd's unspent X:0: %+v %v, want one at height 5", e, err)
	}
	value := blockchain.CalcBlockSubsidy(1, r.h.Params)

	us, _, err := r.idx.Unspent(sh, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 1 || us[0].Height != 5 {
		t.Errorf("after the overwrite: Unspent lists %+v; btcd holds one output X:0 at height 5", us)
	}
	if _, bal, _, _ := r.idx.UnspentTotals(sh); bal != value {
		t.Errorf("after the overwrite: Balance %d, want %d (one output)", bal, value)
	}
	// (testchain's reference model cannot be the oracle here: it lists
	// the overwritten outpoint twice too, both at height 5.)

	// Mature X:0 of height 5 and spend it.
	for i := 0; i < int(r.h.Params.CoinbaseMaturity); i++ {
		r.mine(edgeScript(int64(3000 + i)))
	}
	r.mine(edgeScript(4000), spend([]wire.OutPoint{{Hash: x, Index: 0}}, nil,
		&wire.TxOut{Value: value, PkScript: edgeScript(4001)}))
	if e, err := r.h.Chain.FetchUtxoEntry(wire.OutPoint{Hash: x, Index: 0}); err != nil || e != nil && !e.IsSpent() {
		t.Fatalf("btcd still holds X:0: %+v %v", e, err)
	}
	us, _, _ = r.idx.Unspent(sh, 0)
	if len(us) != 0 {
		t.Errorf("after X:0 was spent: Unspent lists %+v; btcd holds no output of the script", us)
	}
	if _, bal, _, _ := r.idx.UnspentTotals(sh); bal != 0 {
		t.Errorf("after X:0 was spent: Balance %d, want 0", bal)
	}
}

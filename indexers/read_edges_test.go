package indexers_test

import (
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestHistoryPageBeforeNotInHistory pins HistoryPage's contract that a
// page "before" a transaction that is not in the script's history is empty
// (read.go, HistoryPage: "none when n <= 0 or before is not in it"), even
// when that transaction is confirmed and sits between two entries of the
// history. Esplora's /address/:addr/txs/chain/:last_seen_txid pages with it:
// a wrong last_seen_txid must not yield someone's page from the middle.
func TestHistoryPageBeforeNotInHistory(t *testing.T) {
	r := newEdgeRig(t)
	pk, other := edgeScript(5001), edgeScript(5002)
	sh := shOf(pk)
	b1 := r.mine(pk)    // height 1: pays sh
	b2 := r.mine(other) // height 2: another script only
	b3 := r.mine(pk)    // height 3: pays sh
	first, between, last := *b1.Transactions()[0].Hash(), *b2.Transactions()[0].Hash(), *b3.Transactions()[0].Hash()

	hist, _, err := r.idx.History(sh, 0)
	if err != nil || len(hist) != 2 || hist[0].TxHash != first || hist[1].TxHash != last {
		t.Fatalf("History: %+v, %v; want the coinbases of heights 1 and 3", hist, err)
	}
	// The page before an entry of the history: the entries before it.
	page, _, err := r.idx.HistoryPage(sh, &last, 10, 0)
	if err != nil || len(page) != 1 || page[0].TxHash != first {
		t.Fatalf("HistoryPage before the entry of height 3: %+v, %v; want the entry of height 1", page, err)
	}
	// A confirmed transaction between the two entries, not in the history.
	page, _, err = r.idx.HistoryPage(sh, &between, 10, 0)
	if err != nil || len(page) != 0 {
		t.Fatalf("HistoryPage before %v (height 2, not in the script's history): %+v, %v; want none",
			between, page, err)
	}
}

// TestTxLocationOfRepeatedTxidIsTheLatest pins locateTx's rule that of
// two confirmed transactions with one txid (a coinbase repeated before
// BIP 30, as mainnet blocks 91842 and 91880 do) the latest wins: the one
// whose output btcd holds. TxLocation, and with it the merkle proof's and
// Esplora's status height, names the later block.
func TestTxLocationOfRepeatedTxidIsTheLatest(t *testing.T) {
	r := newEdgeRig(t)
	pk := edgeScript(6001)
	tip, _ := r.h.Tip()
	cb := r.coinbase(1, pk, blockchain.CalcBlockSubsidy(1, r.h.Params))
	r.submit(r.block(tip, cb), blockchain.BFNone)
	x := cb.TxHash()
	for i := 0; i < 3; i++ {
		r.mine(edgeScript(int64(6100 + i)))
	}
	tip, _ = r.h.Tip()
	dup := r.block(tip, cb.Copy())
	indexers.BIP30Overwrites[dup.Hash().String()] = 1
	t.Cleanup(func() { delete(indexers.BIP30Overwrites, dup.Hash().String()) })
	r.submit(dup, blockchain.BFFastAdd)
	if _, height := r.h.Tip(); height != 5 {
		t.Fatalf("tip at %d", height)
	}
	if e, err := r.h.Chain.FetchUtxoEntry(wire.OutPoint{Hash: x, Index: 0}); err != nil || e == nil || e.BlockHeight() != 5 {
		t.Fatalf("btcd's X:0: %+v %v, want the one of height 5", e, err)
	}
	loc, err := r.idx.TxLocation(x)
	if err != nil || loc.Height != 5 || loc.Pos != 0 || loc.BlockHash != *dup.Hash() {
		t.Fatalf("TxLocation of the repeated coinbase: %+v, %v; want block %v at height 5", loc, err, dup.Hash())
	}
	if _, rl, err := r.idx.RawTx(x); err != nil || rl.Height != 5 {
		t.Fatalf("RawTx of the repeated coinbase located at %+v, %v; want height 5", rl, err)
	}
}

package indexers

import (
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestSyncKeepingKeepsMinedAhead pins SyncKeeping's keep: a transaction
// the pool no longer holds because it was mined in a block the index has
// not committed yet stays in the view (mempool.go, SyncKeeping), so that a
// wallet sees it unconfirmed until the block's commit shows it confirmed,
// never in neither. One keep does not accepts goes as in Sync.
func TestSyncKeepingKeepsMinedAhead(t *testing.T) {
	f := newPoolFixture()
	tx1, tx2 := *f.tx1.Tx.Hash(), *f.tx2.Tx.Hash()
	m := NewMempool(f.prevOut)
	m.Add(f.tx1, f.tx2)

	// tx1 was mined: the pool holds tx2 only, the index is not there yet.
	keep := func(txid chainhash.Hash) bool { return txid == tx1 }
	m.SyncKeeping([]*mempool.TxDesc{f.tx2}, keep)
	if es := m.Entries(f.shA); len(es) != 1 || es[0].TxHash != tx1 {
		t.Fatalf("script A after SyncKeeping kept tx1: entries %+v, want tx1", es)
	}
	if got := balanceOf(m, f.shA); got != 300-1000 {
		t.Fatalf("script A: unconfirmed balance %d, want %d while tx1 is kept", got, 300-1000)
	}
	if by, ok := m.SpentBy(f.c1); !ok || by != tx1 {
		t.Fatalf("the confirmed output tx1 spends: spent by %v %v, want tx1", by, ok)
	}
	if n := m.Len(); n != 2 {
		t.Fatalf("Len %d, want tx1 and tx2", n)
	}

	// The block is committed: keep no longer accepts tx1, which goes.
	f.confirmed[wire.OutPoint{Hash: tx1, Index: 0}] = wire.NewTxOut(600, f.b)
	touched := m.SyncKeeping([]*mempool.TxDesc{f.tx2}, func(chainhash.Hash) bool { return false })
	if !containsAll(touched, f.shA) || len(m.Entries(f.shA)) != 0 || isSpent(m, f.c1) {
		t.Fatalf("after the commit: touched %v, entries of A %+v; want tx1 gone", touched, m.Entries(f.shA))
	}
	if es := m.Entries(f.shC); len(es) != 1 || es[0].TxHash != tx2 || es[0].Height != 0 {
		t.Fatalf("tx2 after its parent left: %+v, want height 0", es)
	}
}

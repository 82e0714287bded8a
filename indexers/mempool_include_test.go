package indexers

import (
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// TestMempoolSpendsAndInclude pins two answers the Electrum adapter
// builds listunspent and get_balance from (electrum/adapter.go,
// MempoolSpends and MempoolUnspent): BalanceOf counts the script's outputs,
// confirmed or not, that unconfirmed transactions spend (listunspent reads
// that many confirmed outputs more than its limit, so a script at its limit
// is not refused for outputs the answer leaves out), and both BalanceOf
// and Unspent leave out the transactions include rejects (mined in a block
// the index has not committed yet): an output only such a transaction
// spends is still unspent.
func TestMempoolSpendsAndInclude(t *testing.T) {
	f := newPoolFixture()
	tx1, tx2 := *f.tx1.Tx.Hash(), *f.tx2.Tx.Hash()
	m := NewMempool(f.prevOut)
	m.Add(f.tx1, f.tx2)

	// A: confirmed c1 spent by tx1. B: tx1's output 0, spent by tx2.
	if d, n := m.BalanceOf(f.shA, nil); d != 300-1000 || n != 1 {
		t.Errorf("BalanceOf(A) = %d, %d spends; want -700, 1", d, n)
	}
	if d, n := m.BalanceOf(f.shB, nil); d != 0 || n != 1 {
		t.Errorf("BalanceOf(B) = %d, %d spends; want 0, 1 (its unconfirmed output spent)", d, n)
	}
	if d, n := m.BalanceOf(f.shC, nil); d != 550 || n != 0 {
		t.Errorf("BalanceOf(C) = %d, %d spends; want 550, 0", d, n)
	}

	// tx2 does not count (mined ahead of the index): B's output is unspent.
	notTx2 := func(txid *chainhash.Hash) bool { return *txid != tx2 }
	if d, n := m.BalanceOf(f.shB, notTx2); d != 600 || n != 0 {
		t.Errorf("BalanceOf(B) without tx2 = %d, %d spends; want 600, 0", d, n)
	}
	us := m.Unspent(f.shB, notTx2)
	if len(us) != 1 || us[0].TxHash != tx1 || us[0].Vout != 0 || us[0].Value != 600 || us[0].Height != 0 {
		t.Errorf("Unspent(B) without tx2 = %+v; want tx1:0 of 600", us)
	}
	if us := m.Unspent(f.shB, nil); len(us) != 0 {
		t.Errorf("Unspent(B) with tx2 = %+v; want none (tx2 spends it)", us)
	}
}

package integration

import "testing"

// TestReorgDroppingWithoutElectrumIndex: ReorgDropping works on a node
// without the Electrum index (no getrawtransaction of confirmed
// transactions there): the dropped transaction goes back to the mempool.
func TestReorgDroppingWithoutElectrumIndex(t *testing.T) {
	n := StartNode(t, NodeConfig{NoElectrumIndex: true})
	if _, err := n.Mine(101); err != nil {
		t.Fatal(err)
	}
	tx, err := SpendCoinbaseAt(n.RPC, 1, []byte{0x51}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	txid, err := n.SendRaw(tx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Mine(2); err != nil {
		t.Fatal(err)
	}
	branch, err := n.ReorgDropping(txid)
	if err != nil {
		t.Fatalf("ReorgDropping(%v), confirmed at height 102, on a node without the Electrum index: %v", txid, err)
	}
	if len(branch) != 3 {
		t.Fatalf("ReorgDropping from height 102 of 103 built %d blocks, want 3", len(branch))
	}
	pool, err := n.RPC.GetRawMempool()
	if err != nil {
		t.Fatal(err)
	}
	if len(pool) != 1 || *pool[0] != *txid {
		t.Fatalf("mempool after ReorgDropping: %v, want [%v]", pool, txid)
	}
	// Now unconfirmed, it cannot be dropped again.
	if _, err := n.ReorgDropping(txid); err == nil {
		t.Fatal("ReorgDropping of a transaction in the mempool succeeded")
	}
}

package indexers

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// txidOf hashes a transaction's serialization in place, with and without
// witnesses, to the txid btcd computes.
func TestTxidOf(t *testing.T) {
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 3}, SignatureScript: []byte{1, 2, 3}, Sequence: 7})
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 1}, Sequence: 9})
	tx.AddTxOut(&wire.TxOut{Value: 5000, PkScript: []byte{0x51}})
	tx.LockTime = 12345
	var buf []byte
	for _, witness := range []bool{false, true} {
		if witness {
			tx.TxIn[1].Witness = wire.TxWitness{{4, 5, 6}, {7}}
		}
		var b bytes.Buffer
		if err := tx.Serialize(&b); err != nil {
			t.Fatal(err)
		}
		if got, want := txidOf(b.Bytes(), tx, &buf), tx.TxHash(); got != want {
			t.Fatalf("witness %v: txid %v, want %v", witness, got, want)
		}
	}
}

package indexers

import (
	"bytes"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// The rate looks back over the last rateWindow of commits, counts the time
// since the last commit, and the ETA follows from it.
func TestCommitWindowRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var w commitWindow
	if r, eta := w.rate(t0, 0, 100); r != 0 || eta != 0 {
		t.Fatalf("no samples: rate %v ETA %v", r, eta)
	}
	w.add(t0, 0)
	// Nothing committed yet: unknown.
	if r, eta := w.rate(t0.Add(5*time.Second), 0, 1000); r != 0 || eta != 0 {
		t.Fatalf("nothing committed: rate %v ETA %v", r, eta)
	}
	// 100 tx/s for a minute, committed every 10 s.
	for i := 1; i <= 6; i++ {
		w.add(t0.Add(time.Duration(i)*10*time.Second), uint64(i)*1000)
	}
	// Younger than the window: from the start.
	r, eta := w.rate(t0.Add(60*time.Second), 6000, 12000)
	if r != 100 || eta != 60*time.Second {
		t.Fatalf("rate %v ETA %v, want 100 and 1m", r, eta)
	}
	// Then 20 s without a commit: the last 30 s hold 1000 tx.
	r, eta = w.rate(t0.Add(80*time.Second), 6000, 12000)
	if want := 1000.0 / 30; r != want || eta != 180*time.Second {
		t.Fatalf("rate %v ETA %v, want %v and 3m", r, eta, want)
	}
	// Old samples go, one anchor older than the window stays.
	if n := len(w.samples); n > 5 {
		t.Fatalf("%d samples kept", n)
	}
	// Done: no time left.
	if _, eta := w.rate(t0.Add(61*time.Second), 12000, 12000); eta != 0 {
		t.Fatalf("ETA %v at the target", eta)
	}
}

// Direct batches grow with the budget within their bounds and are never
// smaller than a merged one; the queue stays within its bounds.
func TestSizesFor(t *testing.T) {
	prev := sizesFor(0, batchBytes)
	for mib := 0; mib <= 4000; mib += 50 {
		z := sizesFor(int64(mib)<<20, batchBytes)
		if z.merged != batchBytes || z.part != batchBytes/partsPerBatch ||
			z.direct < z.merged || z.direct > maxDirectBatches*z.merged ||
			z.queue < 2 || z.queue > maxQueuedParts {
			t.Fatalf("%d MiB: %+v", mib, z)
		}
		if z.direct < prev.direct {
			t.Fatalf("%d MiB: %+v after %+v", mib, z, prev)
		}
		prev = z
	}
	if z := sizesFor(DefaultCatchUpMemory<<20, batchBytes); z.direct != batchBytes {
		t.Fatalf("default budget: %+v", z)
	}
	if z := sizesFor(4000<<20, batchBytes); z.direct != maxDirectBatches*batchBytes || z.queue != maxQueuedParts {
		t.Fatalf("4000 MiB: %+v", z)
	}
	// Tests' tiny batches.
	if z := sizesFor(DefaultCatchUpMemory<<20, 16<<10); z.direct != maxDirectBatches*16<<10 || z.part != 4<<10 {
		t.Fatalf("16 KiB batches: %+v", z)
	}
}

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

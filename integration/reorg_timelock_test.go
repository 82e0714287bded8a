package integration

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestReorgKeepsTimeLockedTransaction: a transaction with a time-based
// relative lock (BIP 68, active on regtest from height 1) that the
// replaced blocks' times satisfied is confirmed again at its height by
// Reorg: the new branch keeps the replaced blocks' times, and with them
// the median times past the lock is measured against.
func TestReorgKeepsTimeLockedTransaction(t *testing.T) {
	n := StartNode(t, NodeConfig{})
	if _, err := n.Mine(101); err != nil {
		t.Fatal(err)
	}
	// A: a coinbase spent back to MiningScript, confirmed at 102.
	a, err := SpendCoinbaseAt(n.RPC, 1, MiningScript(), 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.SendRaw(a); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	// Eleven blocks ten minutes apart (as peers' blocks may be), so the
	// median time past moves about an hour.
	hash, height, err := n.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}
	msg, err := n.RPC.GetBlock(hash)
	if err != nil {
		t.Fatal(err)
	}
	prev := btcutil.NewBlock(msg)
	prev.SetHeight(height)
	for i := 1; i <= 11; i++ {
		b, err := rpctest.CreateBlock(prev, nil, 4, msg.Header.Timestamp.Add(time.Duration(i)*10*time.Minute),
			MiningAddress(), nil, n.Params())
		if err != nil {
			t.Fatal(err)
		}
		if err := n.RPC.SubmitBlock(b, nil); err != nil {
			t.Fatalf("submitblock: %v", err)
		}
		prev = b
	}
	if err := n.WaitSynced(testContext(t)); err != nil {
		t.Fatal(err)
	}
	// B spends A with a relative lock of 1024 seconds, which the chain's
	// median time past now satisfies.
	b := wire.NewMsgTx(2)
	b.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: a.TxHash(), Index: 0},
		Sequence: wire.SequenceLockTimeIsSeconds | 2})
	b.AddTxOut(wire.NewTxOut(a.TxOut[0].Value-10_000, MiningScript()))
	sig, err := txscript.SignatureScript(b, 0, MiningScript(), txscript.SigHashAll, miningKey, true)
	if err != nil {
		t.Fatal(err)
	}
	b.TxIn[0].SignatureScript = sig
	bid, err := n.SendRaw(b)
	if err != nil {
		t.Fatalf("the time-locked spend: %v", err)
	}
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	before, err := n.RPC.GetRawTransactionVerbose(bid)
	if err != nil || before.Confirmations != 1 {
		t.Fatalf("the time-locked spend is not confirmed: %+v %v", before, err)
	}
	_, tip, err := n.RPC.GetBestBlock()
	if err != nil {
		t.Fatal(err)
	}

	// Replace every block from A's (height 102) on.
	if _, err := n.Reorg(int(tip - 101)); err != nil {
		t.Fatalf("Reorg(%d): %v", tip-101, err)
	}
	after, err := n.RPC.GetRawTransactionVerbose(bid)
	if err != nil || after.Confirmations != 2 {
		t.Fatalf("after Reorg the time-locked spend is %+v (%v), want it confirmed again at height %d", after, err, tip)
	}
	if after.BlockHash == before.BlockHash {
		t.Fatalf("the time-locked spend is still in block %s, which Reorg replaced", after.BlockHash)
	}
	if _, err := chainhash.NewHashFromStr(after.BlockHash); err != nil {
		t.Fatal(err)
	}
}

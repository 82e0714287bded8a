package integration

import (
	"context"
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// nonStdParent is a node (--rejectnonstd, mainnet's policy; regtest relays
// non-standard transactions by default) where A, a version-3 transaction
// (valid by consensus, not standard for the node's pool), is mined at h,
// and D, spending A's output, waits in the mempool.
type nonStdParent struct {
	n    *Node
	ec   *ElectrumClient
	a, d *wire.MsgTx
	h    int32
	s3   *kitWalletT
}

// setUpNonStdParent starts the node, mines A and sends D; s3, paid by D,
// is subscribed.
func setUpNonStdParent(t *testing.T, ctx context.Context) *nonStdParent {
	t.Helper()
	n := StartNode(t, NodeConfig{Args: []string{"--rejectnonstd"}})
	w, s1, s3 := kitWallet(t), kitWallet(t), kitWallet(t)
	op, err := n.Fund(w.addr, btcutil.Amount(100_000))
	if err != nil {
		t.Fatal(err)
	}
	a := w.spendVersion(t, 3, op, 100_000, wire.MaxTxInSequenceNum, wire.NewTxOut(99_000, s1.script))
	mineWith(t, n, a)
	_, h, _ := n.RPC.GetBestBlock()
	d := s1.spend(t, wire.OutPoint{Hash: a.TxHash(), Index: 0}, 99_000, wire.MaxTxInSequenceNum, wire.NewTxOut(98_000, s3.script))
	if _, err := n.SendRaw(d); err != nil {
		t.Fatal(err)
	}
	want := []HistoryItem{{TxHash: d.TxHash().String(), Height: 0}}
	if st, err := n.Electrum.SubscribeScriptHash(ctx, s3.sh); err != nil || str(st) != str(Status(want)) {
		t.Fatalf("subscribe: %s %v, want D at 0", str(st), err)
	}
	return &nonStdParent{n: n, ec: n.Electrum, a: a, d: d, h: h, s3: s3}
}

// checkDKept checks that A is confirmed and D is still unconfirmed, in
// btcd's pool and in the Electrum server's answers.
func (s *nonStdParent) checkDKept(t *testing.T, ctx context.Context, after string) {
	t.Helper()
	res, err := s.n.RPC.GetRawTransactionVerbose(txHashOf(s.a))
	if err != nil || res.Confirmations == 0 {
		t.Fatalf("A after %s: %+v %v, want confirmed", after, res, err)
	}
	notifyBarrier(t, ctx, s.n, s.ec)
	dh := s.d.TxHash()
	hist, err := s.ec.GetHistory(ctx, s.s3.sh)
	if err != nil || len(hist) != 1 || hist[0].TxHash != dh.String() || hist[0].Height != 0 {
		t.Fatalf("s3's history after %s, which confirms D's parent A again: %+v (%v); "+
			"D in btcd's pool: %v; want D unconfirmed at height 0", after, hist, err, inMempool(t, s.n.RPC, &dh))
	}
	if !inMempool(t, s.n.RPC, &dh) {
		t.Fatalf("D is not in btcd's pool after %s", after)
	}
}

// TestReorgKeepsChildOfNonStandardParentConfirmedAgain: a reorganization
// replaces h with a longer branch that confirms A at h again. D's parent is
// confirmed before and after, so D stays in the mempool, as in Bitcoin
// Core, which re-adds a reorganization's transactions only after it (those
// the new branch confirms are taken out of its disconnect pool first) and
// so never evicts D. btcd's sync manager tries to put A back into the pool
// when h is disconnected, fails (non-standard) and removes A with its
// descendants; the node holds D aside before that and submits it again
// once the reorganization's connects are done (NTBlockAccepted).
func TestReorgKeepsChildOfNonStandardParentConfirmedAgain(t *testing.T) {
	ctx := testContext(t)
	s := setUpNonStdParent(t, ctx)
	if _, err := s.n.Reorg(1); err != nil {
		t.Fatal(err)
	}
	s.checkDKept(t, ctx, "a reorganization")
}

// TestInvalidateBlockKeepsChildOfNonStandardParentConfirmedAgain is the
// same through invalidateblock and reconsiderblock, whose reorganizations
// btcd ends without NTBlockAccepted: after a reorganization to a branch
// that confirms A again, invalidating the new branch's first block returns
// to h (A confirmed there), and reconsidering it to the new branch.
func TestInvalidateBlockKeepsChildOfNonStandardParentConfirmedAgain(t *testing.T) {
	ctx := testContext(t)
	s := setUpNonStdParent(t, ctx)
	oldH, err := s.n.RPC.GetBlockHash(int64(s.h))
	if err != nil {
		t.Fatal(err)
	}
	branch, err := s.n.Reorg(1)
	if err != nil {
		t.Fatal(err)
	}
	s.checkDKept(t, ctx, "a reorganization")

	if err := s.n.RPC.InvalidateBlock(branch[0]); err != nil {
		t.Fatalf("invalidateblock: %v", err)
	}
	s.checkTip(t, ctx, oldH, s.h)
	s.checkDKept(t, ctx, "invalidateblock")

	if err := s.n.RPC.ReconsiderBlock(branch[0]); err != nil {
		t.Fatalf("reconsiderblock: %v", err)
	}
	s.checkTip(t, ctx, branch[len(branch)-1], s.h+int32(len(branch))-1)
	s.checkDKept(t, ctx, "reconsiderblock")
}

// checkTip checks the node's tip and waits for the Electrum server's.
func (s *nonStdParent) checkTip(t *testing.T, ctx context.Context, want *chainhash.Hash, height int32) {
	t.Helper()
	if h, got, err := s.n.RPC.GetBestBlock(); err != nil || *h != *want || got != height {
		t.Fatalf("tip %v@%d (%v), want %v@%d", h, got, err, want, height)
	}
	if err := s.n.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReorgDropsChildOfNonStandardParentLeftOut: a reorganization to a
// branch that leaves A out. btcd's pool refuses A, so D spends an output
// that exists nowhere: it is not submitted again, and leaves btcd's pool
// and the Electrum server's answers.
func TestReorgDropsChildOfNonStandardParentLeftOut(t *testing.T) {
	ctx := testContext(t)
	s := setUpNonStdParent(t, ctx)
	if _, err := s.n.ReorgDropping(txHashOf(s.a)); err != nil {
		t.Fatal(err)
	}
	ah, dh := s.a.TxHash(), s.d.TxHash()
	if inMempool(t, s.n.RPC, &ah) || inMempool(t, s.n.RPC, &dh) {
		t.Fatalf("after a reorganization that leaves A out: A in btcd's pool %v, D %v; want neither",
			inMempool(t, s.n.RPC, &ah), inMempool(t, s.n.RPC, &dh))
	}
	notifyBarrier(t, ctx, s.n, s.ec)
	if hist, err := s.ec.GetHistory(ctx, s.s3.sh); err != nil || len(hist) != 0 {
		t.Fatalf("s3's history after a reorganization that leaves A out: %+v (%v), want none", hist, err)
	}
}

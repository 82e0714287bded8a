package integration

import (
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestReorgConfirmingTxAgainLeavesStatus: A, the only transaction of script s1,
// is confirmed at h; a reorganization replaces blocks h.. with a longer
// branch that confirms A at h again (as a competing block mined from the
// same mempool does). s1's status never changes, so no notification may
// say otherwise: neither null (A nowhere, between the branches) nor A
// unconfirmed. Repeated a few times, since it depends on when the
// writer's pass runs during the reorganization.
func TestReorgConfirmingTxAgainLeavesStatus(t *testing.T) {
	ctx := testContext(t)
	n := StartNode(t, NodeConfig{})
	ec := n.Electrum
	for round := 0; round < 8; round++ {
		w, s1 := kitWallet(t), kitWallet(t)
		op, err := n.Fund(w.addr, btcutil.Amount(100_000))
		if err != nil {
			t.Fatal(err)
		}
		a := w.spend(t, op, 100_000, wire.MaxTxInSequenceNum, wire.NewTxOut(99_000, s1.script))
		if _, err := n.SendRaw(a); err != nil {
			t.Fatal(err)
		}
		mineWith(t, n, a)
		before, err := ec.SubscribeScriptHash(ctx, s1.sh)
		if err != nil || before == nil {
			t.Fatal(before, err)
		}
		_, h, _ := n.RPC.GetBestBlock()
		if _, err := n.Reorg(1); err != nil {
			t.Fatal(err)
		}
		notifyBarrier(t, ctx, n, ec)
		var got []string
		changed := false
		for _, s := range statusNotes(ec, s1.sh) {
			got = append(got, str(s))
			changed = changed || str(s) != str(before)
		}
		if changed {
			hist, _ := ec.GetHistory(ctx, s1.sh)
			t.Fatalf("round %d: status notifications %v for s1, whose only transaction %v stayed confirmed at %d "+
				"(status %s, %s with A unconfirmed; history now %+v): the status never changed", round, got, a.TxHash(), h,
				str(before), str(Status([]HistoryItem{{TxHash: a.TxHash().String(), Height: 0}})), hist)
		}
	}
}

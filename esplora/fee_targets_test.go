package esplora

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestFeeEstimatesOnlyTargetsBtcdAnswers: /fee-estimates lists the targets
// btcd's estimator answers, 1 to 25 blocks, on the node's real relay, which
// answers a longer target with the 25-block rate: listed as 144, 504 or
// 1008 blocks, that rate would read as a day's or a week's estimate.
func TestFeeEstimatesOnlyTargetsBtcdAnswers(t *testing.T) {
	n := newTestNode(t, "")
	fees := n.backend.Relay.(*electrum.PoolRelay).Fees
	// The estimator sees the next block, as the node registers each
	// connected block with it: it now has estimates.
	if err := fees.RegisterBlock(n.mine()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		coin := n.coin()
		tx := testchain.SpendTx([]testchain.Coin{coin}, &wire.TxOut{Value: coin.Value - int64(5000*(i+1)),
			PkScript: testchain.NewSpendableScript(testchain.KindP2WSH, int64(7000+i)).PkScript})
		if code, body := n.post("/tx", txHex(tx)); code != 200 {
			t.Fatalf("POST /tx: %d %s", code, body)
		}
	}
	b := n.mineMempool()
	if err := fees.RegisterBlock(b); err != nil {
		t.Fatal(err)
	}
	if rate, _ := n.backend.EstimateFee(2, ""); rate <= 0 {
		t.Fatalf("precondition: btcd's estimator answers 2 blocks: %v", rate)
	}
	var est map[string]float64
	n.getJSON("/fee-estimates", &est)
	if len(est) == 0 {
		t.Fatal("precondition: estimates answered")
	}
	for k, v := range est {
		target, err := strconv.Atoi(k)
		if err != nil || target < 1 || target > 25 {
			raw, _ := json.Marshal(est)
			t.Errorf("target %q (%v sat/vB) answered: btcd's estimator answers 1 to 25 blocks only (the 25-block rate is %v); answer %s",
				k, v, est["25"], raw)
		}
	}
}

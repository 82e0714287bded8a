package electrum

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestMaxFeeAfterPoolPolicy: the fee cap is put only to a transaction the
// pool would take, as bitcoind's BroadcastTransaction runs the whole
// mempool test-accept before comparing the fee with maxfeerate, and its
// submitpackage its PreChecks. A transaction over 0.10 BTC/kvB whose inputs
// exist and whose scripts verify, but which btcd's pool refuses for another
// rule, is answered with that rule by broadcast and broadcast_package: a
// relative lock time (BIP68) not yet met (bitcoind: non-BIP68-final), and an
// input listed twice (bitcoind: bad-txns-inputs-duplicate; the duplicate
// also doubles the fee counted).
func TestMaxFeeAfterPoolPolicy(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.6")

	// A coin confirmed in the tip block, spent with a relative lock of 10
	// blocks and 1 BTC of fee.
	s := testchain.NewSpendableScript(testchain.KindP2WSH, 91_717)
	c1 := n.coin()
	parent := testchain.SpendTx([]testchain.Coin{c1}, wire.NewTxOut(c1.Value-20_000, s.PkScript))
	n.mine(nil, parent)
	csv := testchain.SpendTx([]testchain.Coin{changeCoin(parent, 0, &s)}, wire.NewTxOut(parent.TxOut[0].Value-1e8, s.PkScript))
	csv.TxIn[0].Sequence = 10

	// One coin spent twice, paying a modest 20,000 sat over both.
	c2 := n.coin()
	dup := testchain.SpendTx([]testchain.Coin{c2, c2}, wire.NewTxOut(c2.Value-20_000, s.PkScript))

	for _, tc := range []struct {
		name, poolWhy string
		tx            *wire.MsgTx
	}{
		{"BIP68 lock not met", "sequence locks", csv},
		{"duplicate input", "duplicate inputs", dup},
	} {
		_, perr := n.pool.CheckMempoolAcceptance(btcutil.NewTx(tc.tx))
		if perr == nil || !strings.Contains(perr.Error(), tc.poolWhy) {
			t.Fatalf("%s: precondition: btcd's pool refuses it for %q: %v", tc.name, tc.poolWhy, perr)
		}
		res, rerr := c.call("blockchain.transaction.broadcast", txHex(tc.tx))
		if rerr == nil {
			t.Fatalf("%s: broadcast taken: %s", tc.name, res)
		}
		if strings.Contains(rerr.Message, "Fee exceeds maximum") || !strings.Contains(rerr.Message, tc.poolWhy) {
			t.Errorf("%s: broadcast refused with %q;\nwant the pool's refusal (%v): the fee cap applies only to a transaction the pool would take",
				tc.name, firstLine(rerr.Message), perr)
		}
		// broadcast_package (1.6), as submitpackage, which runs its
		// PreChecks before its maxfeerate.
		res, rerr = c.call("blockchain.transaction.broadcast_package", []string{txHex(tc.tx)}, true)
		if rerr != nil {
			t.Fatalf("%s: broadcast_package: %v", tc.name, rerr)
		}
		var pr PackageResult
		if err := json.Unmarshal(res, &pr); err != nil {
			t.Fatal(err)
		}
		if r := pr.Results[tc.tx.WitnessHash().String()]; r.Error == "max feerate exceeded" || !strings.Contains(r.Error, tc.poolWhy) {
			t.Errorf("%s: broadcast_package member refused with %q; want the pool's rule (%v)", tc.name, r.Error, perr)
		}
	}
}

func firstLine(s string) string {
	s = strings.TrimPrefix(s, "the transaction was rejected by network rules.\n\n")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

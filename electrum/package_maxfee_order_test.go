package electrum

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// TestBroadcastPackageMaxFeeAfterPreChecks: bitcoind's submitpackage
// (which broadcast_package follows, doc.go "broadcast_package on btcd")
// puts its maxfeerate to a member only after PreChecks pass
// (validation.cpp, AcceptSingleTransaction / AcceptMultipleTransactions:
// "if (!PreChecks(args, ws)) ... // Individual modified feerate exceeded
// caller-defined max; abort ... "max feerate exceeded""). PreChecks holds
// CheckTransaction (bad-txns-inputs-duplicate) and the sequence locks
// (non-BIP68-final). A single-member package over 0.10 BTC/kvB that fails
// one of these is answered with that rule, as
// blockchain.transaction.broadcast of the same transaction is
// (TestMaxFeeAfterPoolPolicy), not "max feerate exceeded".
func TestBroadcastPackageMaxFeeAfterPreChecks(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.6")

	s := testchain.NewSpendableScript(testchain.KindP2WSH, 91_718)
	c1 := n.coin()
	parent := testchain.SpendTx([]testchain.Coin{c1}, wire.NewTxOut(c1.Value-20_000, s.PkScript))
	n.mine(nil, parent)
	csv := testchain.SpendTx([]testchain.Coin{changeCoin(parent, 0, &s)}, wire.NewTxOut(parent.TxOut[0].Value-1e8, s.PkScript))
	csv.TxIn[0].Sequence = 10

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
		// The single broadcast answers the pool's rule (the commit's fix).
		if _, rerr := c.call("blockchain.transaction.broadcast", txHex(tc.tx)); rerr == nil ||
			!strings.Contains(rerr.Message, tc.poolWhy) {
			t.Fatalf("%s: precondition: broadcast answers the pool's rule: %v", tc.name, rerr)
		}
		res, rerr := c.call("blockchain.transaction.broadcast_package", []string{txHex(tc.tx)}, true)
		if rerr != nil {
			t.Fatalf("%s: broadcast_package: %v", tc.name, rerr)
		}
		var pr PackageResult
		if err := json.Unmarshal(res, &pr); err != nil {
			t.Fatal(err)
		}
		r := pr.Results[tc.tx.WitnessHash().String()]
		if r.Error == "" {
			t.Fatalf("%s: member accepted: %s", tc.name, res)
		}
		if r.Error == "max feerate exceeded" || !strings.Contains(r.Error, tc.poolWhy) {
			t.Errorf("%s: broadcast_package member refused with %q; want the pool's rule (%v), "+
				"as submitpackage runs PreChecks before its maxfeerate and broadcast of the same tx answers",
				tc.name, r.Error, perr)
		}
	}
}

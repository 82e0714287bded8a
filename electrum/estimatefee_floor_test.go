package electrum

import (
	"testing"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestEstimateFeeNotBelowRelayFee: Bitcoin Core's estimatesmartfee, which
// ElectrumX's blockchain.estimatefee relays, never answers a fee rate below
// the node's minimum relay fee. btcd's pool admits high-priority
// transactions paying less than the relay fee (free relay, on by default:
// --limitfreerelay, no --norelaypriority), and btcd's estimator then
// answers their rate. A wallet that builds a transaction at the estimate
// gets it refused by this very server (its priority is not that of an
// old coin): the estimate must be at least blockchain.relayfee.
func TestEstimateFeeNotBelowRelayFee(t *testing.T) {
	n := newRealNode(t, 0, nil)
	// The estimator ignores transactions seen before its first block.
	n.mine(nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	var relay float64
	c.must(&relay, "blockchain.relayfee")

	// An old coin's spend paying well under 1 sat/vB: btcd admits it on
	// its priority.
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(1_0000_0000, n.h.Pool.Spendable[0].PkScript),
		wire.NewTxOut(coin.Value-1_0000_0000-40, n.h.Pool.Spendable[0].PkScript))
	if vs := vsize(tx); float64(40)/float64(vs) >= 1 {
		t.Fatalf("test tx pays %d sat for %d vB: not under the relay fee", 40, vs)
	}
	c.must(nil, "blockchain.transaction.broadcast", txHex(tx))
	n.mineMempool()

	for _, target := range []int{1, 2, 6, 25} {
		var fee float64
		c.must(&fee, "blockchain.estimatefee", target)
		if fee != -1 && fee < relay {
			t.Errorf("estimatefee %d = %.8f BTC/kvB, below blockchain.relayfee %.8f: a transaction built at this rate is refused by the server's own mempool", target, fee, relay)
		}
	}
	// What a wallet then does: spend a 1 BTC coin one block old at the 2-block
	// estimate. btcd refuses it (below the relay fee, too young for free
	// relay), so the wallet's payment fails.
	var fee float64
	c.must(&fee, "blockchain.estimatefee", 2)
	if fee <= 0 {
		t.Fatalf("no estimate: %v", fee)
	}
	young := changeCoin(tx, 0, &n.h.Pool.Spendable[0])
	pay := testchain.SpendTx([]testchain.Coin{young}, wire.NewTxOut(young.Value, n.h.Pool.Spendable[0].PkScript))
	feeSat := int64(fee*1e8*float64(vsize(pay))/1000) + 1
	pay.TxOut[0].Value -= feeSat
	if _, rerr := c.call("blockchain.transaction.broadcast", txHex(pay)); rerr != nil {
		t.Errorf("a transaction paying the estimated %.8f BTC/kvB (%d sat for %d vB) is refused: %s", fee, feeSat, vsize(pay), rerr.Message)
	}
}

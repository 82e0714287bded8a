package electrum

import (
	"encoding/json"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// estimatingNode returns a real node whose fee estimator holds an estimate:
// btcd's estimator only observes transactions that enter the pool after it
// registered a block, so a block is mined first, then a fee-paying
// transaction is broadcast through the server and mined.
func estimatingNode(t *testing.T) (*realNode, *testClient) {
	t.Helper()
	n := newRealNode(t, 0, nil)
	n.mine(nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, n.h.Pool.Spendable[0].PkScript))
	c.must(nil, "blockchain.transaction.broadcast", txHex(tx))
	n.mineMempool()
	var fee float64
	c.must(&fee, "blockchain.estimatefee", 2)
	if fee <= 0 {
		t.Fatalf("estimatefee 2 = %v after a fee-paying transaction confirmed; want an estimate", fee)
	}
	return n, c
}

// TestEstimateFeeTargetBeyondEstimatorDepthGetsAnEstimate: ElectrumX hands
// blockchain.estimatefee's number to bitcoind's estimatesmartfee (targets up
// to 1008, larger ones bucketed to 1008), so wallets asking for a slow
// target (BlueWallet's estimateFee(144), Sparrow's 50) get a fee rate
// whenever the node has estimates at all. btcd's estimator covers 1 to 25
// blocks: an estimate that confirms within 25 blocks also confirms within
// 144, so a target past 25 is answered with the 25-block estimate, not -1.
func TestEstimateFeeTargetBeyondEstimatorDepthGetsAnEstimate(t *testing.T) {
	_, c := estimatingNode(t)
	var at25 float64
	c.must(&at25, "blockchain.estimatefee", 25)
	if at25 <= 0 {
		t.Fatalf("estimatefee 25 = %v; want an estimate", at25)
	}
	for _, target := range []int{26, 50, 144, 1008, 2000} {
		var fee float64
		c.must(&fee, "blockchain.estimatefee", target)
		if fee <= 0 {
			t.Errorf("estimatefee %d = %v while estimatefee 25 = %v; want an estimate (ElectrumX asks estimatesmartfee for it)", target, fee, at25)
		}
	}
}

// TestEstimateFeeZeroTargetAnsweredAsOneBlock: ElectrumX buckets a target
// of 0 (and 1) to 1 block before asking the node, so estimatefee 0 answers
// the 1-block estimate rather than -1.
func TestEstimateFeeZeroTargetAnsweredAsOneBlock(t *testing.T) {
	_, c := estimatingNode(t)
	var at1, at0 float64
	c.must(&at1, "blockchain.estimatefee", 1)
	c.must(&at0, "blockchain.estimatefee", 0)
	if at0 != at1 {
		t.Errorf("estimatefee 0 = %v, estimatefee 1 = %v; want the 1-block estimate for 0", at0, at1)
	}
}

// TestVerboseCoinbaseWitnessIsTxinwitness: blockchain.transaction.get with
// verbose answers Bitcoin Core's getrawtransaction object
// (docs/PROTOCOL.md §5; ElectrumX relays getrawtransaction). Core's
// TxToUniv writes an input's witness stack as "txinwitness" for every
// input, the coinbase's included (the witness reserved value of a block
// with a witness commitment); it has no "witness" key.
func TestVerboseCoinbaseWitnessIsTxinwitness(t *testing.T) {
	n := newRealNode(t, 4, nil)
	_, tip := n.h.Tip()
	c := dial(t, n.addr)
	c.negotiate("1.4")
	checked := 0
	for h := tip; h > 0 && checked == 0; h-- {
		block, err := n.h.Chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		cb := block.Transactions()[0]
		if len(cb.MsgTx().TxIn[0].Witness) == 0 {
			continue
		}
		checked++
		var v struct {
			Vin []map[string]json.RawMessage `json:"vin"`
		}
		c.must(&v, "blockchain.transaction.get", cb.Hash().String(), true)
		in := v.Vin[0]
		if _, ok := in["coinbase"]; !ok {
			t.Fatalf("coinbase input without \"coinbase\": %v", in)
		}
		if _, ok := in["txinwitness"]; !ok {
			keys := []string{}
			for k := range in {
				keys = append(keys, k)
			}
			t.Errorf("coinbase input at height %d has keys %v; want its witness as \"txinwitness\" as bitcoind writes it", h, keys)
		}
		if w, ok := in["witness"]; ok {
			t.Errorf("coinbase input at height %d has \"witness\": %s; bitcoind has no such key", h, w)
		}
	}
	if checked == 0 {
		t.Fatal("no coinbase with a witness in the chain")
	}
}

package node

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// The node serves blockchain.estimatefee through its own electrum.TxRelay
// (electrumRelay), not electrum.PoolRelay, which the electrum package's
// tests use: these tests ask the node's Electrum server itself.

// estimatingNode starts a node with an Electrum server, and returns it
// with a negotiated client; with fees, a fee-paying transaction has been
// observed and mined, so btcd's estimator has estimates.
func estimatingNode(t *testing.T, fees bool) (*Node, *electrumClient) {
	t.Helper()
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 102)
	c := dialElectrum(t, n)
	c.call("server.version", "estimatefee-test", "1.4")
	if fees {
		tx := spendCoinbase(t, n, 1, 20_000)
		var buf bytes.Buffer
		if err := tx.MsgTx().Serialize(&buf); err != nil {
			t.Fatal(err)
		}
		c.call("blockchain.transaction.broadcast", hex.EncodeToString(buf.Bytes()))
		generate(t, n, 1)
	}
	return n, c
}

// TestElectrumEstimateFeeNoDataIsMinusOne: "If the daemon does not have
// enough information to make an estimate, the integer -1 is returned"
// (the protocol's blockchain.estimatefee; docs/PROTOCOL.md). btcd's estimator, with its
// minimum of registered blocks but no transaction observed, estimates
// 0 sat/B; the node's server answers 0 BTC/kvB, a rate a wallet then pays.
func TestElectrumEstimateFeeNoDataIsMinusOne(t *testing.T) {
	_, c := estimatingNode(t, false)
	for _, target := range []int{1, 2, 6, 25} {
		if fee, _ := c.call("blockchain.estimatefee", target).(float64); fee != -1 {
			t.Errorf("estimatefee %d with no fee data = %v, want -1 (no estimate)", target, fee)
		}
	}
}

// TestElectrumEstimateFeeTargetsOutsideEstimatorRange: btcd estimates 1 to
// 25 blocks; a target of 0 is asked as 1 (as ElectrumX does), one over 25
// as 25 (Sparrow asks 50, BlueWallet 144), and one past 2^32 is not taken
// modulo 2^32.
func TestElectrumEstimateFeeTargetsOutsideEstimatorRange(t *testing.T) {
	_, c := estimatingNode(t, true)
	at1, _ := c.call("blockchain.estimatefee", 1).(float64)
	at25, _ := c.call("blockchain.estimatefee", 25).(float64)
	if at1 <= 0 || at25 <= 0 {
		t.Fatalf("sanity: estimatefee 1 = %v, 25 = %v after a fee-paying transaction confirmed", at1, at25)
	}
	if fee, _ := c.call("blockchain.estimatefee", 0).(float64); fee != at1 {
		t.Errorf("estimatefee 0 = %v, want the 1-block estimate %v", fee, at1)
	}
	for _, target := range []int{26, 50, 144, 1008, 1<<32 + 1} {
		if fee, _ := c.call("blockchain.estimatefee", target).(float64); fee != at25 {
			t.Errorf("estimatefee %d = %v, want the 25-block estimate %v", target, fee, at25)
		}
	}
}

// TestElectrumEstimateFeeNotBelowRelayFeeOnTheNode: Bitcoin Core's
// estimatesmartfee (what ElectrumX's blockchain.estimatefee returns) is
// never below the node's minimum relay fee. btcd admits old coins'
// spends under the relay fee on their priority (free relay is on by
// default: --limitfreerelay 15, no --norelaypriority), its estimator then
// answers their rate, and the node's Electrum server passes it on.
func TestElectrumEstimateFeeNotBelowRelayFeeOnTheNode(t *testing.T) {
	n, c := estimatingNode(t, false)
	relay, _ := c.call("blockchain.relayfee").(float64)
	// The coinbase of block 1 is old: 40 satoshis of fee (about
	// 0.2 sat/vB) get it in on its priority.
	tx := spendCoinbase(t, n, 1, 40)
	var buf bytes.Buffer
	if err := tx.MsgTx().Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	c.call("blockchain.transaction.broadcast", hex.EncodeToString(buf.Bytes()))
	generate(t, n, 1)
	for _, target := range []int{1, 2, 6, 25} {
		fee, _ := c.call("blockchain.estimatefee", target).(float64)
		if fee != -1 && fee < relay {
			t.Errorf("estimatefee %d = %.8f BTC/kvB, below blockchain.relayfee %.8f", target, fee, relay)
		}
	}
}

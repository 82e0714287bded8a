package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/txscript/v2"

	"github.com/btcd-electrum/btcd-electrum/integration"
)

// TestWallet is the wallet-style test of the README, verbatim.
func TestWallet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := integration.StartNode(t, integration.NodeConfig{}) // in-process; Binary: true runs the executable

	// The wallet under test derives an address and subscribes to its script.
	key, _ := btcec.NewPrivateKey()
	addr, _ := address.NewAddressWitnessPubKeyHash(address.Hash160(key.PubKey().SerializeCompressed()), n.Params())
	script, _ := txscript.PayToAddrScript(addr)
	sh := integration.ScriptHash(script)
	if st, err := n.Electrum.SubscribeScriptHash(ctx, sh); err != nil || st != nil {
		t.Fatalf("subscribe: %v %v", st, err)
	}
	// waitFor waits for the notification of sh whose status is history's.
	waitFor := func(history ...integration.HistoryItem) {
		t.Helper()
		want := integration.Status(history)
		if _, err := n.Electrum.NextStatus(ctx, sh, func(s *string) bool { return s != nil && *s == *want }); err != nil {
			t.Fatalf("no notification of %+v: %v", history, err)
		}
	}

	// Fund it: the faucet matures coins, pays, and a block confirms the payment.
	op, err := n.Fund(addr, btcutil.Amount(50_000_000))
	if err != nil {
		t.Fatal(err)
	}
	_, height, _ := n.RPC.GetBestBlock()
	waitFor(integration.HistoryItem{TxHash: op.Hash.String(), Height: height})

	// Reorg it away: a heavier branch without the payment; it is unconfirmed again.
	if _, err := n.ReorgDropping(&op.Hash); err != nil {
		t.Fatal(err)
	}
	waitFor(integration.HistoryItem{TxHash: op.Hash.String(), Height: 0})

	// Confirm it again.
	if _, err := n.Mine(1); err != nil {
		t.Fatal(err)
	}
	waitFor(integration.HistoryItem{TxHash: op.Hash.String(), Height: height + 2})
}

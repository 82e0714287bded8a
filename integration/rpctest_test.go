package integration

import (
	"context"
	"testing"

	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// within runs fn, failing the test if it returns an error or ctx ends
// first (rpctest's join helpers poll without a deadline).
func within(t *testing.T, ctx context.Context, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-ctx.Done():
		t.Fatalf("%s: %v", what, ctx.Err())
	}
}

// TestRPCTestDrivesOurNode runs the btcd-electrum binary under btcd's own
// integration harness (rpctest: TLS RPC, websocket notifications feeding
// its in-memory wallet, generate) next to a real btcd, and uses rpctest's
// multi-node helpers: the real btcd connects to our node and syncs 101
// blocks from it, a transaction from our node's wallet reaches btcd's
// mempool, and the block btcd mines with it comes back to our node, whose
// Electrum server then shows the transaction confirmed with a valid proof.
func TestRPCTestDrivesOurNode(t *testing.T) {
	ctx := testContext(t)
	bin, err := NodeBinary()
	if err != nil {
		t.Fatal(err)
	}
	el, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ours := StartBtcd(t, BtcdConfig{Exe: bin, MatureOutputs: 1,
		Args: []string{"--electrumindex", "--electrumlisten=" + el}})
	btcd := StartBtcd(t, BtcdConfig{})
	nodes := []*rpctest.Harness{ours, btcd}

	// btcd syncs from our node.
	within(t, ctx, "btcd connecting to our node", func() error { return rpctest.ConnectNode(btcd, ours) })
	within(t, ctx, "btcd syncing from our node", func() error { return rpctest.JoinNodes(nodes, rpctest.Blocks) })
	if n, err := btcd.Client.GetBlockCount(); err != nil || n != 101 {
		t.Fatalf("btcd synced to %d (%v), want 101", n, err)
	}

	ec, err := DialElectrum(ctx, el)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ec.Close() })
	if _, _, err := ec.Version(ctx, "integration", "1.4"); err != nil {
		t.Fatal(err)
	}
	addr, err := btcd.NewAddress()
	if err != nil {
		t.Fatal(err)
	}
	pkScript, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatal(err)
	}
	sh := ScriptHash(pkScript)
	if _, err := ec.SubscribeScriptHash(ctx, sh); err != nil {
		t.Fatal(err)
	}

	// Our wallet pays btcd's; the transaction crosses to btcd's mempool.
	txHash, err := ours.SendOutputs([]*wire.TxOut{wire.NewTxOut(20_000_000, pkScript)}, 10)
	if err != nil {
		t.Fatalf("SendOutputs through our node: %v", err)
	}
	txid := txHash.String()
	within(t, ctx, "mempools joining", func() error { return rpctest.JoinNodes(nodes, rpctest.Mempools) })
	waitStatus(t, ctx, ec, sh, []HistoryItem{{TxHash: txid, Height: 0}})

	// btcd mines it; the block comes to our node.
	if _, err := btcd.Client.Generate(1); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "our node syncing btcd's block", func() error { return rpctest.JoinNodes(nodes, rpctest.Blocks) })
	waitStatus(t, ctx, ec, sh, []HistoryItem{{TxHash: txid, Height: 102}})
	checkMerkle(t, ctx, ec, btcd.Client, txid, 102)
	if tip, err := ec.SubscribeHeaders(ctx); err != nil || tip.Height != 102 || tip.Hex != headerHex(t, btcd.Client, 102) {
		t.Fatalf("headers tip %+v (%v), btcd's 102 is %s", tip, err, headerHex(t, btcd.Client, 102))
	}
}

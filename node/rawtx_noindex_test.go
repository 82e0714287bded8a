package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcjson"
)

// TestGetRawTransactionWithoutIndexSaysSo: without --electrumindex or
// --txindex, getrawtransaction of a transaction outside the mempool answers
// as btcd does, -5 "The transaction index must be enabled ...", not "No
// information available about transaction", which lnd's btcd notifier takes
// for "not confirmed" and then never scans the blocks (a channel funding
// confirmed while lnd was down would stay pending).
func TestGetRawTransactionWithoutIndexSaysSo(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.TxIndex, cfg.AddrIndex = false, false
	n := startNode(t, cfg)
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatal(err)
	}
	spend := spendCoinbase(t, n, 1, 10_000)
	if _, err := n.ProcessTx(spend); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	if n.txMemPool.IsTransactionInPool(spend.Hash()) {
		t.Fatal("the transaction is still in the mempool after being mined")
	}
	c := rpcClient(t, n.RPCAddrs()[0].String())

	check := func(what string, err error) {
		t.Helper()
		var rpcErr *btcjson.RPCError
		if !errors.As(err, &rpcErr) {
			t.Fatalf("%s of a confirmed transaction on a node without a transaction index: %v, want btcd's RPC error", what, err)
		}
		if strings.Contains(rpcErr.Message, "No information available about transaction") ||
			!strings.Contains(rpcErr.Message, "transaction index must be enabled") {
			t.Errorf("%s of a confirmed transaction on a node without a transaction index: %d %q; "+
				"btcd answers -5 \"The transaction index must be enabled to query the blockchain (specify --txindex)\", "+
				"and lnd takes \"No information available about transaction\" for \"not confirmed\"",
				what, rpcErr.Code, rpcErr.Message)
		}
	}
	_, err := c.GetRawTransactionVerbose(spend.Hash())
	check("getrawtransaction verbose", err)
	_, err = c.GetRawTransaction(spend.Hash())
	check("getrawtransaction", err)
}

package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// reorgWhileIndexHeld: the Electrum index holds block B (height h, which
// confirms a), its writer is then held (OnBlock) on the next block, and the
// chain reorganizes to B' at the same height h, which confirms a', a
// replacement of a. The published index tip stays B at height h: the
// index trails the chain although the heights are equal.
func reorgWhileIndexHeld(t *testing.T, txIndex bool) (n *Node, a, aPrime *btcutil.Tx, stale, fresh *chainhash.Hash) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.TxIndex = txIndex
	cfg.MetricsListen = "127.0.0.1:0"
	n = startNode(t, cfg)
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatal(err)
	}
	a = spendCoinbaseSeq(t, n, 1, 10_000, 0xfffffffd)
	if _, err := n.ProcessTx(a); err != nil {
		t.Fatal(err)
	}
	hs, err := n.Generate(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	stale = hs[0]
	syncIndex(t, n)

	mineHeld(t, n)
	// The reorganization: B and the block above it leave the chain, a
	// returns to the pool, a' replaces it and B' confirms a'.
	if err := n.Chain().InvalidateBlock(stale); err != nil {
		t.Fatal(err)
	}
	aPrime = spendCoinbaseSeq(t, n, 1, 100_000, 0xfffffffd)
	if _, err := n.ProcessTx(aPrime); err != nil {
		t.Fatalf("replacement: %v", err)
	}
	hs, err = n.Generate(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh = hs[0]
	if n.txMemPool.HaveTransaction(a.Hash()) || n.txMemPool.HaveTransaction(aPrime.Hash()) {
		t.Fatal("a or a' still in the pool")
	}
	tip, _ := n.index.electrum.LatestTip()
	best := n.Chain().BestSnapshot()
	t.Logf("index tip %v at %d, chain tip %v at %d", tip.Hash, tip.Height, best.Hash, best.Height)
	if tip.Hash != *stale || best.Hash != *fresh || tip.Height != best.Height {
		t.Fatalf("setup: want the index at the stale block and the chain at the new one, same height")
	}
	return n, a, aPrime, stale, fresh
}

// TestRawTxReorgSameHeightNoTxIndex: without --txindex, a transaction the
// chain confirms (a' in B') while the Electrum index still holds the other
// branch's block at the same height is not answered "No information
// available about transaction", which lnd takes for "not confirmed", but
// "cannot tell yet": the index trails the chain although the heights match.
func TestRawTxReorgSameHeightNoTxIndex(t *testing.T) {
	n, _, aPrime, _, _ := reorgWhileIndexHeld(t, false)
	_, err := rpcClient(t, n.RPCAddrs()[0].String()).GetRawTransactionVerbose(aPrime.Hash())
	var rerr *btcjson.RPCError
	if !errors.As(err, &rerr) || strings.Contains(rerr.Message, "No information available") {
		t.Fatalf("getrawtransaction of a transaction the chain confirms, while the Electrum index "+
			"is on the other branch at the same height: %v; want the index's 'cannot tell yet'", err)
	}
}

// TestRawTxReorgStaleWithTxIndex: with --txindex beside the Electrum
// index, a transaction only the stale branch confirmed (a, replaced by a'
// which B' confirms) is not answered with B, the block the Electrum index
// still holds, which lnd would take for a confirmation: btcd's --txindex,
// in step with the chain, answers, and holds no entry for it.
func TestRawTxReorgStaleWithTxIndex(t *testing.T) {
	n, a, _, stale, _ := reorgWhileIndexHeld(t, true)
	res, err := rpcClient(t, n.RPCAddrs()[0].String()).GetRawTransactionVerbose(a.Hash())
	if err == nil {
		h, herr := chainhash.NewHashFromStr(res.BlockHash)
		if res.BlockHash == "" || (herr == nil && !n.Chain().MainChainHasBlock(h)) {
			t.Fatalf("getrawtransaction of a transaction only the stale branch confirmed: blockhash %q "+
				"(the stale block %v; in main chain: false), confirmations %d; with --txindex btcd "+
				"answers -5 No information available", res.BlockHash, stale, res.Confirmations)
		}
	}
	t.Logf("getrawtransaction: %v", err)
}

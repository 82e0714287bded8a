package node

import (
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// The index commits a block confirming T, then undoes it for a heavier
// branch without T, and the node's dispatcher, busy meanwhile, takes both
// commits in one batch: T, back in btcd's pool and no longer in the index,
// stays in the wallet's answers as unconfirmed. (The first commit's
// confirmed set no longer holds after the undo.)
func TestReorgInOneBatchKeepsReturnedTx(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 101)
	s := scenarioScript(0xb7)
	sh := indexers.ScriptHashFromScript(s).String()
	cb := coinbaseOf(t, n, 2)
	tx := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, wire.NewTxOut(cb.TxOut[0].Value-10_000, s))
	if _, err := n.ProcessTx(tx); err != nil {
		t.Fatal(err)
	}
	fork := n.Chain().BestSnapshot().Height
	w := dialElectrum(t, n)
	w.call("server.version", "wallet", "1.4")

	// The dispatcher takes the view's lock for an announcement and waits
	// there, so that the commits below wait in its queue together.
	n.viewMu.Lock()
	var once sync.Once
	release := func() { once.Do(n.viewMu.Unlock) }
	t.Cleanup(release)
	var desc []*mempool.TxDesc
	for _, d := range n.TxPool().TxDescs() {
		if *d.Tx.Hash() == *tx.Hash() {
			desc = append(desc, d)
		}
	}
	n.AnnounceNewTransactions(desc)
	waitFor(t, "the dispatcher to take the announcement", func() bool {
		n.events.mu.Lock()
		defer n.events.mu.Unlock()
		return len(n.events.items) == 0
	})
	mineWith(t, n, tx)
	submitBranch(t, n, fork, 2*time.Second, nil, nil)
	syncIndex(t, n)
	if !n.TxPool().HaveTransaction(tx.Hash()) {
		t.Fatal("T is not back in btcd's pool after the reorganization")
	}
	release()

	waitFor(t, "T among the script's unconfirmed transactions", func() bool {
		got, _ := w.call("blockchain.scripthash.get_mempool", sh).([]any)
		if len(got) != 1 {
			return false
		}
		e, _ := got[0].(map[string]any)
		return e["tx_hash"] == tx.Hash().String()
	})
	if got := w.call("blockchain.scripthash.subscribe", sh); got != specStatus(tx.Hash().String()+":0") {
		t.Errorf("status %v, want T unconfirmed", got)
	}
}

package node

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// momentsNode starts a node with 101 blocks and returns once its event
// dispatcher has handled the index's commit of the last one (the Electrum
// server sends a tip only after the mempool view was reconciled with its
// commit), so that nothing the blocks queued reconciles the view later.
func momentsNode(t *testing.T, cfg *Config) *Node {
	t.Helper()
	n := startNode(t, cfg)
	h := dialElectrum(t, n)
	h.call("server.version", "moments-tip", "1.4")
	h.call("blockchain.headers.subscribe")
	generate(t, n, 101)
	for {
		p := h.notification("blockchain.headers.subscribe")
		if p[0].(map[string]any)["height"] == float64(101) {
			return n
		}
	}
}

// TestSubmittedTransactionStaysInMempoolAnswers: transactions are submitted
// one after the other through the node's ProcessTx (what Electrum's
// blockchain.transaction.broadcast, sendrawtransaction and the faucet
// call), each paying a script of its own. Once ProcessTx has returned, the
// transaction is in btcd's pool and in the Electrum view ("the view has it
// before this returns"), and get_mempool of its script lists it from then
// on, while the next submissions are handled: a transaction the pool holds
// never drops out of the unconfirmed answers.
func TestSubmittedTransactionStaysInMempoolAnswers(t *testing.T) {
	n := momentsNode(t, testConfig(t, t.TempDir(), true))
	ds := dynScript()
	cb := coinbaseOf(t, n, 1)
	const k = 200
	per := (cb.TxOut[0].Value - 100_000) / k
	var outs []*wire.TxOut
	for i := 0; i < k; i++ {
		outs = append(outs, wire.NewTxOut(per, ds))
	}
	fan := dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{cb, 0, testKey}}, outs...)
	mineWith(t, n, fan)
	txs := make([]*btcutil.Tx, k)
	shs := make([]indexers.ScriptHash, k)
	for i := range txs {
		s := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{byte(i), 0x5c}, 10)...)
		shs[i] = indexers.ScriptHashFromScript(s)
		txs[i] = dynSpend(t, wire.MaxTxInSequenceNum, []dynIn{{fan.MsgTx(), uint32(i), dynKey}}, wire.NewTxOut(per-1000, s))
	}
	listed := func(i int) bool {
		for _, e := range n.indexBackend.MempoolEntries(shs[i]) {
			if e.TxHash == *txs[i].Hash() {
				return true
			}
		}
		return false
	}

	// A reader of the view, as the requests of wallets are meanwhile,
	// checks every transaction whose ProcessTx returned.
	var returned, missing atomic.Int64
	var first atomic.Pointer[chainhash.Hash]
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := 0; i < int(returned.Load()); i++ {
				if _, ok := n.mempoolView.Fee(*txs[i].Hash()); !ok && n.TxPool().IsTransactionInPool(txs[i].Hash()) {
					missing.Add(1)
					first.CompareAndSwap(nil, txs[i].Hash())
				}
			}
		}
	}()
	for i, tx := range txs {
		if _, err := n.ProcessTx(tx); err != nil {
			t.Fatal(err)
		}
		if !listed(i) {
			t.Errorf("transaction %d not listed right after ProcessTx returned", i)
		}
		returned.Add(1)
	}
	close(stop)
	<-done
	if m := missing.Load(); m > 0 {
		t.Errorf("%d times a submitted transaction held by btcd's pool was missing from the Electrum view "+
			"after ProcessTx returned (first %v)", m, first.Load())
	}
}

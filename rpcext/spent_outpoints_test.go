package rpcext

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// payTwice builds a transaction moving the coinbase of the block at height
// to two outputs paying payTo.
func payTwice(t *testing.T, node *testNode, height int32, payTo address.Address) *wire.MsgTx {
	t.Helper()
	one := spendCoinbase(t, node, height, payTo)
	script := one.TxOut[0].PkScript
	half := one.TxOut[0].Value / 2
	hash, _ := node.chain.BlockHashByHeight(height)
	block, _ := node.chain.BlockByHash(hash)
	cb := block.Transactions()[0]
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: *cb.Hash(), Index: 0}, nil, nil))
	tx.AddTxOut(wire.NewTxOut(half, script))
	tx.AddTxOut(wire.NewTxOut(half, script))
	sig, err := txscript.SignatureScript(tx, 0, cb.MsgTx().TxOut[0].PkScript, txscript.SigHashAll, node.key, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.TxIn[0].SignatureScript = sig
	return tx
}

// spendBoth builds a transaction spending both outputs of prev (owned by
// key) to payTo.
func spendBoth(t *testing.T, prev *wire.MsgTx, key *btcec.PrivateKey, payTo address.Address) *wire.MsgTx {
	t.Helper()
	script, err := txscript.PayToAddrScript(payTo)
	if err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(2)
	for i := range prev.TxOut {
		tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: prev.TxHash(), Index: uint32(i)}, nil, nil))
	}
	tx.AddTxOut(wire.NewTxOut(prev.TxOut[0].Value+prev.TxOut[1].Value-20000, script))
	for i := range prev.TxOut {
		sig, err := txscript.SignatureScript(tx, i, prev.TxOut[i].PkScript, txscript.SigHashAll, key, true)
		if err != nil {
			t.Fatal(err)
		}
		tx.TxIn[i].SignatureScript = sig
	}
	return tx
}

// TestSpentOutpointsLeaveSubscriptionCount: a notifyreceived client (the
// legacy btcwallet chain client) watches the outputs paying its address;
// once a block spends them they are no longer watched (btcd removes every
// watched outpoint a block transaction spends) and no longer count against
// the subscription limit. A wallet that spends two of its outputs in one
// transaction (a consolidation) then receives as many payments again as
// before without passing its limit, and is not disconnected.
func TestSpentOutpointsLeaveSubscriptionCount(t *testing.T) {
	node := matureNode(t)
	// The address and the outputs of one payment of two: three.
	ts := startServer(t, node, func(c *Config) { c.MaxWebsocketSubscriptions = 3 })
	recv := make(chan chainhash.Hash, 10)
	redeem := make(chan chainhash.Hash, 10)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRecvTx:      func(tx *btcutil.Tx, _ *btcjson.BlockDetails) { recv <- *tx.Hash() },
		OnRedeemingTx: func(tx *btcutil.Tx, _ *btcjson.BlockDetails) { redeem <- *tx.Hash() },
	})
	wallet, key := newAddress(t, node)
	if err := c.NotifyReceived([]address.Address{wallet}); err != nil {
		t.Fatal(err)
	}
	other, _ := newAddress(t, node)
	wait := func(ch chan chainhash.Hash, want chainhash.Hash, what string) {
		t.Helper()
		deadline := time.After(30 * time.Second) // a hang guard
		for {
			select {
			case h := <-ch:
				if h == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %s for %v", what, want)
			}
		}
	}
	mine := func(tx *wire.MsgTx) {
		t.Helper()
		if _, err := node.mine(nil, []*btcutil.Tx{btcutil.NewTx(tx)}, node.minerTo); err != nil {
			t.Fatal(err)
		}
	}

	// Paid twice in one transaction: the address and two outpoints.
	pay1 := payTwice(t, node, 1, wallet)
	mine(pay1)
	wait(recv, pay1.TxHash(), "recvtx of the first payment")
	// Both outputs spent in one block transaction.
	consolidate := spendBoth(t, pay1, key, other)
	mine(consolidate)
	wait(redeem, consolidate.TxHash(), "redeemingtx of the consolidation")

	var held int
	ts.srv.mu.Lock()
	for wc := range ts.srv.ws {
		wc.mu.Lock()
		held = len(wc.watch.received) + len(wc.watch.spent)
		wc.mu.Unlock()
	}
	ts.srv.mu.Unlock()
	if held != 1 {
		t.Errorf("after a block spent both watched outputs the client holds %d subscriptions, want 1 (its address)", held)
	}

	// Paid twice again: as many subscriptions as after the first payment.
	pay2 := payTwice(t, node, 2, wallet)
	mine(pay2)
	deadline := time.Now().Add(30 * time.Second) // a hang guard
	for {
		select {
		case h := <-recv:
			if h != pay2.TxHash() {
				t.Fatalf("recvtx for %v, want %v", h, pay2.TxHash())
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if c.Disconnected() {
			t.Fatal("the client is disconnected for passing its subscription limit of 3 at a second payment of two " +
				"outputs, though the block before spent the two outputs of the first")
		}
		if time.Now().After(deadline) {
			t.Fatal("no recvtx for the second payment")
		}
	}
}

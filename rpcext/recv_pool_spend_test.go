package rpcext

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
)

// clientEvent is one notification as rpcclient hands it over, in order.
type clientEvent struct {
	method  string
	hash    chainhash.Hash
	details *btcjson.BlockDetails
}

// TestNotifyReceivedBlockPaymentTellsPoolSpend: btcd, when a block pays
// a notifyreceived address, starts watching the paying output with
// addSpentRequests (rpcwebsocket.go, notifyForTxOuts), which looks the
// output up in the mempool and sends redeemingtx at once for a pool
// transaction already spending it. Here the payment P and its spend C were
// in the pool before the client registered (as for a wallet that
// reconnects); when a block confirms P alone, btcd tells the client
// recvtx(P) and redeemingtx(C) before that block's blockconnected, so that
// the client does not take P's output for unspent until C confirms.
func TestNotifyReceivedBlockPaymentTellsPoolSpend(t *testing.T) {
	node := matureNode(t)
	ts := startServer(t, node, nil)
	wallet, key := newAddress(t, node)
	other, _ := newAddress(t, node)

	// P pays the wallet, C spends P's output; both in btcd's pool before
	// the client registers.
	p := spendCoinbase(t, node, 1, wallet)
	c := spend(t, wire.OutPoint{Hash: p.TxHash(), Index: 0}, p.TxOut[0].PkScript, p.TxOut[0].Value, key, other)
	for _, tx := range []*wire.MsgTx{p, c} {
		if _, err := node.ProcessTx(btcutil.NewTx(tx)); err != nil {
			t.Fatal(err)
		}
	}

	events := make(chan clientEvent, 100)
	client := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRecvTx: func(tx *btcutil.Tx, d *btcjson.BlockDetails) {
			events <- clientEvent{"recvtx", *tx.Hash(), d}
		},
		OnRedeemingTx: func(tx *btcutil.Tx, d *btcjson.BlockDetails) {
			events <- clientEvent{"redeemingtx", *tx.Hash(), d}
		},
		OnBlockConnected: func(h *chainhash.Hash, _ int32, _ time.Time) {
			events <- clientEvent{method: "blockconnected", hash: *h}
		},
	})
	if err := client.NotifyBlocks(); err != nil {
		t.Fatal(err)
	}
	if err := client.NotifyReceived([]address.Address{wallet}); err != nil {
		t.Fatal(err)
	}

	// A block confirms P alone; C stays in the pool.
	block, err := node.mine(nil, []*btcutil.Tx{btcutil.NewTx(p)}, node.minerTo)
	if err != nil {
		t.Fatal(err)
	}
	if node.pool.CheckSpend(wire.OutPoint{Hash: p.TxHash(), Index: 0}) == nil {
		t.Fatal("test setup: C left the pool")
	}

	var got []clientEvent
	for {
		select {
		case ev := <-events:
			got = append(got, ev)
			if ev.method != "blockconnected" {
				continue
			}
			if ev.hash != *block.Hash() {
				t.Fatalf("blockconnected %v, want %v", ev.hash, block.Hash())
			}
		case <-time.After(30 * time.Second): // a hang guard
			t.Fatalf("no blockconnected; got %+v", got)
		}
		break
	}
	sawRecv, sawRedeem := false, false
	for _, ev := range got {
		switch {
		case ev.method == "recvtx" && ev.hash == p.TxHash() && ev.details != nil:
			sawRecv = true
		case ev.method == "redeemingtx" && ev.hash == c.TxHash():
			sawRedeem = true
		}
	}
	if !sawRecv {
		t.Fatalf("no recvtx for the block's payment %v: %+v", p.TxHash(), got)
	}
	if !sawRedeem {
		t.Fatalf("block paid the notifyreceived address with an output pool transaction %v already spends: "+
			"no redeemingtx for it before blockconnected (btcd sends one); got %+v", c.TxHash(), got)
	}
}

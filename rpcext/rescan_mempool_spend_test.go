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

// TestRescanThroughTipTellsMempoolSpend: a legacy rescan through the tip
// finds a payment to the watched address (recvtx) and keeps watching its
// output. The output is already spent by a transaction in the mempool.
// btcd v0.26.2 (rpcwebsocket.go scanBlockChunks) ends such a rescan with
// ntfnMgr.RegisterSpentRequests(wsc, lookups.unspentSlice()), whose
// addSpentRequests looks each outpoint up with TxMemPool.CheckSpend and
// sends redeemingtx for a spend already in the mempool, as notifyspent does.
// A btcwallet-style client thus learns that its coin is being spent by an
// unconfirmed transaction, not only once the spend confirms.
func TestRescanThroughTipTellsMempoolSpend(t *testing.T) {
	node := matureNode(t)
	watched, key := newAddress(t, node)
	other, _ := newAddress(t, node)

	// A pays watched, confirmed; B spends A's output, in the mempool.
	a := spendCoinbase(t, node, 1, watched)
	blockA, err := node.mine(nil, []*btcutil.Tx{btcutil.NewTx(a)}, node.minerTo)
	if err != nil {
		t.Fatal(err)
	}
	b := spend(t, wire.OutPoint{Hash: a.TxHash(), Index: 0}, a.TxOut[0].PkScript, a.TxOut[0].Value, key, other)
	if _, err := node.ProcessTx(btcutil.NewTx(b)); err != nil {
		t.Fatal(err)
	}

	ts := startServer(t, node, nil)
	recv := make(chan chainhash.Hash, 10)
	redeems := make(chan chainhash.Hash, 10)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRecvTx:      func(tx *btcutil.Tx, _ *btcjson.BlockDetails) { recv <- *tx.Hash() },
		OnRedeemingTx: func(tx *btcutil.Tx, _ *btcjson.BlockDetails) { redeems <- *tx.Hash() },
	})
	if err := c.Rescan(blockA.Hash(), []address.Address{watched}, nil); err != nil {
		t.Fatal(err)
	}
	// A later request's answer comes after every notification queued
	// before it, and rpcclient runs notification handlers in the order
	// they arrive: once it returns, the rescan's notifications were seen.
	if _, _, err := c.GetBestBlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-recv:
		if h != a.TxHash() {
			t.Fatalf("recvtx for %v, want %v", h, a.TxHash())
		}
	default:
		t.Fatal("the rescan sent no recvtx for the payment to the watched address")
	}
	// The keys of a rescan through the tip may be registered after its
	// answer (in the notifications' order): the wait is a hang guard.
	h, ok := parityWait(redeems, 10*time.Second)
	if ok && h != b.TxHash() {
		t.Fatalf("redeemingtx for %v, want %v", h, b.TxHash())
	}
	if !ok {
		t.Fatalf("rescan through the tip found output %v:0 of the watched address, which mempool transaction %v spends, "+
			"and sent no redeemingtx for it; btcd registers the rescan's outpoints with RegisterSpentRequests, "+
			"which tells a spend already in the mempool at once", a.TxHash(), b.TxHash())
	}
}

package node

import (
	"testing"

	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestResentPeerTxNotKeptForRebroadcast: a transaction the node took from
// a P2P peer, which a wallet (or anyone) then sends again over Electrum, is
// announced again once, as bitcoind's sendrawtransaction does, but does not
// join the node's own rebroadcast set: bitcoind puts only a transaction it
// newly accepts into its unbroadcast set, btcd rebroadcasts only what its
// RPC accepted, and any Electrum client could otherwise put the whole
// mempool there, one broadcast per transaction.
func TestResentPeerTxNotKeptForRebroadcast(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 102)
	addr := n.P2PAddrs()[0].String()

	pongs := make(chan struct{}, 10)
	p1 := listeningPeer(t, addr, peer.MessageListeners{
		OnPong: func(*peer.Peer, *wire.MsgPong) { pongs <- struct{}{} },
	})
	waitFor(t, "p1 to be registered", func() bool { return n.ConnectedCount() == 1 })
	tx := spendCoinbase(t, n, 1, 20_000)
	for tries := 0; !n.TxPool().IsTransactionInPool(tx.Hash()); tries++ {
		if tries == 100 {
			t.Fatal("the node never took T from p1")
		}
		p1.QueueMessage(tx.MsgTx(), nil)
		if !pingSync(t, p1, pongs) {
			t.Fatal("p1 disconnected")
		}
	}
	for _, h := range n.rebroadcast.pending() {
		if h == *tx.Hash() {
			t.Fatal("precondition: a transaction from a peer is not the node's own")
		}
	}

	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	if got := c.call("blockchain.transaction.broadcast", txHex(tx.MsgTx())); got != tx.Hash().String() {
		t.Fatalf("re-broadcast of T answered %v", got)
	}
	for _, h := range n.rebroadcast.pending() {
		if h == *tx.Hash() {
			t.Fatalf("%v, received from P2P peer p1 and merely re-sent over Electrum, is now in the node's own "+
				"rebroadcast set (announced to all peers every <=5 min until mined); bitcoind announces an "+
				"already-pooled transaction once and adds only newly accepted ones to its unbroadcast set", tx.Hash())
		}
	}
}

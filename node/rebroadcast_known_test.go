package node

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestElectrumRebroadcastOfPoolTxIsAnnounced: a wallet broadcasts over
// Electrum a transaction the node's mempool already holds (it came from a
// P2P peer). The node answers success, as bitcoind's sendrawtransaction
// does, and as bitcoind announces it again to its peers (its
// BroadcastTransaction: "do attempt to reannounce the mempool transaction"),
// so a peer that connected after the pool took it hears of it.
func TestElectrumRebroadcastOfPoolTxIsAnnounced(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 102)
	addr := n.P2PAddrs()[0].String()

	// T reaches the mempool from peer p1.
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

	// p2 connects afterwards: it has not heard of T.
	invs := make(chan *wire.MsgInv, 100)
	listeningPeer(t, addr, peer.MessageListeners{
		OnInv: func(_ *peer.Peer, m *wire.MsgInv) { invs <- m },
	})
	waitFor(t, "p2 to be registered", func() bool { return n.ConnectedCount() == 2 })

	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	if got := c.call("blockchain.transaction.broadcast", txHex(tx.MsgTx())); got != tx.Hash().String() {
		t.Fatalf("re-broadcast of T answered %v", got)
	}
	// A new transaction broadcast afterwards: its announcement follows
	// any announcement of T the re-broadcast queued (one queue per peer).
	tx2 := spendCoinbase(t, n, 2, 20_000)
	if got := c.call("blockchain.transaction.broadcast", txHex(tx2.MsgTx())); got != tx2.Hash().String() {
		t.Fatalf("broadcast of T2 answered %v", got)
	}

	seen := map[chainhash.Hash]bool{}
	deadline := time.After(testWait) // hang guard
	for !seen[*tx2.Hash()] {
		select {
		case m := <-invs:
			for _, iv := range m.InvList {
				seen[iv.Hash] = true
			}
		case <-deadline:
			t.Fatal("p2 never got T2's announcement")
		}
	}
	if !seen[*tx.Hash()] {
		t.Fatalf("the Electrum broadcast of %v (already in the mempool) answered success but the node "+
			"never announced it to peer p2, which lacks it; bitcoind's sendrawtransaction re-announces it", tx.Hash())
	}
}

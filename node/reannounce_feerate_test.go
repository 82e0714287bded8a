package node

import (
	"bytes"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestReannounceUsesPoolCopyFeeRate: an Electrum broadcast of a segwit
// transaction the pool already holds, sent with another witness (same txid,
// other wtxid: a re-signed or differently padded copy), is announced with
// the fee rate of the pool's copy, as btcd's relay compares a peer's
// feefilter with the pool TxDesc's FeePerKB, and as bitcoind reannounces
// the mempool's copy ("Use the mempool's wtxid for reannouncement").
func TestReannounceUsesPoolCopyFeeRate(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), true))
	generate(t, n, 102)
	params := &chaincfg.RegressionNetParams

	// A pays coinbase 1 to K (P2WPKH); B spends A:0 with a witness.
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	addrK, err := address.NewAddressWitnessPubKeyHash(address.Hash160(key.PubKey().SerializeCompressed()), params)
	if err != nil {
		t.Fatal(err)
	}
	scriptK, _ := txscript.PayToAddrScript(addrK)
	a := payFromCoinbase(t, n, 1, scriptK)
	aValue := a.MsgTx().TxOut[0].Value
	scriptMining, _ := txscript.PayToAddrScript(testMiningAddr(t))
	const feeB = 20_000
	b := wire.NewMsgTx(2)
	b.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: *a.Hash(), Index: 0}, nil, nil))
	b.AddTxOut(wire.NewTxOut(aValue-feeB, scriptMining))
	fetcher := txscript.NewCannedPrevOutputFetcher(scriptK, aValue)
	wit, err := txscript.WitnessSignature(b, txscript.NewTxSigHashes(b, fetcher), 0, aValue, scriptK,
		txscript.SigHashAll, key, true)
	if err != nil {
		t.Fatal(err)
	}
	b.TxIn[0].Witness = wit
	bTx := btcutil.NewTx(b)
	if _, err := n.ProcessTx(bTx); err != nil {
		t.Fatalf("ProcessTx B: %v", err)
	}
	// Not the node's own: only the Electrum resend below may announce B.
	n.rebroadcast.remove(*a.Hash())
	n.rebroadcast.remove(*bTx.Hash())

	poolRate := int64(feeB) * 1000 / mempool.GetTxVirtualSize(bTx)
	const feeFilter = 50_000 // sat/kvB
	if poolRate < 2*feeFilter {
		t.Fatalf("precondition: B's pool fee rate %d sat/kvB", poolRate)
	}

	// B2: B with one more witness item, the same txid.
	b2 := b.Copy()
	b2.TxIn[0].Witness = append(wire.TxWitness{}, wit...)
	b2.TxIn[0].Witness = append(b2.TxIn[0].Witness, bytes.Repeat([]byte{1}, 8000))
	b2Tx := btcutil.NewTx(b2)
	if *b2Tx.Hash() != *bTx.Hash() || b2.WitnessHash() == b.WitnessHash() {
		t.Fatal("precondition: B2 has B's txid and another wtxid")
	}
	if r := int64(feeB) * 1000 / mempool.GetTxVirtualSize(b2Tx); r >= feeFilter {
		t.Fatalf("precondition: B2's own rate %d", r)
	}

	// P connects after B entered the pool and asks for transactions
	// paying at least feeFilter, which B's pool copy does.
	invs := make(chan chainhash.Hash, 100)
	pongs := make(chan struct{}, 10)
	p := listeningPeer(t, n.P2PAddrs()[0].String(), peer.MessageListeners{
		OnPong: func(*peer.Peer, *wire.MsgPong) { pongs <- struct{}{} },
		OnInv: func(_ *peer.Peer, msg *wire.MsgInv) {
			for _, iv := range msg.InvList {
				if iv.Type == wire.InvTypeTx || iv.Type == wire.InvTypeWitnessTx {
					invs <- iv.Hash
				}
			}
		},
	})
	waitFor(t, "P to be registered", func() bool { return n.ConnectedCount() == 1 })
	p.QueueMessage(wire.NewMsgFeeFilter(feeFilter), nil)
	if !pingSync(t, p, pongs) {
		t.Fatal("P disconnected")
	}

	c := dialElectrum(t, n)
	c.call("server.version", "test", "1.4")
	if got := c.call("blockchain.transaction.broadcast", txHex(b2)); got != bTx.Hash().String() {
		t.Fatalf("resend of B answered %v", got)
	}
	// C, new and well paying, is announced after B's reannouncement: the
	// node queues a peer's inventory in order.
	cTx := spendCoinbase(t, n, 2, 100_000)
	if got := c.call("blockchain.transaction.broadcast", txHex(cTx.MsgTx())); got != cTx.Hash().String() {
		t.Fatalf("broadcast of C answered %v", got)
	}
	sawB := false
	for {
		select {
		case h := <-invs:
			switch h {
			case *bTx.Hash():
				sawB = true
			case *cTx.Hash():
				if !sawB {
					t.Fatalf("P (feefilter %d sat/kvB) was told of C but not of B, whose pool copy pays %d sat/kvB: "+
						"the reannouncement took the fee rate of the client's copy (%d sat/kvB) instead of the pool's",
						feeFilter, poolRate, int64(feeB)*1000/mempool.GetTxVirtualSize(b2Tx))
				}
				return
			}
		case <-time.After(testWait):
			t.Fatal("hang guard: P was told of neither B nor C")
		}
	}
}

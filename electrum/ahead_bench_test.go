package electrum

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// BenchmarkAheadWindow is a question the mempool view asks while the chain
// has connected a block the index has yet to commit (unconfirmed: is this
// transaction of that block confirmed for the answers?), with the block's
// transactions kept for the pair of tips ("memo") and read again for each
// question ("none"). The block holds 2,000 transactions.
func BenchmarkAheadWindow(b *testing.B) {
	n := newRealNode(b, 0, nil)
	change := &n.h.Pool.Spendable[1]
	coin := n.coin()
	const txs = 2000
	each := (coin.Value - 1_000_000) / txs
	var outs []*wire.TxOut
	for range txs {
		outs = append(outs, wire.NewTxOut(each, change.PkScript))
	}
	fan := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	n.mine(nil, fan)
	var spends []*wire.MsgTx
	for i := range txs {
		spends = append(spends, testchain.SpendTx([]testchain.Coin{changeCoin(fan, uint32(i), change)},
			wire.NewTxOut(each-1_000, change.PkScript)))
	}
	n.hold()
	n.process(nil, time.Second)
	<-n.held
	n.process(nil, time.Second, spends...) // the chain is a block ahead of the index
	txid := spends[txs/2].TxHash()
	for _, c := range []struct {
		name   string
		forget bool
	}{{"memo", false}, {"none", true}} {
		b.Run(c.name, func(b *testing.B) {
			be := n.backend
			for b.Loop() {
				if c.forget {
					be.aheadMu.Lock()
					be.aheadCache = nil
					be.aheadMu.Unlock()
				}
				if !be.unconfirmed(&txid) {
					b.Fatal("a transaction of the block ahead counts as confirmed")
				}
			}
		})
	}
}

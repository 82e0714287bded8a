package testchain

import (
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// reopenedNonceBase starts the coinbase extra nonces of a harness opened on
// an existing directory, away from those the creating harness used.
const reopenedNonceBase = 1 << 40

// rescan rebuilds the wallet and the block records of the main chain from
// the blocks on disk, for a harness opened on an existing directory.
func (h *Harness) rescan() error {
	h.nonce = reopenedNonceBase
	best := h.Chain.BestSnapshot()
	for height := int32(1); height <= best.Height; height++ {
		block, err := h.Chain.BlockByHeight(height)
		if err != nil {
			return err
		}
		rec := &blockRecord{hash: *block.Hash(), parent: block.MsgBlock().Header.PrevBlock, height: height}
		fresh := make(map[wire.OutPoint]Coin)
		var order []wire.OutPoint
		for _, tx := range block.Transactions() {
			msg := tx.MsgTx()
			coinbase := blockchain.IsCoinBaseTx(msg)
			if !coinbase {
				for _, in := range msg.TxIn {
					op := in.PreviousOutPoint
					if _, ok := fresh[op]; ok {
						delete(fresh, op)
					} else if h.wallet.has(op) {
						c := h.wallet.remove(op)
						rec.spent = append(rec.spent, c)
					}
				}
			}
			for i, out := range msg.TxOut {
				if s := h.byScript[string(out.PkScript)]; s != nil {
					op := wire.OutPoint{Hash: *tx.Hash(), Index: uint32(i)}
					fresh[op] = Coin{OutPoint: op, Value: out.Value, Height: height, Coinbase: coinbase, Script: s}
					order = append(order, op)
				}
			}
		}
		for _, op := range order {
			if c, ok := fresh[op]; ok {
				rec.created = append(rec.created, c)
				h.wallet.add(c)
			}
		}
		h.records[rec.hash] = rec
		h.walletTip = rec.hash
	}
	return nil
}

package testchain

import (
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// NewTxPool returns btcd's transaction pool on chain with the policy tests
// use: non-standard scripts accepted (the harness's coins are
// anyone-can-spend), fees estimated by fees when it is not nil.
func NewTxPool(chain *blockchain.BlockChain, params *chaincfg.Params, fees *mempool.FeeEstimator) *mempool.TxPool {
	return mempool.New(&mempool.Config{
		Policy: mempool.Policy{
			MaxTxVersion:      2,
			AcceptNonStd:      true,
			FreeTxRelayLimit:  15,
			MaxOrphanTxs:      100,
			MaxOrphanTxSize:   100000,
			MaxSigOpCostPerTx: blockchain.MaxBlockSigOpsCost / 4,
			MinRelayTxFee:     mempool.DefaultMinRelayTxFee,
		},
		ChainParams:    params,
		FetchUtxoView:  chain.FetchUtxoView,
		BestHeight:     func() int32 { return chain.BestSnapshot().Height },
		MedianTimePast: func() time.Time { return chain.BestSnapshot().MedianTime },
		CalcSequenceLock: func(tx *btcutil.Tx, view *blockchain.UtxoViewpoint) (*blockchain.SequenceLock, error) {
			return chain.CalcSequenceLock(tx, view, true)
		},
		IsDeploymentActive: chain.IsDeploymentActive,
		SigCache:           txscript.NewSigCache(1000),
		HashCache:          txscript.NewHashCache(1000),
		FeeEstimator:       fees,
	})
}

// RemoveMined removes a connected block's transactions, and what they
// double-spend, from pool, and admits the orphans they were waiting for, as
// btcd's block manager does when the chain connects a block.
func RemoveMined(pool *mempool.TxPool, block *btcutil.Block) {
	for _, tx := range block.Transactions()[1:] {
		pool.RemoveTransaction(tx, false)
		pool.RemoveDoubleSpends(tx)
		pool.RemoveOrphan(tx)
		pool.ProcessOrphans(tx)
	}
}

// SpendTx builds a version-2 transaction spending coins the harness knows
// how to spend (its wallet's, or outputs paying its scripts) into outs.
func SpendTx(ins []Coin, outs ...*wire.TxOut) *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	for _, c := range ins {
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: c.OutPoint, SignatureScript: c.Script.SigScript,
			Witness: c.Script.Witness, Sequence: wire.MaxTxInSequenceNum})
	}
	for _, o := range outs {
		tx.AddTxOut(o)
	}
	return tx
}

// OrderTxs returns txs with every parent before its children, as a block
// must hold them.
func OrderTxs(txs []*wire.MsgTx) []*wire.MsgTx {
	in := make(map[chainhash.Hash]bool, len(txs))
	for _, tx := range txs {
		in[tx.TxHash()] = true
	}
	out := make([]*wire.MsgTx, 0, len(txs))
	done := make(map[chainhash.Hash]bool, len(txs))
	for len(out) < len(txs) {
		before := len(out)
		for _, tx := range txs {
			h := tx.TxHash()
			if done[h] {
				continue
			}
			ready := true
			for _, ti := range tx.TxIn {
				if in[ti.PreviousOutPoint.Hash] && !done[ti.PreviousOutPoint.Hash] {
					ready = false
					break
				}
			}
			if ready {
				done[h] = true
				out = append(out, tx)
			}
		}
		if len(out) == before {
			panic("testchain: transactions listed twice or spending each other in a cycle")
		}
	}
	return out
}

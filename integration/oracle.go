package integration

import (
	"bytes"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
)

// ChainHistory computes a script's confirmed history from a node's blocks
// alone (getblockhash and getblock over RPC, no index): every main-chain
// transaction that pays pkScript or spends an output that paid it, in block
// order, each once, with its height. It is the reference the Electrum
// index's get_history is compared with; it reads every block, so keep
// chains short. Each RPC answer is awaited within SyncTimeout.
func ChainHistory(c *rpcclient.Client, pkScript []byte) ([]HistoryItem, error) {
	tip, err := rpcWithin("getblockcount", c.GetBlockCount)
	if err != nil {
		return nil, err
	}
	funded := map[wire.OutPoint]bool{}
	var history []HistoryItem
	for height := int32(0); int64(height) <= tip; height++ {
		hash, err := rpcWithin("getblockhash", func() (*chainhash.Hash, error) { return c.GetBlockHash(int64(height)) })
		if err != nil {
			return nil, err
		}
		block, err := rpcWithin("getblock", func() (*wire.MsgBlock, error) { return c.GetBlock(hash) })
		if err != nil {
			return nil, err
		}
		for _, tx := range block.Transactions {
			txid := tx.TxHash()
			touches := false
			for _, in := range tx.TxIn {
				if funded[in.PreviousOutPoint] {
					touches = true
				}
			}
			for i, out := range tx.TxOut {
				if bytes.Equal(out.PkScript, pkScript) {
					funded[wire.OutPoint{Hash: txid, Index: uint32(i)}] = true
					touches = true
				}
			}
			if touches {
				history = append(history, HistoryItem{TxHash: txid.String(), Height: height})
			}
		}
	}
	return history, nil
}

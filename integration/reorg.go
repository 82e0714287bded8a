package integration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Reorg replaces the last depth blocks with a heavier branch of depth+1
// blocks built by the harness and submitted with submitblock, so the node
// reorganizes as it would to a branch from a peer. Every transaction of a
// replaced block except its coinbase is confirmed again at the same height
// in the new branch, unless it spends a replaced coinbase (then it is
// left out, with its descendants). The new blocks pay MiningScript. Reorg
// returns the new branch's hashes once the Electrum server reports its tip.
func (n *Node) Reorg(depth int) ([]*chainhash.Hash, error) {
	return reorgWithin("reorg", func() ([]*chainhash.Hash, error) { return n.reorg(depth, nil) })
}

// ReorgDropping is Reorg from the lowest block holding one of txids: the
// new branch leaves those transactions (and their descendants) out, so
// they go back to the node's mempool, unconfirmed, and a later block may
// confirm them again. Every txid must be confirmed.
func (n *Node) ReorgDropping(txids ...*chainhash.Hash) ([]*chainhash.Hash, error) {
	return reorgWithin("reorg dropping", func() ([]*chainhash.Hash, error) { return n.reorgDropping(txids) })
}

// reorgWithin bounds a reorganization: its RPC round trips, then the
// Electrum server's catching up (SyncTimeout each).
func reorgWithin(what string, f func() ([]*chainhash.Hash, error)) ([]*chainhash.Hash, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*SyncTimeout)
	defer cancel()
	return answerWithin(ctx, what, f)
}

func (n *Node) reorgDropping(txids []*chainhash.Hash) ([]*chainhash.Hash, error) {
	if len(txids) == 0 {
		return nil, errors.New("reorg dropping: no transactions given")
	}
	_, tip, err := n.RPC.GetBestBlock()
	if err != nil {
		return nil, err
	}
	lowest := tip + 1
	drop := make(map[chainhash.Hash]bool, len(txids))
	for _, txid := range txids {
		res, err := n.RPC.GetRawTransactionVerbose(txid)
		if err != nil {
			return nil, fmt.Errorf("getrawtransaction %v: %w", txid, err)
		}
		if res.BlockHash == "" {
			return nil, fmt.Errorf("reorg dropping %v: it is not confirmed", txid)
		}
		bh, err := chainhash.NewHashFromStr(res.BlockHash)
		if err != nil {
			return nil, err
		}
		hdr, err := n.RPC.GetBlockHeaderVerbose(bh)
		if err != nil {
			return nil, fmt.Errorf("getblockheader %v: %w", bh, err)
		}
		lowest = min(lowest, hdr.Height)
		drop[*txid] = true
	}
	return n.reorg(int(tip-lowest+1), drop)
}

// reorg builds and submits the branch replacing the last depth blocks,
// leaving out the transactions of drop.
func (n *Node) reorg(depth int, drop map[chainhash.Hash]bool) ([]*chainhash.Hash, error) {
	_, tip, err := n.RPC.GetBestBlock()
	if err != nil {
		return nil, err
	}
	if depth <= 0 || int32(depth) > tip {
		return nil, fmt.Errorf("reorg depth %d: must be between 1 and the tip height %d", depth, tip)
	}
	fork := tip - int32(depth)
	forkHash, err := n.RPC.GetBlockHash(int64(fork))
	if err != nil {
		return nil, err
	}

	// The replaced blocks' transactions, each kept at its height unless it
	// or an ancestor is left out.
	gone := make(map[chainhash.Hash]bool)
	for txid := range drop {
		gone[txid] = true
	}
	carried := make([][]*btcutil.Tx, depth)
	for i := range carried {
		hash, err := n.RPC.GetBlockHash(int64(fork) + 1 + int64(i))
		if err != nil {
			return nil, err
		}
		block, err := n.RPC.GetBlock(hash)
		if err != nil {
			return nil, fmt.Errorf("getblock %v: %w", hash, err)
		}
		for j, tx := range block.Transactions {
			txid := tx.TxHash()
			if j == 0 || gone[txid] || spendsAny(tx, gone) {
				gone[txid] = true
				continue
			}
			carried[i] = append(carried[i], btcutil.NewTx(tx))
		}
	}

	// Timestamps above the fork's median time past and its recent blocks.
	last, err := n.latestTime(fork)
	if err != nil {
		return nil, err
	}
	ts := time.Now().Truncate(time.Second)
	if !ts.After(last) {
		ts = last.Add(time.Second)
	}

	prev := *forkHash
	hashes := make([]*chainhash.Hash, 0, depth+1)
	for i := 0; i <= depth; i++ {
		var txs []*btcutil.Tx
		if i < depth {
			txs = carried[i]
		}
		block, err := n.buildBlock(prev, fork+1+int32(i), ts.Add(time.Duration(i)*time.Second), txs)
		if err != nil {
			return nil, err
		}
		if err := n.RPC.SubmitBlock(block, nil); err != nil {
			return nil, fmt.Errorf("submitblock at height %d: %w", fork+1+int32(i), err)
		}
		prev = *block.Hash()
		hashes = append(hashes, block.Hash())
	}
	best, _, err := n.RPC.GetBestBlock()
	if err != nil {
		return nil, err
	}
	if *best != prev {
		return nil, fmt.Errorf("the node did not reorganize to the new branch: tip %v, branch tip %v", best, prev)
	}
	return hashes, n.waitSynced()
}

// spendsAny reports whether tx spends an output of a transaction in set.
func spendsAny(tx *wire.MsgTx, set map[chainhash.Hash]bool) bool {
	for _, in := range tx.TxIn {
		if set[in.PreviousOutPoint.Hash] {
			return true
		}
	}
	return false
}

// latestTime returns the latest timestamp of the block at height and the
// ten before it (the window of the median time past).
func (n *Node) latestTime(height int32) (time.Time, error) {
	var last time.Time
	for h := height; h >= 0 && h > height-11; h-- {
		hash, err := n.RPC.GetBlockHash(int64(h))
		if err != nil {
			return last, err
		}
		hdr, err := n.RPC.GetBlockHeader(hash)
		if err != nil {
			return last, err
		}
		if hdr.Timestamp.After(last) {
			last = hdr.Timestamp
		}
	}
	return last, nil
}

// buildBlock assembles and solves a block at height on prev holding txs
// after a coinbase that pays the subsidy to MiningScript.
func (n *Node) buildBlock(prev chainhash.Hash, height int32, ts time.Time, txs []*btcutil.Tx) (*btcutil.Block, error) {
	extraNonce, err := wire.RandomUint64()
	if err != nil {
		return nil, err
	}
	sigScript, err := txscript.NewScriptBuilder().AddInt64(int64(height)).
		AddInt64(int64(extraNonce >> 1)).Script()
	if err != nil {
		return nil, err
	}
	cb := wire.NewMsgTx(1)
	cb.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{}, wire.MaxPrevOutIndex), sigScript, nil))
	cb.AddTxOut(wire.NewTxOut(blockchain.CalcBlockSubsidy(height, n.params), MiningScript()))
	coinbase := btcutil.NewTx(cb)
	all := append([]*btcutil.Tx{coinbase}, txs...)
	for _, tx := range txs {
		if tx.HasWitness() {
			mining.AddWitnessCommitment(coinbase, all)
			all[0] = btcutil.NewTx(cb) // the coinbase changed: no cached hash
			break
		}
	}
	msg := &wire.MsgBlock{Header: wire.BlockHeader{
		Version:    0x20000000,
		PrevBlock:  prev,
		MerkleRoot: blockchain.CalcMerkleRoot(all, false),
		Timestamp:  ts,
		Bits:       n.params.PowLimitBits,
	}}
	for _, tx := range all {
		msg.Transactions = append(msg.Transactions, tx.MsgTx())
	}
	target := blockchain.CompactToBig(msg.Header.Bits)
	for {
		h := msg.Header.BlockHash()
		if blockchain.HashToBig(&h).Cmp(target) <= 0 {
			break
		}
		if msg.Header.Nonce == ^uint32(0) {
			return nil, errors.New("no nonce solves the block")
		}
		msg.Header.Nonce++
	}
	return btcutil.NewBlock(msg), nil
}

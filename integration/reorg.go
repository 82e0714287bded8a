package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// left out, with its descendants). The new blocks keep the times of the
// blocks they replace (each raised above the median time past before it if
// need be), so time locks the old branch satisfied stay satisfied; they
// pay MiningScript. Reorg returns the new branch's hashes once the
// Electrum server reports its tip.
func (n *Node) Reorg(depth int) ([]*chainhash.Hash, error) {
	return reorgWithin("reorg", func() ([]*chainhash.Hash, error) { return n.reorg(depth, nil) })
}

// ReorgDropping is Reorg from the lowest block holding one of txids: the
// new branch leaves those transactions (and their descendants) out, so
// they go back to the node's mempool, unconfirmed, and a later block may
// confirm them again. Every txid must be confirmed on the node's main
// chain; ReorgDropping finds their blocks by reading the blocks from the
// tip down (getblock), so the node needs neither the Electrum index nor
// --txindex.
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
	pool, err := n.RPC.GetRawMempool()
	if err != nil {
		return nil, fmt.Errorf("getrawmempool: %w", err)
	}
	unconfirmed := make(map[chainhash.Hash]bool, len(pool))
	for _, txid := range pool {
		unconfirmed[*txid] = true
	}
	drop := make(map[chainhash.Hash]bool, len(txids))
	missing := make(map[chainhash.Hash]bool, len(txids))
	for _, txid := range txids {
		if unconfirmed[*txid] {
			return nil, fmt.Errorf("reorg dropping %v: it is not confirmed", txid)
		}
		drop[*txid] = true
		missing[*txid] = true
	}
	// The blocks are read from the tip down with getblock, which needs no
	// index (getrawtransaction finds a confirmed transaction only with
	// the Electrum index or --txindex), until every txid is found.
	_, tip, err := n.RPC.GetBestBlock()
	if err != nil {
		return nil, err
	}
	lowest := tip
	for ; len(missing) > 0; lowest-- {
		if lowest < 0 {
			for txid := range missing {
				return nil, fmt.Errorf("reorg dropping %v: no block of the main chain holds it", txid)
			}
		}
		hash, err := n.RPC.GetBlockHash(int64(lowest))
		if err != nil {
			return nil, fmt.Errorf("getblockhash %d: %w", lowest, err)
		}
		block, err := n.RPC.GetBlock(hash)
		if err != nil {
			return nil, fmt.Errorf("getblock %v: %w", hash, err)
		}
		for _, tx := range block.Transactions {
			delete(missing, tx.TxHash())
		}
	}
	return n.reorg(int(tip-lowest), drop)
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
	// or an ancestor is left out, and their times.
	gone := make(map[chainhash.Hash]bool)
	for txid := range drop {
		gone[txid] = true
	}
	carried := make([][]*btcutil.Tx, depth)
	times := make([]time.Time, depth)
	for i := range carried {
		hash, err := n.RPC.GetBlockHash(int64(fork) + 1 + int64(i))
		if err != nil {
			return nil, err
		}
		block, err := n.RPC.GetBlock(hash)
		if err != nil {
			return nil, fmt.Errorf("getblock %v: %w", hash, err)
		}
		times[i] = block.Header.Timestamp
		for j, tx := range block.Transactions {
			txid := tx.TxHash()
			if j == 0 || gone[txid] || spendsAny(tx, gone) {
				gone[txid] = true
				continue
			}
			carried[i] = append(carried[i], btcutil.NewTx(tx))
		}
	}

	// Each new block keeps the time of the block it replaces, so the
	// median times past that time locks (BIP 68 relative, and absolute
	// ones) are measured against stay those of the old branch; a time not
	// above the median time past before it is raised to one second more.
	// The extra block is timed now, or just after that median.
	window, err := n.timesUpTo(fork)
	if err != nil {
		return nil, err
	}
	prev := *forkHash
	hashes := make([]*chainhash.Hash, 0, depth+1)
	for i := 0; i <= depth; i++ {
		height := fork + 1 + int32(i)
		ts := time.Now().Truncate(time.Second)
		var txs []*btcutil.Tx
		if i < depth {
			ts, txs = times[i], carried[i]
		}
		if mtp := medianTime(window); !ts.After(mtp) {
			ts = mtp.Add(time.Second)
		}
		window = append(window, ts)
		if len(window) > medianTimeBlocks {
			window = window[1:]
		}
		block, err := n.buildBlock(prev, height, ts, txs)
		if err != nil {
			return nil, err
		}
		if err := n.RPC.SubmitBlock(block, nil); err != nil {
			if i < depth {
				return nil, fmt.Errorf("submitblock of the new block %v at height %d: %w", block.Hash(), height, err)
			}
			// The node validates a side branch's transactions only when
			// the branch becomes heavier, and does not say which block
			// failed.
			return nil, fmt.Errorf("submitblock of the new block %v at height %d, which made the new branch heavier: "+
				"the node refused to reorganize to it, for a block of the branch from height %d to %d: %w",
				block.Hash(), height, fork+1, height, err)
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

// medianTimeBlocks is how many blocks' times the median time past is
// taken over.
const medianTimeBlocks = 11

// timesUpTo returns the times of the block at height and the ones before
// it in the median time past's window, oldest first.
func (n *Node) timesUpTo(height int32) ([]time.Time, error) {
	var times []time.Time
	for h := max(0, height-medianTimeBlocks+1); h <= height; h++ {
		hash, err := n.RPC.GetBlockHash(int64(h))
		if err != nil {
			return nil, err
		}
		hdr, err := n.RPC.GetBlockHeader(hash)
		if err != nil {
			return nil, err
		}
		times = append(times, hdr.Timestamp)
	}
	return times, nil
}

// medianTime returns the median time past of a chain whose last blocks
// have times (as the node computes it: the middle of the sorted times).
func medianTime(times []time.Time) time.Time {
	sorted := slices.Clone(times)
	slices.SortFunc(sorted, func(a, b time.Time) int { return a.Compare(b) })
	return sorted[len(sorted)/2]
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

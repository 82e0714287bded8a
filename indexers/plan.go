package indexers

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// blockPlan is what phase 1 of the block pass computes: for every
// transaction of a block, the rows it funds and spends. Building it hashes
// every output script and every spent script; it needs the block and btcd's
// spent outputs only, never the database.
type blockPlan struct {
	hash   chainhash.Hash
	prev   chainhash.Hash
	height int32
	txs    []txPlan
}

// txPlan holds one transaction's part of a blockPlan.
type txPlan struct {
	txid   chainhash.Hash
	offset uint32
	size   uint32

	// scripts are the distinct scripts the transaction touches: first those
	// it pays (nFund of them), then those it only spends from.
	scripts []ScriptHash
	nFund   int

	// funds are the outputs that stay unspent at the end of the block.
	funds []fundRow
	// spends are the outputs of earlier blocks this transaction spends.
	spends []spendRow
}

// fundRow is an output that becomes an unspent row.
type fundRow struct {
	script ScriptHash
	vout   uint32
	value  int64
}

// spendRow is a spent output of an earlier block; its unspent row goes.
type spendRow struct {
	script ScriptHash
	height int32
	prev   wire.OutPoint
	value  int64
	// pos is the creating transaction's index in its block, which btcd's
	// spent output does not carry; it is looked up only to disconnect
	// (fillSpendPositions).
	pos uint32
}

// minParallelTxs is the block size below which phase 1 runs on the calling
// goroutine: spreading a handful of transactions costs more than it saves.
const minParallelTxs = 64

// planBlock runs phase 1 for block at its height. stxos must be btcd's spent
// outputs of the block (one per input of every non-coinbase transaction, in
// order); a mismatch is a broken invariant of the caller and panics.
func planBlock(block *btcutil.Block, stxos []blockchain.SpentTxOut, genesis bool) *blockPlan {
	txs := block.Transactions()
	height := block.Height()
	if len(txs) >= maxBlockTxs {
		// Consensus keeps blocks under 16,667 transactions.
		panic(fmt.Sprintf("electrum index: block %v at height %d has %d transactions",
			block.Hash(), height, len(txs)))
	}
	p := &blockPlan{hash: *block.Hash(), prev: block.MsgBlock().Header.PrevBlock, height: height,
		txs: make([]txPlan, len(txs))}

	// Where each transaction's spent outputs start, and which outpoints
	// are created and spent inside this block: those never become rows.
	// Every transaction's rows are slices of three block-wide arrays, so
	// a block costs three allocations instead of several per transaction.
	stxoStart := make([]int, len(txs)+1)
	outStart := make([]int, len(txs)+1)
	var sameBlock map[wire.OutPoint]struct{}
	n, outs := 0, 0
	for i, tx := range txs {
		stxoStart[i] = n
		outStart[i] = outs
		outs += len(tx.MsgTx().TxOut)
		if i == 0 {
			continue
		}
		for _, in := range tx.MsgTx().TxIn {
			if n < len(stxos) && stxos[n].Height == height {
				if sameBlock == nil {
					sameBlock = make(map[wire.OutPoint]struct{})
				}
				sameBlock[in.PreviousOutPoint] = struct{}{}
			}
			n++
		}
	}
	stxoStart[len(txs)] = n
	outStart[len(txs)] = outs
	if n != len(stxos) {
		panic(fmt.Sprintf("electrum index: block %v at height %d has %d inputs but %d spent outputs",
			p.hash, height, n, len(stxos)))
	}
	fundArr := make([]fundRow, outs)
	spendArr := make([]spendRow, n)
	scriptArr := make([]ScriptHash, outs+n)

	planTx := func(i int) {
		tx := txs[i]
		tp := &p.txs[i]
		tp.txid = *tx.Hash()
		msg := tx.MsgTx()
		o0, o1 := outStart[i], outStart[i+1]
		s0, s1 := stxoStart[i], stxoStart[i+1]
		tp.funds = fundArr[o0:o0:o1]
		tp.spends = spendArr[s0:s0:s1]
		tp.scripts = scriptArr[o0+s0 : o0+s0 : o1+s1]
		var set map[ScriptHash]struct{}
		tp.size = uint32(msg.SerializeSize())
		if genesis {
			// The genesis coinbase is not spendable and not indexed.
			return
		}
		for vout, out := range msg.TxOut {
			if txscript.IsUnspendable(out.PkScript) {
				continue
			}
			sh := ScriptHashFromScript(out.PkScript)
			tp.addScript(sh, &set)
			op := wire.OutPoint{Hash: tp.txid, Index: uint32(vout)}
			if _, spent := sameBlock[op]; spent {
				continue
			}
			tp.funds = append(tp.funds, fundRow{script: sh, vout: uint32(vout), value: out.Value})
		}
		tp.nFund = len(tp.scripts)
		if i == 0 {
			return
		}
		for j, in := range msg.TxIn {
			st := &stxos[stxoStart[i]+j]
			sh := ScriptHashFromScript(st.PkScript)
			tp.addScript(sh, &set)
			if st.Height == height {
				continue
			}
			tp.spends = append(tp.spends, spendRow{
				script: sh, height: st.Height, prev: in.PreviousOutPoint, value: st.Amount,
			})
		}
	}

	workers := runtime.GOMAXPROCS(0)
	if workers <= 1 || len(txs) < minParallelTxs {
		for i := range txs {
			planTx(i)
		}
	} else {
		var wg sync.WaitGroup
		chunk := (len(txs) + workers - 1) / workers
		for w := 0; w < workers; w++ {
			lo, hi := w*chunk, (w+1)*chunk
			if hi > len(txs) {
				hi = len(txs)
			}
			if lo >= hi {
				break
			}
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				for i := lo; i < hi; i++ {
					planTx(i)
				}
			}(lo, hi)
		}
		wg.Wait()
	}

	// Offsets of the transactions inside the serialized block.
	off := uint32(blockHeaderLen + wire.VarIntSerializeSize(uint64(len(txs))))
	for i := range p.txs {
		p.txs[i].offset = off
		off += p.txs[i].size
	}
	return p
}

// blockHeaderLen is the size of a serialized block header.
const blockHeaderLen = 80

// linearScripts is how many distinct scripts a transaction may touch before
// addScript switches from a linear scan to a set.
const linearScripts = 16

// addScript adds sh to the transaction's distinct scripts; set is created on
// demand for transactions touching many scripts.
func (tp *txPlan) addScript(sh ScriptHash, set *map[ScriptHash]struct{}) {
	if *set != nil {
		if _, ok := (*set)[sh]; ok {
			return
		}
		(*set)[sh] = struct{}{}
		tp.scripts = append(tp.scripts, sh)
		return
	}
	for i := range tp.scripts {
		if tp.scripts[i] == sh {
			return
		}
	}
	tp.scripts = append(tp.scripts, sh)
	if len(tp.scripts) > linearScripts {
		*set = make(map[ScriptHash]struct{}, 2*len(tp.scripts))
		for _, s := range tp.scripts {
			(*set)[s] = struct{}{}
		}
	}
}

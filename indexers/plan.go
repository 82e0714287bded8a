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
	// hist is the block's history entries in key order (blockHistory).
	hist []histEntry
	bufs *planBufs // the arrays txs, hist and the rows live in

	// writes and writeBytes are what applyConnect put and deleted
	// (observe.go).
	writes, writeBytes int64
}

// txPlan holds one transaction's part of a blockPlan.
type txPlan struct {
	txid   chainhash.Hash
	offset uint32
	size   uint32

	// scripts are the distinct scripts the transaction touches: first those
	// it pays, then those it only spends from.
	scripts []ScriptHash

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

// key writes the spent output's unspent-row key into k and returns k.
func (sp *spendRow) key(k []byte) []byte {
	hx := sp.script.hashX()
	utxoKey(k, &hx, sp.height, &sp.prev.Hash, sp.prev.Index)
	return k
}

// minParallelTxs is the block size below which phase 1 runs on the calling
// goroutine: spreading a handful of transactions costs more than it saves.
const minParallelTxs = 64

// planBlock runs phase 1 for block at its height. stxos must be btcd's spent
// outputs of the block (one per input of every non-coinbase transaction, in
// order); a mismatch is a broken invariant of the caller and panics.
func planBlock(block *btcutil.Block, stxos []blockchain.SpentTxOut, genesis bool) *blockPlan {
	return planBlockRaw(block, nil, stxos, genesis, nil)
}

// planBufs are the arrays of a blockPlan. Catch-up recycles them from one
// block to the next (planPool) instead of allocating them for every block.
type planBufs struct {
	txs                 []txPlan
	stxoStart, outStart []int
	funds               []fundRow
	spends              []spendRow
	scripts             []ScriptHash
	hist                []histEntry
}

// planPool holds catch-up's planBufs between blocks.
var planPool = sync.Pool{New: func() any { return new(planBufs) }}

// resize returns s with n elements, reusing its array when it is large
// enough; the elements are not cleared.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// planBlockRaw is planBlock given the block's serialization as well (nil:
// none), from which the txids are hashed in place: a block read from disk
// carries its bytes, and serializing every transaction again to hash it
// costs an allocation per transaction. The block path's blocks have their
// txids computed already by btcd. The plan's arrays come from bufs when it
// is not nil; the plan then owns bufs and must not be used once they are
// recycled.
func planBlockRaw(block *btcutil.Block, raw []byte, stxos []blockchain.SpentTxOut, genesis bool,
	bufs *planBufs) *blockPlan {
	if bufs == nil {
		bufs = new(planBufs)
	}
	txs := block.Transactions()
	height := block.Height()
	if len(txs) >= maxBlockTxs {
		// Consensus keeps blocks under 16,667 transactions.
		panic(fmt.Sprintf("electrum index: block %v at height %d has %d transactions",
			block.Hash(), height, len(txs)))
	}
	bufs.txs = resize(bufs.txs, len(txs))
	clear(bufs.txs)
	pl := &planner{
		p: &blockPlan{hash: *block.Hash(), prev: block.MsgBlock().Header.PrevBlock, height: height,
			txs: bufs.txs, bufs: bufs},
		txs: txs, raw: raw, stxos: stxos, genesis: genesis,
	}
	pl.layout()
	parallelFor(len(txs), pl.planTx)
	pl.p.hist = blockHistory(pl.p, bufs.hist[:0])
	bufs.hist = pl.p.hist
	return pl.p
}

// planner builds one blockPlan. Every transaction's rows are slices of
// block-wide arrays (bufs), so a block costs a few allocations instead of
// several per transaction.
type planner struct {
	p       *blockPlan
	txs     []*btcutil.Tx
	raw     []byte
	stxos   []blockchain.SpentTxOut
	genesis bool

	// stxoStart[i] and outStart[i] are where transaction i's spent outputs
	// and outputs start in the block-wide arrays.
	stxoStart, outStart []int
	// sameBlock holds the outpoints created and spent inside the block:
	// those never become rows.
	sameBlock map[wire.OutPoint]struct{}
}

// layout sets every transaction's offset and size in the serialized block,
// where its rows start in the block-wide arrays, and which outpoints the
// block both creates and spends.
func (pl *planner) layout() {
	p, bufs, height := pl.p, pl.p.bufs, pl.p.height
	bufs.stxoStart = resize(bufs.stxoStart, len(pl.txs)+1)
	bufs.outStart = resize(bufs.outStart, len(pl.txs)+1)
	pl.stxoStart, pl.outStart = bufs.stxoStart, bufs.outStart
	n, outs := 0, 0
	off := uint32(blockHeaderLen + wire.VarIntSerializeSize(uint64(len(pl.txs))))
	for i, tx := range pl.txs {
		pl.stxoStart[i] = n
		pl.outStart[i] = outs
		outs += len(tx.MsgTx().TxOut)
		p.txs[i].offset = off
		p.txs[i].size = uint32(tx.MsgTx().SerializeSize())
		off += p.txs[i].size
		if i == 0 {
			continue
		}
		for _, in := range tx.MsgTx().TxIn {
			if n < len(pl.stxos) && pl.stxos[n].Height == height {
				if pl.sameBlock == nil {
					pl.sameBlock = make(map[wire.OutPoint]struct{})
				}
				pl.sameBlock[in.PreviousOutPoint] = struct{}{}
			}
			n++
		}
	}
	pl.stxoStart[len(pl.txs)] = n
	pl.outStart[len(pl.txs)] = outs
	if n != len(pl.stxos) {
		panic(fmt.Sprintf("electrum index: block %v at height %d has %d inputs but %d spent outputs",
			p.hash, height, n, len(pl.stxos)))
	}
	if pl.raw != nil && int(off) != len(pl.raw) {
		panic(fmt.Sprintf("electrum index: block %v at height %d is %d bytes, its transactions end at %d",
			p.hash, height, len(pl.raw), off))
	}
	bufs.funds = resize(bufs.funds, outs)
	bufs.spends = resize(bufs.spends, n)
	bufs.scripts = resize(bufs.scripts, outs+n)
}

// bip30Overwrites are BIP 30's two exceptions (mainnet blocks 91842 and
// 91880), by hash: their coinbase repeats one still unspent at the height
// given and replaces its outputs, so it is planned as spending them too,
// holding each once as btcd's UTXO set does (undone, it gives them back).
var bip30Overwrites = map[string]int32{
	"00000000000a4d0a398161ffc163c503763b1f4360639393e0e4c8e300e0caec": 91812,
	"00000000000743f190a18c5577a3c2d2a1f610ae9601ac046a38084ccb7cd721": 91722,
}

// planTx fills in transaction i's plan; buf is scratch space of the calling
// goroutine.
func (pl *planner) planTx(i int, buf *[]byte) {
	tx, tp, bufs := pl.txs[i], &pl.p.txs[i], pl.p.bufs
	msg := tx.MsgTx()
	if pl.raw != nil {
		tp.txid = txidOf(pl.raw[tp.offset:tp.offset+tp.size], msg, buf)
	} else {
		tp.txid = *tx.Hash()
	}
	o0, o1 := pl.outStart[i], pl.outStart[i+1]
	s0, s1 := pl.stxoStart[i], pl.stxoStart[i+1]
	tp.funds = bufs.funds[o0:o0:o1]
	tp.spends = bufs.spends[s0:s0:s1]
	tp.scripts = bufs.scripts[o0+s0 : o0+s0 : o1+s1]
	if pl.genesis {
		// The genesis coinbase is not spendable and not indexed.
		return
	}
	var set map[ScriptHash]struct{}
	for vout, out := range msg.TxOut {
		if txscript.IsUnspendable(out.PkScript) {
			continue
		}
		sh := ScriptHashFromScript(out.PkScript)
		tp.addScript(sh, &set)
		op := wire.OutPoint{Hash: tp.txid, Index: uint32(vout)}
		if _, spent := pl.sameBlock[op]; spent {
			continue
		}
		tp.funds = append(tp.funds, fundRow{script: sh, vout: uint32(vout), value: out.Value})
	}
	if i == 0 {
		if from, ok := bip30Overwrites[pl.p.hash.String()]; ok {
			for _, f := range tp.funds {
				tp.spends = append(tp.spends, spendRow{script: f.script, height: from,
					prev: wire.OutPoint{Hash: tp.txid, Index: f.vout}, value: f.value})
			}
		}
		return
	}
	for j, in := range msg.TxIn {
		st := &pl.stxos[s0+j]
		sh := ScriptHashFromScript(st.PkScript)
		tp.addScript(sh, &set)
		if st.Height == pl.p.height {
			continue
		}
		tp.spends = append(tp.spends, spendRow{
			script: sh, height: st.Height, prev: in.PreviousOutPoint, value: st.Amount,
		})
	}
}

// parallelFor calls fn(i, buf) for every i below n, spread over the cores in
// contiguous ranges; buf is scratch space of one goroutine.
func parallelFor(n int, fn func(i int, buf *[]byte)) {
	workers := runtime.GOMAXPROCS(0)
	if workers <= 1 || n < minParallelTxs {
		var buf []byte
		for i := 0; i < n; i++ {
			fn(i, &buf)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := lo; i < hi; i++ {
				fn(i, &buf)
			}
		}()
	}
	wg.Wait()
}

// txidOf returns the txid of msg, whose serialization is b: the double
// SHA-256 of b itself, or for a transaction serialized with witnesses
// (marker 0x00 and flag 0x01 after the version) of b without marker, flag
// and witnesses, assembled in buf.
func txidOf(b []byte, msg *wire.MsgTx, buf *[]byte) chainhash.Hash {
	if len(b) < 6 || b[4] != 0 || b[5] != 1 {
		return chainhash.DoubleHashH(b)
	}
	n := msg.SerializeSizeStripped()
	s := append((*buf)[:0], b[:4]...)
	s = append(s, b[6:6+n-8]...)
	s = append(s, b[len(b)-4:]...)
	*buf = s
	return chainhash.DoubleHashH(s)
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

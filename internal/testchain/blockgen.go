package testchain

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// firstBlockTime is the earliest timestamp of a generated block: regtest's
// genesis block is older than the BIP 16 switch-over time, before which btcd
// does not enforce pay-to-script-hash (and so refuses witness spends).
var firstBlockTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// blockVersion is the header version of generated blocks (BIP 34/65/66 are
// active from height 1 on regtest).
const blockVersion = 4

// BlockSpec describes the random transactions of a generated block.
type BlockSpec struct {
	// Txs is the number of non-coinbase transactions; fewer are made when
	// the wallet runs out of mature coins.
	Txs int
	// MaxInputs bounds the inputs per transaction (uniform in 1..MaxInputs).
	MaxInputs int
	// MaxOutputs bounds the outputs per transaction (uniform in
	// 1..MaxOutputs).
	MaxOutputs int
	// SameBlockSpend is the probability that an input spends an output
	// created earlier in the same block.
	SameBlockSpend float64
	// SameScript is the probability that an output pays the same script as
	// the previous output of its transaction.
	SameScript float64
	// SelfPay is the probability that an output pays a script one of the
	// transaction's inputs spends (the transaction touches the script on
	// both sides).
	SelfPay float64
	// OpReturn is the probability that an output is an OP_RETURN.
	OpReturn float64
	// Unspendable is the probability that an output pays a script the
	// wallet never spends (P2PKH/P2WPKH/P2TR without keys, non-standard).
	Unspendable float64
	// MaxFee bounds the fee of each transaction (uniform in 0..MaxFee).
	MaxFee int64
}

// DefaultSpec is a small block touching every feature of the generator.
func DefaultSpec() BlockSpec {
	return BlockSpec{
		Txs:            8,
		MaxInputs:      3,
		MaxOutputs:     4,
		SameBlockSpend: 0.25,
		SameScript:     0.2,
		SelfPay:        0.15,
		OpReturn:       0.08,
		Unspendable:    0.1,
		MaxFee:         2000,
	}
}

// nextNonce returns a coinbase extra nonce never used before by this
// harness, so blocks on competing branches never share a coinbase.
func (h *Harness) nextNonce() uint64 {
	h.nonce++
	return h.nonce
}

// MineEmpty mines n blocks holding only a coinbase on the main chain tip.
func (h *Harness) MineEmpty(n int) ([]*btcutil.Block, error) {
	var blocks []*btcutil.Block
	for i := 0; i < n; i++ {
		tip, _ := h.Tip()
		b, err := h.MineOn(tip, nil, BlockSpec{})
		if err != nil {
			return blocks, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// MineMature mines enough coinbase-only blocks that the first coinbase can
// be spent in the next block.
func (h *Harness) MineMature() error {
	_, height := h.Tip()
	need := int(h.Params.CoinbaseMaturity) + 1 - int(height)
	if need <= 0 {
		return nil
	}
	_, err := h.MineEmpty(need)
	return err
}

// Mine builds a random block per spec on the main chain tip and processes it.
func (h *Harness) Mine(rng *rand.Rand, spec BlockSpec) (*btcutil.Block, error) {
	tip, _ := h.Tip()
	return h.MineOn(tip, rng, spec)
}

// MineOn builds a random block per spec on parent (any block this harness
// built, or genesis) and processes it; the block may end up on a side
// branch. A nil rng gives a coinbase-only block. Afterwards the wallet
// follows the main chain.
func (h *Harness) MineOn(parent chainhash.Hash, rng *rand.Rand, spec BlockSpec) (*btcutil.Block, error) {
	block, rec, err := h.build(parent, rng, spec)
	if err != nil {
		return nil, err
	}
	if err := h.Submit(block, rec); err != nil {
		return nil, err
	}
	return block, nil
}

// Submit processes a block built by this harness and moves the wallet to
// the new main chain tip.
func (h *Harness) Submit(block *btcutil.Block, rec *blockRecord) error {
	h.records[*block.Hash()] = rec
	_, isOrphan, err := h.Chain.ProcessBlock(block, blockchain.BFNoPoWCheck)
	if err != nil {
		delete(h.records, *block.Hash())
		// The wallet may have moved to the parent to build the block.
		if serr := h.syncWallet(); serr != nil {
			return serr
		}
		return fmt.Errorf("process block %v at height %d: %w", block.Hash(), rec.height, err)
	}
	if isOrphan {
		return fmt.Errorf("block %v at height %d is an orphan", block.Hash(), rec.height)
	}
	if err := h.syncIndex(); err != nil {
		return err
	}
	return h.syncWallet()
}

// build generates a block on parent without processing it.
func (h *Harness) build(parent chainhash.Hash, rng *rand.Rand, spec BlockSpec) (*btcutil.Block, *blockRecord, error) {
	return h.buildWith(parent, rng, spec, func(height int32, rec *blockRecord) ([]*wire.MsgTx, int64) {
		if rng == nil || spec.Txs <= 0 {
			return nil, 0
		}
		return h.randomTxs(rng, spec, height, rec)
	})
}

// txSource makes the non-coinbase transactions of a block at height from the
// wallet (at the block's parent), recording the wallet changes in rec; it
// returns them and their total fee.
type txSource func(height int32, rec *blockRecord) ([]*wire.MsgTx, int64)

// buildWith generates a block on parent holding the transactions txs makes.
func (h *Harness) buildWith(parent chainhash.Hash, rng *rand.Rand, spec BlockSpec, txs txSource) (*btcutil.Block, *blockRecord, error) {
	prec, ok := h.records[parent]
	if !ok {
		return nil, nil, fmt.Errorf("testchain: parent %v was not built by this harness", parent)
	}
	if err := h.moveWallet(parent); err != nil {
		return nil, nil, err
	}
	parentHeader, err := h.Chain.HeaderByHash(&parent)
	if err != nil {
		return nil, nil, err
	}
	height := prec.height + 1
	rec := &blockRecord{parent: parent, height: height}

	body, fees := txs(height, rec)
	coinbase := h.coinbase(rng, spec, height, fees)
	block, err := h.assemble(&parentHeader, coinbase, body)
	if err != nil {
		return nil, nil, err
	}
	block.SetHeight(height)
	rec.hash = *block.Hash()

	// Coinbase outputs the wallet can spend.
	cbHash := coinbase.TxHash()
	for i, out := range coinbase.TxOut {
		if s := h.byScript[string(out.PkScript)]; s != nil {
			rec.created = append(rec.created, Coin{
				OutPoint: wire.OutPoint{Hash: cbHash, Index: uint32(i)},
				Value:    out.Value, Height: height, Coinbase: true, Script: s,
			})
		}
	}
	return block, rec, nil
}

// coinbase returns the coinbase of a block at height collecting fees.
func (h *Harness) coinbase(rng *rand.Rand, spec BlockSpec, height int32, fees int64) *wire.MsgTx {
	sigScript := mustScript(txscript.NewScriptBuilder().AddInt64(int64(height)).
		AddInt64(int64(h.nextNonce())))
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{
		PreviousOutPoint: *wire.NewOutPoint(&chainhash.Hash{}, wire.MaxPrevOutIndex),
		SignatureScript:  sigScript,
		Sequence:         wire.MaxTxInSequenceNum,
	})
	value := blockchain.CalcBlockSubsidy(height, h.Params) + fees
	pool := h.Pool.Spendable
	if rng == nil {
		tx.AddTxOut(&wire.TxOut{Value: value, PkScript: pool[int(height)%len(pool)].PkScript})
		return tx
	}
	n := 1 + rng.Intn(2)
	for i := 0; i < n; i++ {
		v := value / int64(n-i)
		value -= v
		tx.AddTxOut(&wire.TxOut{Value: v, PkScript: pool[rng.Intn(len(pool))].PkScript})
	}
	if rng.Float64() < spec.OpReturn {
		tx.AddTxOut(&wire.TxOut{PkScript: opReturnScript([]byte("coinbase"))})
	}
	return tx
}

// assemble builds and solves a block from a coinbase and transactions.
func (h *Harness) assemble(parent *wire.BlockHeader, coinbase *wire.MsgTx, txs []*wire.MsgTx) (*btcutil.Block, error) {
	utxs := make([]*btcutil.Tx, 0, len(txs)+1)
	cb := btcutil.NewTx(coinbase)
	utxs = append(utxs, cb)
	witness := false
	for _, tx := range txs {
		utxs = append(utxs, btcutil.NewTx(tx))
		witness = witness || tx.HasWitness()
	}
	if witness {
		mining.AddWitnessCommitment(cb, utxs)
	}
	msg := &wire.MsgBlock{
		Header: wire.BlockHeader{
			Version:    blockVersion,
			PrevBlock:  parent.BlockHash(),
			MerkleRoot: blockchain.CalcMerkleRoot(utxs, false),
			Timestamp:  blockTime(parent.Timestamp),
			Bits:       h.Params.PowLimitBits,
		},
		Transactions: make([]*wire.MsgTx, 0, len(utxs)),
	}
	for _, tx := range utxs {
		msg.Transactions = append(msg.Transactions, tx.MsgTx())
	}
	// Regtest's target accepts about every other hash; solving keeps the
	// blocks valid for peers that do check proof of work.
	target := blockchain.CompactToBig(msg.Header.Bits)
	for {
		hash := msg.Header.BlockHash()
		if blockchain.HashToBig(&hash).Cmp(target) <= 0 {
			break
		}
		msg.Header.Nonce++
		if msg.Header.Nonce == 0 {
			return nil, fmt.Errorf("testchain: no nonce solves the block")
		}
	}
	return btcutil.NewBlock(msg), nil
}

// randomTxs builds spec.Txs random transactions spending the wallet (which
// is at the parent of the block at height), recording the wallet changes in
// rec. It returns the transactions and their total fee.
func (h *Harness) randomTxs(rng *rand.Rand, spec BlockSpec, height int32, rec *blockRecord) ([]*wire.MsgTx, int64) {
	maturity := int32(h.Params.CoinbaseMaturity)
	confirmed := make([]Coin, 0, len(h.wallet.coins))
	for _, c := range h.wallet.coins {
		if !c.Coinbase || height-c.Height >= maturity {
			confirmed = append(confirmed, c)
		}
	}
	var fresh []Coin // created in this block, unspent so far
	take := func(list *[]Coin) Coin {
		l := *list
		i := rng.Intn(len(l))
		c := l[i]
		l[i] = l[len(l)-1]
		*list = l[:len(l)-1]
		return c
	}

	maxIn := max(spec.MaxInputs, 1)
	var txs []*wire.MsgTx
	var fees int64
	for len(txs) < spec.Txs {
		nIn := 1 + rng.Intn(maxIn)
		var ins []Coin
		for len(ins) < nIn {
			switch {
			case len(fresh) > 0 && (len(confirmed) == 0 || rng.Float64() < spec.SameBlockSpend):
				ins = append(ins, take(&fresh))
			case len(confirmed) > 0:
				c := take(&confirmed)
				rec.spent = append(rec.spent, c)
				ins = append(ins, c)
			default:
				nIn = len(ins)
			}
		}
		if len(ins) == 0 {
			break
		}
		tx, fee, created := h.randomTx(rng, spec, ins, height)
		txs = append(txs, tx)
		fees += fee
		fresh = append(fresh, created...)
	}
	rec.created = append(rec.created, fresh...)
	return txs, fees
}

// randomTx builds one transaction spending ins; it returns the transaction,
// its fee and the spendable coins it creates.
func (h *Harness) randomTx(rng *rand.Rand, spec BlockSpec, ins []Coin, height int32) (*wire.MsgTx, int64, []Coin) {
	tx := wire.NewMsgTx(2)
	var total int64
	for _, c := range ins {
		tx.AddTxIn(&wire.TxIn{
			PreviousOutPoint: c.OutPoint,
			SignatureScript:  c.Script.SigScript,
			Witness:          c.Script.Witness,
			Sequence:         wire.MaxTxInSequenceNum,
		})
		total += c.Value
	}
	fee := int64(0)
	if spec.MaxFee > 0 {
		fee = min(rng.Int63n(spec.MaxFee+1), total)
	}
	total -= fee

	nOut := 1 + rng.Intn(max(spec.MaxOutputs, 1))
	outs := make([]*Script, 0, nOut)
	pool := h.Pool
	for i := 0; i < nOut; i++ {
		var s *Script
		switch r := rng.Float64(); {
		case i > 0 && r < spec.SameScript:
			s = outs[i-1]
		case r < spec.SameScript+spec.SelfPay:
			s = ins[rng.Intn(len(ins))].Script
		case r < spec.SameScript+spec.SelfPay+spec.OpReturn:
			s = nil
		case r < spec.SameScript+spec.SelfPay+spec.OpReturn+spec.Unspendable && len(pool.Unspendable) > 0:
			s = &pool.Unspendable[rng.Intn(len(pool.Unspendable))]
		default:
			s = &pool.Spendable[rng.Intn(len(pool.Spendable))]
		}
		outs = append(outs, s)
	}

	// Split the value over the outputs that carry value.
	var valued int
	for _, s := range outs {
		if s != nil {
			valued++
		}
	}
	remaining := total
	for _, s := range outs {
		if s == nil {
			data := make([]byte, 1+rng.Intn(40))
			rng.Read(data)
			tx.AddTxOut(&wire.TxOut{PkScript: opReturnScript(data)})
			continue
		}
		v := remaining
		if valued > 1 {
			v = remaining / int64(valued) * int64(50+rng.Intn(100)) / 100
		}
		valued--
		remaining -= v
		tx.AddTxOut(&wire.TxOut{Value: v, PkScript: s.PkScript})
	}
	if remaining > 0 { // every output was an OP_RETURN
		fee += remaining
	}

	txid := tx.TxHash()
	var created []Coin
	for i, out := range tx.TxOut {
		if s := outs[i]; s != nil && s.Kind.Spendable() {
			created = append(created, Coin{
				OutPoint: wire.OutPoint{Hash: txid, Index: uint32(i)},
				Value:    out.Value, Height: height, Script: s,
			})
		}
	}
	return tx, fee, created
}

// blockTime is the timestamp of a block following one made at parent.
func blockTime(parent time.Time) time.Time {
	t := parent.Add(time.Second)
	if t.Before(firstBlockTime) {
		return firstBlockTime
	}
	return t
}

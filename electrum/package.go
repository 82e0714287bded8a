package electrum

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// DefaultMaxFeeRate is the fee rate above which bitcoind's submitpackage
// refuses a transaction new to its mempool when the caller names none, in
// satoshis per kvB (0.10 BTC/kvB).
const DefaultMaxFeeRate = 10_000_000

// BTCAmount is an amount in satoshis written as bitcoind writes amounts:
// BTC with eight decimals.
type BTCAmount int64

// MarshalJSON writes the amount in BTC.
func (a BTCAmount) MarshalJSON() ([]byte, error) {
	sign, v := "", int64(a)
	if v < 0 {
		sign, v = "-", -v
	}
	return []byte(fmt.Sprintf("%s%d.%08d", sign, v/1e8, v%1e8)), nil
}

// PackageFees, PackageTxResult and PackageResult are bitcoind's
// submitpackage result, which ElectrumX and electrs pass on.
type PackageFees struct {
	Base              BTCAmount  `json:"base"`
	EffectiveFeeRate  *BTCAmount `json:"effective-feerate,omitempty"`
	EffectiveIncludes []string   `json:"effective-includes,omitempty"`
}

// PackageTxResult is one member's result, keyed by its wtxid.
type PackageTxResult struct {
	TxID       string       `json:"txid"`
	OtherWtxid string       `json:"other-wtxid,omitempty"`
	VSize      int64        `json:"vsize,omitempty"`
	Fees       *PackageFees `json:"fees,omitempty"`
	Error      string       `json:"error,omitempty"`
}

// PackageResult is the whole answer.
type PackageResult struct {
	Msg      string                     `json:"package_msg"`
	Results  map[string]PackageTxResult `json:"tx-results"`
	Replaced []string                   `json:"replaced-transactions"`
}

// SubmitPackage submits a package whose shape the caller checked (one
// transaction, or a child last with its parents: ChildWithParents) and
// answers as bitcoind's submitpackage: a package too heavy, holding a
// transaction twice or two spends of one output is refused whole, each
// member "package-not-validated"; otherwise
// btcd's mempool, which has no package acceptance, takes the members one by
// one, in order, each paying its own fee, all of them even after one fails.
// maxRate (sat/kvB, 0 for none) bounds the fee rate of a member new to the
// mempool.
func (b *IndexBackend) SubmitPackage(txs []*wire.MsgTx, maxRate int64) PackageResult {
	res := PackageResult{Msg: "success", Results: make(map[string]PackageTxResult, len(txs)), Replaced: []string{}}
	if why := malformed(txs); why != "" {
		// As bitcoind from version 31: every member is named.
		res.Msg = why
		for _, tx := range txs {
			res.Results[tx.WitnessHash().String()] = PackageTxResult{TxID: tx.TxHash().String(), Error: "package-not-validated"}
		}
		return res
	}
	var replaced []chainhash.Hash
	for _, tx := range txs {
		r, gone := b.submitMember(tx, maxRate)
		if r.Error != "" {
			res.Msg = "transaction failed"
		}
		res.Results[tx.WitnessHash().String()] = r
		replaced = append(replaced, gone...)
	}
	// In bitcoind's order: by the hashes' bytes.
	slices.SortFunc(replaced, func(a, b chainhash.Hash) int { return bytes.Compare(a[:], b[:]) })
	for _, h := range replaced {
		res.Replaced = append(res.Replaced, h.String())
	}
	return res
}

// maxPackageWeight is the most a package of several transactions may
// weigh, as bitcoind's MAX_PACKAGE_WEIGHT.
const maxPackageWeight = 404_000

// malformed returns why bitcoind refuses a package whole, before it looks
// at any member: too heavy, a transaction twice, or two members spending
// one output. "" when it does not.
func malformed(txs []*wire.MsgTx) string {
	weight := int64(0)
	for _, tx := range txs {
		weight += blockchain.GetTransactionWeight(btcutil.NewTx(tx))
	}
	if len(txs) > 1 && weight > maxPackageWeight {
		return "package-too-large"
	}
	ids := make(map[chainhash.Hash]bool, len(txs))
	for _, tx := range txs {
		ids[tx.TxHash()] = true
	}
	if len(ids) != len(txs) {
		return "package-contains-duplicates"
	}
	spent := make(map[wire.OutPoint]bool)
	for _, tx := range txs {
		for _, in := range tx.TxIn {
			if spent[in.PreviousOutPoint] {
				return "conflict-in-package"
			}
		}
		for _, in := range tx.TxIn {
			spent[in.PreviousOutPoint] = true
		}
	}
	return ""
}

// submitMember submits one member of a package and returns its result and
// the transactions it replaced; maxRate (sat/kvB, 0 for none) bounds the
// fee rate of a transaction new to the mempool. Its fee comes from the
// outputs it spends, found where btcd's pool finds them: the chain's
// unspent outputs, then the pool's transactions.
func (b *IndexBackend) submitMember(tx *wire.MsgTx, maxRate int64) (PackageTxResult, []chainhash.Hash) {
	txid := tx.TxHash()
	r := PackageTxResult{TxID: txid.String()}
	if held, err := b.Pool.FetchTransaction(&txid); err == nil && held.MsgTx().WitnessHash() != tx.WitnessHash() {
		// The mempool keeps the witness it has.
		r.OtherWtxid = held.MsgTx().WitnessHash().String()
		return r, nil
	}
	fee, ok := b.fee(tx)
	if !ok {
		r.Error = "bad-txns-inputs-missingorspent"
		return r, nil
	}
	size := vsize(tx)
	rate := fee * 1000 / size
	known := b.Pool.IsTransactionInPool(&txid)
	if !known && maxRate > 0 && rate > maxRate && b.wouldTake(tx) {
		r.Error = "max feerate exceeded"
		return r, nil
	}
	conflicts := b.conflicts(tx)
	if err := b.Broadcast(tx); err != nil {
		r.Error = strings.TrimPrefix(err.Error(), ErrRejected.Error()+": ")
		return r, nil
	}
	var replaced []chainhash.Hash
	for _, h := range conflicts {
		if !b.Pool.IsTransactionInPool(&h) {
			replaced = append(replaced, h)
		}
	}
	r.VSize, r.Fees = size, &PackageFees{Base: BTCAmount(fee)}
	if !known {
		// No package fee rate: each member's effective rate is its own.
		eff := BTCAmount(rate)
		r.Fees.EffectiveFeeRate, r.Fees.EffectiveIncludes = &eff, []string{tx.WitnessHash().String()}
	}
	return r, replaced
}

// fee returns the fee tx pays, false when an output it spends is neither
// unspent in the chain nor in btcd's pool.
func (b *IndexBackend) fee(tx *wire.MsgTx) (int64, bool) {
	fee := int64(0)
	for _, in := range tx.TxIn {
		v, ok := b.spentValue(in.PreviousOutPoint)
		if !ok {
			return 0, false
		}
		fee += v
	}
	for _, out := range tx.TxOut {
		fee -= out.Value
	}
	return fee, true
}

// Errors of bitcoind's sendrawtransaction with its defaults, maxburnamount
// 0 and maxfeerate 0.10 BTC/kvB: the guards against a wallet paying to
// an unspendable output or forgetting its change, which ElectrumX and
// electrs pass on.
var (
	ErrMaxBurn = errors.New("Unspendable output exceeds maximum configured by user (maxburnamount)")
	ErrMaxFee  = errors.New("Fee exceeds maximum configured by user (e.g. -maxtxfee, maxfeerate)")
)

// SendRawTransaction broadcasts tx as bitcoind's sendrawtransaction with
// its defaults: an output burning value is ErrMaxBurn, and a transaction
// new to the mempool paying more than DefaultMaxFeeRate is ErrMaxFee;
// the rest is Broadcast's. A fee that cannot be known (an output spent
// that neither the chain nor the pool holds) is left to the mempool, which
// refuses the transaction.
func (b *IndexBackend) SendRawTransaction(tx *wire.MsgTx) error {
	if BurnsOver(tx, 0) {
		return ErrMaxBurn
	}
	txid := tx.TxHash()
	if b.Pool != nil && b.Chain != nil && !b.Pool.IsTransactionInPool(&txid) {
		// As bitcoind's CFeeRate.GetFee: the most the fee may be, rounded
		// down. As bitcoind's, the cap is put to a transaction the pool
		// would take (wouldTake); another is refused for what is wrong
		// with it.
		if fee, ok := b.fee(tx); ok && fee > DefaultMaxFeeRate*vsize(tx)/1000 && b.wouldTake(tx) {
			return ErrMaxFee
		}
	}
	return b.Broadcast(tx)
}

// wouldTake reports whether btcd's pool would take tx: a fee cap (bitcoind's
// maxfeerate, submitpackage's) is put only to such a transaction, as
// bitcoind checks it after its pool's own rules.
func (b *IndexBackend) wouldTake(tx *wire.MsgTx) bool {
	if !b.spendable(tx) {
		return false
	}
	_, err := b.Pool.CheckMempoolAcceptance(btcutil.NewTx(tx))
	return err == nil
}

// spendable reports whether tx is sane (no input twice, say), the outputs
// it spends exist, unspent in the chain or outputs of btcd's pool, may be
// spent at the next height (coinbase maturity), and its signatures verify.
// A transaction over the fee cap passes these before btcd's pool is asked
// whether it would take it (CheckMempoolAcceptance, which logs a refusal
// as an error): a client's plain mistakes are refused by the pool itself
// and logged at debug, and what is left to log needs coins of its own.
func (b *IndexBackend) spendable(tx *wire.MsgTx) bool {
	btx := btcutil.NewTx(tx)
	if blockchain.CheckTransactionSanity(btx) != nil {
		return false
	}
	view, err := b.Chain.FetchUtxoView(btx)
	if err != nil {
		return false
	}
	for _, in := range tx.TxIn {
		op := in.PreviousOutPoint
		if e := view.LookupEntry(op); e != nil && !e.IsSpent() {
			continue
		}
		parent, err := b.Pool.FetchTransaction(&op.Hash)
		if err != nil || int(op.Index) >= len(parent.MsgTx().TxOut) {
			return false
		}
		view.AddTxOut(parent, op.Index, mining.UnminedHeight)
	}
	next := b.Chain.BestSnapshot().Height + 1
	if _, err := blockchain.CheckTransactionInputs(btx, next, view, b.Params); err != nil {
		return false
	}
	return blockchain.ValidateTransactionScripts(btx, view, txscript.StandardVerifyFlags, nil, txscript.NewHashCache(1)) == nil
}

// BurnsOver reports whether an output of tx burns more than max
// satoshis (Burns).
func BurnsOver(tx *wire.MsgTx, max int64) bool {
	for _, out := range tx.TxOut {
		if out.Value > max && Burns(out.PkScript) {
			return true
		}
	}
	return false
}

// spentValue returns the value of the output op, unspent in the chain or
// an output of a transaction of btcd's pool.
func (b *IndexBackend) spentValue(op wire.OutPoint) (int64, bool) {
	if e, err := b.Chain.FetchUtxoEntry(op); err == nil && e != nil && !e.IsSpent() {
		return e.Amount(), true
	}
	if tx, err := b.Pool.FetchTransaction(&op.Hash); err == nil && int(op.Index) < len(tx.MsgTx().TxOut) {
		return tx.MsgTx().TxOut[op.Index].Value, true
	}
	return 0, false
}

// conflicts returns the transactions of btcd's pool that tx would replace:
// those spending its inputs, and their descendants.
func (b *IndexBackend) conflicts(tx *wire.MsgTx) []chainhash.Hash {
	var out []chainhash.Hash
	seen := map[chainhash.Hash]bool{tx.TxHash(): true}
	add := func(c *btcutil.Tx) {
		if c != nil && !seen[*c.Hash()] {
			seen[*c.Hash()] = true
			out = append(out, *c.Hash())
		}
	}
	for _, in := range tx.TxIn {
		add(b.Pool.CheckSpend(in.PreviousOutPoint))
	}
	for i := 0; i < len(out); i++ {
		c, err := b.Pool.FetchTransaction(&out[i])
		if err != nil {
			continue
		}
		for vout := range c.MsgTx().TxOut {
			add(b.Pool.CheckSpend(wire.OutPoint{Hash: out[i], Index: uint32(vout)}))
		}
	}
	return out
}

// Burns reports whether bitcoind counts an output script as a burn: it
// starts with OP_RETURN, is over the size limit, or does not parse into
// valid opcodes and pushes.
func Burns(pk []byte) bool {
	if txscript.IsUnspendable(pk) {
		return true
	}
	t := txscript.MakeScriptTokenizer(0, pk)
	for t.Next() {
		if t.Opcode() > txscript.OP_CHECKSIGADD || len(t.Data()) > txscript.MaxScriptElementSize {
			return true
		}
	}
	return t.Err() != nil
}

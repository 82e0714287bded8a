package esplora

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

// defaultMaxFeeRate is submitpackage's maxfeerate when the request names
// none, in BTC/kvB.
const defaultMaxFeeRate = 0.10

// btcAmount is an amount in satoshis written as bitcoind writes amounts:
// BTC with eight decimals.
type btcAmount int64

func (a btcAmount) MarshalJSON() ([]byte, error) {
	sign, v := "", int64(a)
	if v < 0 {
		sign, v = "-", -v
	}
	return []byte(fmt.Sprintf("%s%d.%08d", sign, v/1e8, v%1e8)), nil
}

// packageFees, packageTxResult and packageResult are bitcoind's
// submitpackage result, which electrs passes on.
type packageFees struct {
	Base              btcAmount  `json:"base"`
	EffectiveFeeRate  *btcAmount `json:"effective-feerate,omitempty"`
	EffectiveIncludes []string   `json:"effective-includes,omitempty"`
}

type packageTxResult struct {
	TxID       string       `json:"txid"`
	OtherWtxid string       `json:"other-wtxid,omitempty"`
	VSize      int64        `json:"vsize,omitempty"`
	Fees       *packageFees `json:"fees,omitempty"`
	Error      string       `json:"error,omitempty"`
}

type packageResult struct {
	Msg      string                     `json:"package_msg"`
	Results  map[string]packageTxResult `json:"tx-results"`
	Replaced []string                   `json:"replaced-transactions"`
}

// submitError is an error bitcoind's submitpackage answers.
func submitError(code int, msg string) *httpError { return methodError("submitpackage", code, msg) }

// floatParam parses a number of the query as electrs does (not whether it
// is a sensible amount: bitcoind judges that, amountOf).
func floatParam(q *request, name string) (v float64, ok bool, err error) {
	if !q.query.Has(name) {
		return 0, false, nil
	}
	text := q.query.Get(name)
	v, err = strconv.ParseFloat(text, 64)
	// electrs reads 1e400 as infinity, and no hexadecimal.
	if (err != nil && !errors.Is(err, strconv.ErrRange)) || strings.ContainsAny(text, "xX_") {
		return 0, false, badRequest("Invalid " + name)
	}
	return v, true, nil
}

// amountOf is bitcoind's reading of an amount in BTC electrs passes on
// with eight decimals, in satoshis.
func amountOf(v float64) (int64, error) {
	// bitcoind parses no more than ten digits before the point.
	if math.IsNaN(v) || math.Abs(v) >= 1e10 {
		return 0, submitError(-3, "Invalid amount")
	}
	sat := math.Round(v * 1e8)
	if sat < 0 || sat > 21e6*1e8 {
		return 0, submitError(-3, "Amount out of range")
	}
	return int64(sat), nil
}

// POST /txs/package: the body is a JSON array of transactions in hex, a
// child last with its parents (or one transaction), as bitcoind's
// submitpackage takes them, with its maxfeerate (BTC/kvB, 0.10 when absent,
// 0 for none) and maxburnamount (BTC, 0 when absent) in the query. btcd's
// mempool has no package acceptance, so the members are submitted one by
// one, in order, as the Electrum server's broadcast_package submits them
// (electrum/doc.go): each pays its own fee, and every member is submitted
// even after one fails. The answer is submitpackage's.
func (s *Server) submitPackage(q *request) (*reply, error) {
	body, err := q.readBody(s.cfg.MaxBody)
	if err != nil {
		return nil, err
	}
	var hexes []string
	if json.Unmarshal(body, &hexes) != nil || hexes == nil {
		return nil, badRequest("Invalid request body (should be an array of hexadecimal strings)")
	}
	if len(hexes) > electrum.MaxPackageTxs {
		return nil, badRequest(fmt.Sprintf("Exceeded maximum of %d transactions", electrum.MaxPackageTxs))
	}
	// electrs' checks before it asks bitcoind.
	feeRate, haveFeeRate, err := floatParam(q, "maxfeerate")
	if err != nil {
		return nil, err
	}
	burn, haveBurn, err := floatParam(q, "maxburnamount")
	if err != nil {
		return nil, err
	}
	for i, h := range hexes {
		if len(h) < 120 || len(h) >= 800_000 {
			return nil, badRequest(fmt.Sprintf("Invalid transaction size for item %d", i))
		}
		if _, err := hex.DecodeString(h); err != nil {
			return nil, badRequest(fmt.Sprintf("Invalid transaction hex for item %d", i))
		}
	}
	// bitcoind's, in its order.
	if len(hexes) == 0 {
		return nil, submitError(-8, fmt.Sprintf("Array must contain between 1 and %d transactions.", electrum.MaxPackageTxs))
	}
	maxRate := btcToSat(defaultMaxFeeRate)
	if haveFeeRate {
		if maxRate, err = amountOf(feeRate); err != nil {
			return nil, err
		}
		if maxRate >= 1e8 {
			return nil, submitError(-8, "Fee rates larger than or equal to 1BTC/kvB are not accepted")
		}
	}
	maxBurn := int64(0)
	if haveBurn {
		if maxBurn, err = amountOf(burn); err != nil {
			return nil, err
		}
	}
	txs := make([]*wire.MsgTx, len(hexes))
	for i, h := range hexes {
		tx, err := decodeTx(h)
		if err != nil {
			return nil, submitError(-22, "TX decode failed: "+h+" Make sure the tx has at least one input.")
		}
		for _, out := range tx.TxOut {
			if burns(out.PkScript) && out.Value > maxBurn {
				return nil, submitError(-25, "Unspendable output exceeds maximum configured by user (maxburnamount)")
			}
		}
		txs[i] = tx
	}
	if !electrum.ChildWithParents(txs) {
		return nil, submitError(-25, "package topology disallowed. not child-with-parents or parents depend on each other.")
	}
	res := packageResult{Msg: "success", Results: make(map[string]packageTxResult, len(txs)), Replaced: []string{}}
	if why := malformed(txs); why != "" {
		res.Msg = why
		return jsonReply(res, 0)
	}
	var replaced []chainhash.Hash
	for _, tx := range txs {
		r, gone := s.submitMember(tx, maxRate)
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
	return jsonReply(res, 0)
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

// burns reports whether bitcoind counts an output script as a burn: it
// starts with OP_RETURN, is over the size limit, or does not parse into
// valid opcodes and pushes.
func burns(pk []byte) bool {
	if txscript.IsUnspendable(pk) {
		return true
	}
	t := txscript.MakeScriptTokenizer(0, pk)
	for t.Next() {
		if t.Opcode() > txscript.OP_NOP10 || len(t.Data()) > txscript.MaxScriptElementSize {
			return true
		}
	}
	return t.Err() != nil
}

// submitMember submits one member of a package and returns its result and
// the transactions it replaced; maxRate (sat/kvB, 0 for none) bounds the
// fee rate of a transaction new to the mempool. Its fee comes from the
// outputs it spends, found where btcd's pool finds them: the chain's
// unspent outputs, then the pool's transactions.
func (s *Server) submitMember(tx *wire.MsgTx, maxRate int64) (packageTxResult, []chainhash.Hash) {
	txid := tx.TxHash()
	r := packageTxResult{TxID: txid.String()}
	if held, err := s.pool.FetchTransaction(&txid); err == nil && held.MsgTx().WitnessHash() != tx.WitnessHash() {
		// The mempool keeps the witness it has.
		r.OtherWtxid = held.MsgTx().WitnessHash().String()
		return r, nil
	}
	fee := int64(0)
	for _, in := range tx.TxIn {
		v, ok := s.spentValue(in.PreviousOutPoint)
		if !ok {
			r.Error = "bad-txns-inputs-missingorspent"
			return r, nil
		}
		fee += v
	}
	for _, out := range tx.TxOut {
		fee -= out.Value
	}
	vsize := (blockchain.GetTransactionWeight(btcutil.NewTx(tx)) + 3) / 4
	rate := fee * 1000 / vsize
	known := s.pool.IsTransactionInPool(&txid)
	if !known && maxRate > 0 && rate > maxRate {
		r.Error = "max feerate exceeded"
		return r, nil
	}
	conflicts := s.conflicts(tx)
	if err := s.index.Broadcast(tx); err != nil {
		r.Error = strings.TrimPrefix(err.Error(), electrum.ErrRejected.Error()+": ")
		return r, nil
	}
	var replaced []chainhash.Hash
	for _, h := range conflicts {
		if !s.pool.IsTransactionInPool(&h) {
			replaced = append(replaced, h)
		}
	}
	r.VSize, r.Fees = vsize, &packageFees{Base: btcAmount(fee)}
	if !known {
		// No package fee rate: each member's effective rate is its own.
		eff := btcAmount(rate)
		r.Fees.EffectiveFeeRate, r.Fees.EffectiveIncludes = &eff, []string{tx.WitnessHash().String()}
	}
	return r, replaced
}

// spentValue returns the value of the output op, unspent in the chain or
// an output of a transaction of btcd's pool.
func (s *Server) spentValue(op wire.OutPoint) (int64, bool) {
	if e, err := s.chain.FetchUtxoEntry(op); err == nil && e != nil && !e.IsSpent() {
		return e.Amount(), true
	}
	if tx, err := s.pool.FetchTransaction(&op.Hash); err == nil && int(op.Index) < len(tx.MsgTx().TxOut) {
		return tx.MsgTx().TxOut[op.Index].Value, true
	}
	return 0, false
}

// conflicts returns the transactions of btcd's pool that tx would replace:
// those spending its inputs, and their descendants.
func (s *Server) conflicts(tx *wire.MsgTx) []chainhash.Hash {
	var out []chainhash.Hash
	seen := map[chainhash.Hash]bool{tx.TxHash(): true}
	add := func(c *btcutil.Tx) {
		if c != nil && !seen[*c.Hash()] {
			seen[*c.Hash()] = true
			out = append(out, *c.Hash())
		}
	}
	for _, in := range tx.TxIn {
		add(s.pool.CheckSpend(in.PreviousOutPoint))
	}
	for i := 0; i < len(out); i++ {
		c, err := s.pool.FetchTransaction(&out[i])
		if err != nil {
			continue
		}
		for vout := range c.MsgTx().TxOut {
			add(s.pool.CheckSpend(wire.OutPoint{Hash: out[i], Index: uint32(vout)}))
		}
	}
	return out
}

// btcToSat converts an amount in BTC to satoshis, rounded.
func btcToSat(v float64) int64 { return int64(math.Round(v * 1e8)) }

// decodeTx decodes a transaction in hex that must hold nothing after it.
func decodeTx(h string) (*wire.MsgTx, error) {
	raw, err := hex.DecodeString(strings.TrimSpace(h))
	if err != nil {
		return nil, err
	}
	tx := new(wire.MsgTx)
	r := strings.NewReader(string(raw))
	if err := tx.Deserialize(r); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, errors.New("trailing bytes")
	}
	return tx, nil
}

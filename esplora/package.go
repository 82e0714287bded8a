package esplora

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
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
	TxID  string       `json:"txid"`
	VSize int64        `json:"vsize,omitempty"`
	Fees  *packageFees `json:"fees,omitempty"`
	Error string       `json:"error,omitempty"`
}

type packageResult struct {
	Msg      string                     `json:"package_msg"`
	Results  map[string]packageTxResult `json:"tx-results"`
	Replaced []string                   `json:"replaced-transactions"`
}

// submitError is an error bitcoind's submitpackage answers.
func submitError(code int, msg string) *httpError { return methodError("submitpackage", code, msg) }

// amountParam parses a BTC amount of the query, def when absent: the
// request's error as electrs (not a number) or bitcoind (out of range)
// answers it.
func amountParam(q *request, name string, def float64) (float64, error) {
	if !q.query.Has(name) {
		return def, nil
	}
	v, err := strconv.ParseFloat(q.query.Get(name), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, badRequest("Invalid " + name)
	}
	if v < 0 || v > 21e6 {
		return 0, submitError(-3, "Amount out of range")
	}
	return v, nil
}

// POST /txs/package: the body is a JSON array of transactions in hex, a
// child last with its parents (or one transaction), as bitcoind's
// submitpackage takes them, with its maxfeerate (BTC/kvB, 0.10 when absent,
// 0 for none) and maxburnamount (BTC, 0 when absent) in the query. btcd's
// mempool has no package acceptance, so the members are submitted one by
// one, in order, as the Electrum server's broadcast_package submits them
// (electrum/doc.go): each pays its own fee, and the members accepted before
// a failing one stay. The answer is submitpackage's.
func (s *Server) submitPackage(q *request) (*reply, error) {
	body, err := q.readBody(s.cfg.MaxBody)
	if err != nil {
		return nil, err
	}
	var hexes []string
	if json.Unmarshal(body, &hexes) != nil {
		return nil, badRequest("Invalid request body (should be an array of hexadecimal strings)")
	}
	if len(hexes) > electrum.MaxPackageTxs {
		return nil, badRequest(fmt.Sprintf("Exceeded maximum of %d transactions", electrum.MaxPackageTxs))
	}
	maxFeeRate, err := amountParam(q, "maxfeerate", defaultMaxFeeRate)
	if err != nil {
		return nil, err
	}
	if maxFeeRate >= 1 {
		return nil, submitError(-8, "Fee rates larger than or equal to 1BTC/kvB are not accepted")
	}
	maxBurn, err := amountParam(q, "maxburnamount", 0)
	if err != nil {
		return nil, err
	}
	// electrs' checks before it asks bitcoind.
	for i, h := range hexes {
		if len(h) < 120 || len(h) >= 800_000 {
			return nil, badRequest(fmt.Sprintf("Invalid transaction size for item %d", i))
		}
		if _, err := hex.DecodeString(h); err != nil {
			return nil, badRequest(fmt.Sprintf("Invalid transaction hex for item %d", i))
		}
	}
	if len(hexes) == 0 {
		return nil, submitError(-8, fmt.Sprintf("Array must contain between 1 and %d transactions.", electrum.MaxPackageTxs))
	}
	txs := make([]*wire.MsgTx, len(hexes))
	for i, h := range hexes {
		tx, err := decodeTx(h)
		if err != nil {
			return nil, submitError(-22, "TX decode failed: "+h+" Make sure the tx has at least one input.")
		}
		for _, out := range tx.TxOut {
			if txscript.IsUnspendable(out.PkScript) && out.Value > btcToSat(maxBurn) {
				return nil, submitError(-25, "Unspendable output exceeds maximum configured by user (maxburnamount)")
			}
		}
		txs[i] = tx
	}
	if !electrum.ChildWithParents(txs) {
		return nil, submitError(-25, "package topology disallowed. not child-with-parents or parents depend on each other.")
	}
	res := packageResult{Msg: "success", Results: make(map[string]packageTxResult, len(txs)), Replaced: []string{}}
	seen := make(map[[32]byte]bool, len(txs))
	for _, tx := range txs {
		h := tx.TxHash()
		if seen[h] {
			res.Msg = "package-contains-duplicates"
			return jsonReply(res, 0)
		}
		seen[h] = true
	}
	for _, tx := range txs {
		r := s.submitMember(q, tx, btcToSat(maxFeeRate))
		if r.Error != "" {
			res.Msg = "transaction failed"
		}
		res.Results[tx.WitnessHash().String()] = r
	}
	return jsonReply(res, 0)
}

// submitMember submits one member of a package; maxRate (sat/kvB, 0 for
// none) bounds the fee rate of a transaction new to the mempool. Its fee
// comes from the outputs it spends, which the index or the mempool view
// holds; one spending an output neither knows is refused as bitcoind
// refuses it.
func (s *Server) submitMember(q *request, tx *wire.MsgTx, maxRate int64) packageTxResult {
	txid := tx.TxHash()
	r := packageTxResult{TxID: txid.String()}
	fee := int64(0)
	for _, in := range tx.TxIn {
		prev, err := s.prevOut(q, in.PreviousOutPoint)
		if err != nil || prev == nil {
			r.Error = "missing-inputs"
			return r
		}
		fee += prev.Value
	}
	for _, out := range tx.TxOut {
		fee -= out.Value
	}
	vsize := (blockchain.GetTransactionWeight(btcutil.NewTx(tx)) + 3) / 4
	rate := fee * 1000 / vsize
	_, known := s.index.MempoolTx(txid)
	if !known && maxRate > 0 && rate > maxRate {
		r.Error = "max feerate exceeded"
		return r
	}
	if err := s.index.Broadcast(tx); err != nil {
		r.Error = strings.TrimPrefix(err.Error(), electrum.ErrRejected.Error()+": ")
		return r
	}
	r.VSize, r.Fees = vsize, &packageFees{Base: btcAmount(fee)}
	if !known {
		// No package fee rate: each member's effective rate is its own.
		eff := btcAmount(rate)
		r.Fees.EffectiveFeeRate, r.Fees.EffectiveIncludes = &eff, []string{tx.WitnessHash().String()}
	}
	return r
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

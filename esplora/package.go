package esplora

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

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
	body, err := s.readBody(q)
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
	maxRate := int64(electrum.DefaultMaxFeeRate)
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
		if electrum.BurnsOver(tx, maxBurn) {
			return nil, submitError(-25, electrum.ErrMaxBurn.Error())
		}
		txs[i] = tx
	}
	if !electrum.ChildWithParents(txs) {
		return nil, submitError(-25, "package topology disallowed. not child-with-parents or parents depend on each other.")
	}
	return jsonReply(s.index.SubmitPackage(txs, maxRate), 0)
}

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

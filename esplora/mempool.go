package esplora

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/blockchain"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

// histogramBin is the virtual size electrs' fee histogram puts in a bin
// before it starts the next one.
const histogramBin = 50_000

// feeTargets are the confirmation targets /fee-estimates answers for: those
// btcd's estimator answers. electrs adds 144, 504 and 1008 from bitcoind;
// btcd has no estimate that far, and the Electrum relay answers a longer
// target with the 25-block rate, which here would read as a day's or a
// week's. A client asking for a longer target takes the longest listed.
var feeTargets = func() []int {
	t := make([]int, 0, 25)
	for i := 1; i <= 25; i++ {
		t = append(t, i)
	}
	return t
}()

// vsize is electrs' virtual size: weight / 4, rounded down.
func vsize(u *electrum.UnconfirmedTx) int64 { return blockchain.GetTransactionWeight(u.Tx) / 4 }

type backlogStats struct {
	Count        int                 `json:"count"`
	Vsize        int64               `json:"vsize"`
	TotalFee     int64               `json:"total_fee"`
	FeeHistogram [][2]json.Marshaler `json:"fee_histogram"`
}

// feeHistogram is electrs': transactions by fee rate, highest first, cut
// into bins of a little over 50,000 vbytes (a bin ends only where the rate
// changes); each bin is [lowest rate in it, its vsize].
func feeHistogram(descs []electrum.UnconfirmedTx) [][2]json.Marshaler {
	type entry struct {
		rate  float32
		vsize int64
	}
	es := make([]entry, 0, len(descs))
	for i := range descs {
		vs := vsize(&descs[i])
		es = append(es, entry{float32(descs[i].Fee) / float32(vs), vs})
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].rate > es[j].rate })
	out := [][2]json.Marshaler{}
	var bin int64
	var last float32
	for _, e := range es {
		if bin > histogramBin && last != e.rate {
			out = append(out, [2]json.Marshaler{jsonFloat32(last), jsonInt(bin)})
			bin = 0
		}
		last = e.rate
		bin += e.vsize
	}
	if bin > 0 {
		out = append(out, [2]json.Marshaler{jsonFloat32(last), jsonInt(bin)})
	}
	return out
}

type jsonInt int64

func (i jsonInt) MarshalJSON() ([]byte, error) { return []byte(strconv.FormatInt(int64(i), 10)), nil }

// The mempool-wide endpoints list the transactions that count as
// unconfirmed beside the index's rows, as the per-script answers do
// (electrum.IndexBackend.UnconfirmedTxs).

// GET /mempool
func (s *Server) mempoolStats() (*reply, error) {
	txs := s.index.UnconfirmedTxs()
	st := backlogStats{Count: len(txs), FeeHistogram: feeHistogram(txs)}
	for i := range txs {
		st.Vsize += vsize(&txs[i])
		st.TotalFee += txs[i].Fee
	}
	return jsonReply(st, ttlShort)
}

// GET /mempool/txids
func (s *Server) mempoolTxids() (*reply, error) {
	txs := s.index.UnconfirmedTxs()
	out := make([]string, len(txs))
	for i := range txs {
		out[i] = txs[i].Tx.Hash().String()
	}
	return jsonReply(out, ttlShort)
}

type txOverview struct {
	TxID  string `json:"txid"`
	Fee   int64  `json:"fee"`
	Vsize int64  `json:"vsize"`
	Value int64  `json:"value"`
}

// GET /mempool/recent: the ten transactions that entered the pool last.
func (s *Server) mempoolRecent() (*reply, error) {
	txs := s.index.UnconfirmedTxs()
	sort.SliceStable(txs, func(i, j int) bool { return txs[i].Added.After(txs[j].Added) })
	out := []txOverview{}
	for i := range txs[:min(len(txs), recentTxs)] {
		// value is what the inputs spend, as electrs counts it: the
		// outputs and the fee.
		u := &txs[i]
		value := u.Fee
		for _, o := range u.Tx.MsgTx().TxOut {
			value += o.Value
		}
		out = append(out, txOverview{u.Tx.Hash().String(), u.Fee, vsize(u), value})
	}
	return jsonReply(out, ttlRecent)
}

// GET /fee-estimates: sat/vB by confirmation target, for the targets the
// node's estimator has an estimate for.
func (s *Server) feeEstimates() (*reply, error) {
	var b strings.Builder
	b.WriteByte('{')
	for _, target := range feeTargets {
		rate, err := s.index.EstimateFee(target, "")
		if err != nil || rate <= 0 {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		// BTC/kvB to sat/vB, through whole satoshis per kvB (btcd's
		// unit) so that no binary fraction shows.
		b.WriteString(`"` + strconv.Itoa(target) + `":` + formatFloat(math.Round(rate*1e8)/1000, 64))
	}
	b.WriteByte('}')
	return &reply{"application/json", []byte(b.String()), ttlShort}, nil
}

// methodError is the error a bitcoind RPC method answers, which electrs
// passes on.
func methodError(method string, code int, msg string) *httpError {
	b, _ := json.Marshal(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg})
	return badRequest(method + " RPC error: " + string(b))
}

// rpcError is the error bitcoind's sendrawtransaction answers.
func rpcError(code int, msg string) *httpError { return methodError("sendrawtransaction", code, msg) }

// POST /tx: the body is the transaction in hex; the answer its txid.
func (s *Server) broadcast(body string) (*reply, error) {
	tx, err := decodeTx(body)
	if err != nil {
		return nil, rpcError(-22, "TX decode failed. Make sure the tx has at least one input.")
	}
	if err := s.index.SendRawTransaction(tx); err != nil {
		if errors.Is(err, electrum.ErrInChain) {
			return nil, rpcError(-27, "Transaction already in block chain")
		}
		if errors.Is(err, electrum.ErrMissingInputs) {
			return nil, rpcError(-25, electrum.ErrMissingInputs.Error())
		}
		if errors.Is(err, electrum.ErrRejected) {
			return nil, rpcError(-26, strings.TrimPrefix(err.Error(), electrum.ErrRejected.Error()+": "))
		}
		return nil, rpcError(-25, err.Error())
	}
	return textReply(tx.TxHash().String(), 0), nil
}

package rpcext

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// txBlockInfo places a confirmed transaction for its verbose result.
type txBlockInfo struct {
	header        *wire.BlockHeader
	hash          *chainhash.Hash
	height        int32
	confirmations int64
}

// txHex serializes a transaction (with witness) to hex.
func txHex(tx *wire.MsgTx) (string, error) {
	var buf bytes.Buffer
	buf.Grow(tx.SerializeSize())
	if err := tx.Serialize(&buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf.Bytes()), nil
}

// txRawResult builds btcd's verbose transaction result; blk is nil for a
// mempool transaction.
func txRawResult(params *chaincfg.Params, mtx *wire.MsgTx, blk *txBlockInfo) (*btcjson.TxRawResult, error) {
	h, err := txHex(mtx)
	if err != nil {
		return nil, err
	}
	tx := btcutil.NewTx(mtx)
	r := &btcjson.TxRawResult{
		Hex:      h,
		Txid:     mtx.TxHash().String(),
		Hash:     mtx.WitnessHash().String(),
		Size:     int32(mtx.SerializeSize()),
		Vsize:    int32(mempool.GetTxVirtualSize(tx)),
		Weight:   int32(blockchain.GetTransactionWeight(tx)),
		Version:  uint32(mtx.Version),
		LockTime: mtx.LockTime,
		Vin:      vinList(mtx),
		Vout:     voutList(mtx, params),
	}
	if blk != nil {
		r.BlockHash = blk.hash.String()
		r.Time = blk.header.Timestamp.Unix()
		r.Blocktime = blk.header.Timestamp.Unix()
		if blk.confirmations > 0 {
			r.Confirmations = uint64(blk.confirmations)
		}
	}
	return r, nil
}

// vinList describes a transaction's inputs as btcd does.
func vinList(mtx *wire.MsgTx) []btcjson.Vin {
	vins := make([]btcjson.Vin, len(mtx.TxIn))
	if blockchain.IsCoinBaseTx(mtx) {
		in := mtx.TxIn[0]
		vins[0].Coinbase = hex.EncodeToString(in.SignatureScript)
		vins[0].Sequence = in.Sequence
		vins[0].Witness = in.Witness.ToHexStrings()
		return vins
	}
	for i, in := range mtx.TxIn {
		asm, _ := txscript.DisasmString(in.SignatureScript)
		v := &vins[i]
		v.Txid = in.PreviousOutPoint.Hash.String()
		v.Vout = in.PreviousOutPoint.Index
		v.Sequence = in.Sequence
		v.ScriptSig = &btcjson.ScriptSig{Asm: asm, Hex: hex.EncodeToString(in.SignatureScript)}
		if mtx.HasWitness() {
			v.Witness = in.Witness.ToHexStrings()
		}
	}
	return vins
}

// voutList describes a transaction's outputs as btcd does.
func voutList(mtx *wire.MsgTx, params *chaincfg.Params) []btcjson.Vout {
	vouts := make([]btcjson.Vout, len(mtx.TxOut))
	for i, out := range mtx.TxOut {
		asm, _ := txscript.DisasmString(out.PkScript)
		class, addrs, reqSigs, _ := txscript.ExtractPkScriptAddrs(out.PkScript, params)
		encoded := make([]string, len(addrs))
		for j, a := range addrs {
			encoded[j] = a.EncodeAddress()
		}
		v := &vouts[i]
		v.N = uint32(i)
		v.Value = btcutil.Amount(out.Value).ToBTC()
		v.ScriptPubKey.Asm = asm
		v.ScriptPubKey.Hex = hex.EncodeToString(out.PkScript)
		v.ScriptPubKey.Type = class.String()
		v.ScriptPubKey.ReqSigs = int32(reqSigs)
		v.ScriptPubKey.Addresses = encoded
		if len(encoded) == 1 && reqSigs <= 1 {
			v.ScriptPubKey.Address = encoded[0]
		}
	}
	return vouts
}

// noTxInfo is btcd's answer for an unknown transaction.
func noTxInfo(hash *chainhash.Hash) error {
	return btcjson.NewRPCError(btcjson.ErrRPCNoTxInfo,
		fmt.Sprintf("No information available about transaction %v", hash))
}

// handleGetRawTransaction answers getrawtransaction from the mempool, then
// from the Electrum index through the backend.
func handleGetRawTransaction(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetRawTransactionCmd)
	hash, err := parseHash(c.Txid)
	if err != nil {
		return nil, err
	}
	verbose := c.Verbose != nil && *c.Verbose != 0

	if tx, err := s.cfg.Mempool.FetchTransaction(hash); err == nil {
		if !verbose {
			return txHex(tx.MsgTx())
		}
		return txRawResult(s.cfg.Params, tx.MsgTx(), nil)
	}

	mtx, blockHash, err := s.cfg.Backend.ConfirmedTx(hash)
	var rerr *btcjson.RPCError
	if errors.As(err, &rerr) {
		return nil, rerr
	}
	if err != nil || mtx == nil || blockHash == nil {
		return nil, noTxInfo(hash)
	}
	if !verbose {
		return txHex(mtx)
	}
	header, err := s.cfg.Chain.HeaderByHash(blockHash)
	if err != nil {
		return nil, fmt.Errorf("header of block %v holding %v: %w", blockHash, hash, err)
	}
	pos, err := s.positionOf(blockHash, &header)
	if err != nil {
		return nil, err
	}
	return txRawResult(s.cfg.Params, mtx, &txBlockInfo{
		header: &header, hash: blockHash, height: pos.height,
		confirmations: pos.confirmations,
	})
}

// decodeHexParam decodes a hex parameter, tolerating an odd length as
// btcd does.
func decodeHexParam(s string) ([]byte, error) {
	if len(s)%2 != 0 {
		s = "0" + s
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCDecodeHexString,
			fmt.Sprintf("Argument must be hexadecimal string (not %q)", truncate(s)))
	}
	return b, nil
}

// handleSendRawTransaction answers sendrawtransaction. The second parameter
// (allowhighfees bool or maxfeerate number) is accepted and, as in btcd,
// does not change policy.
func handleSendRawTransaction(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.SendRawTransactionCmd)
	raw, err := decodeHexParam(c.HexTx)
	if err != nil {
		return nil, err
	}
	tx, err := btcutil.NewTxFromBytes(raw)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCDeserialization, "TX decode failed: "+err.Error())
	}
	accepted, err := s.cfg.Backend.ProcessTx(tx)
	if err != nil {
		var rpcErr *btcjson.RPCError
		if errors.As(err, &rpcErr) {
			return nil, rpcErr
		}
		return nil, btcjson.NewRPCError(txRejectCode(err), "TX rejected: "+err.Error())
	}
	if len(accepted) == 0 || !accepted[0].Tx.Hash().IsEqual(tx.Hash()) {
		log.Debugf("Transaction %v processed without being accepted first", tx.Hash())
	}
	return tx.Hash().String(), nil
}

// txRejectCode maps a mempool rejection to the code btcd (and bitcoind)
// use for it.
func txRejectCode(err error) btcjson.RPCErrorCode {
	var ruleErr mempool.RuleError
	if !errors.As(err, &ruleErr) {
		return btcjson.ErrRPCTxError
	}
	txRuleErr, ok := ruleErr.Err.(mempool.TxRuleError)
	if !ok {
		// A chain rule the pool passes on (a failed script, an
		// immature coinbase spend): btcd's -25.
		return btcjson.ErrRPCTxError
	}
	desc := strings.ToLower(txRuleErr.Description)
	switch {
	case strings.Contains(desc, "orphan transaction"):
		return btcjson.ErrRPCTxError
	case strings.Contains(desc, "transaction already exists"):
		return btcjson.ErrRPCTxAlreadyInChain
	default:
		return btcjson.ErrRPCTxRejected
	}
}

// handleGetRawMempool answers getrawmempool, plain or verbose.
func handleGetRawMempool(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetRawMempoolCmd)
	if c.Verbose != nil && *c.Verbose {
		return s.cfg.Mempool.RawMempoolVerbose(), nil
	}
	descs := s.cfg.Mempool.TxDescs()
	ids := make([]string, len(descs))
	for i, d := range descs {
		ids[i] = d.Tx.Hash().String()
	}
	return ids, nil
}

// handleGetMempoolInfo answers getmempoolinfo.
func handleGetMempoolInfo(s *Server, _ interface{}) (interface{}, error) {
	descs := s.cfg.Mempool.TxDescs()
	var size int64
	for _, d := range descs {
		size += int64(d.Tx.MsgTx().SerializeSize())
	}
	return &btcjson.GetMempoolInfoResult{Size: int64(len(descs)), Bytes: size}, nil
}

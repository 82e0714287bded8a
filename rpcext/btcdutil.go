package rpcext

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"sort"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// btcdUtilMethods are btcd's message signing, raw transaction and mempool
// test methods; methods.go adds them to the method table.
var btcdUtilMethods = map[string]method{
	"createrawtransaction":   {handleCreateRawTransaction, "Returns an unsigned transaction spending the inputs to the amounts."},
	"signmessagewithprivkey": {handleSignMessageWithPrivKey, "Signs a message with a WIF private key (the key is sent to the node: use on a trusted connection)."},
	"verifymessage":          {handleVerifyMessage, "Verifies a message signed by the key of a pay-to-pubkey-hash address."},
	"testmempoolaccept":      {handleTestMempoolAccept, "Reports whether raw transactions would be accepted into the mempool, without adding them."},
	"gettxspendingprevout":   {handleGetTxSpendingPrevOut, "Returns the mempool transactions spending outputs."},
}

// messageSignatureHeader prefixes signed messages (Bitcoin Core's and btcd's).
const messageSignatureHeader = "Bitcoin Signed Message:\n"

// defaultMaxFeeRate is testmempoolaccept's default maxfeerate in BTC/kvB.
const defaultMaxFeeRate = 0.1

// messageHash is the double SHA-256 a signed message commits to.
func messageHash(msg string) []byte {
	var buf bytes.Buffer
	_ = wire.WriteVarString(&buf, 0, messageSignatureHeader)
	_ = wire.WriteVarString(&buf, 0, msg)
	return chainhash.DoubleHashB(buf.Bytes())
}

// handleSignMessageWithPrivKey answers signmessagewithprivkey.
func handleSignMessageWithPrivKey(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.SignMessageWithPrivKeyCmd)
	wif, err := btcutil.DecodeWIF(c.PrivKey)
	if err != nil {
		msg := "Invalid private key"
		switch err {
		case btcutil.ErrMalformedPrivateKey:
			msg = "Malformed private key"
		case address.ErrChecksumMismatch:
			msg = "Private key checksum mismatch"
		}
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey, msg)
	}
	if !wif.IsForNet(s.cfg.Params) {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey, "Private key for wrong network")
	}
	sig := ecdsa.SignCompact(wif.PrivKey, messageHash(c.Message), wif.CompressPubKey)
	return base64.StdEncoding.EncodeToString(sig), nil
}

// handleVerifyMessage answers verifymessage.
func handleVerifyMessage(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.VerifyMessageCmd)
	params := s.cfg.Params
	addr, err := address.DecodeAddress(c.Address, params)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey, "Invalid address or key: "+err.Error())
	}
	if _, ok := addr.(*address.AddressPubKeyHash); !ok {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCType, "Address is not a pay-to-pubkey-hash address")
	}
	sig, err := base64.StdEncoding.DecodeString(c.Signature)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCParse.Code, "Malformed base64 encoding: "+err.Error())
	}
	pk, compressed, err := ecdsa.RecoverCompact(sig, messageHash(c.Message))
	if err != nil {
		return false, nil
	}
	serialized := pk.SerializeUncompressed()
	if compressed {
		serialized = pk.SerializeCompressed()
	}
	signer, err := address.NewAddressPubKey(serialized, params)
	if err != nil {
		return false, nil
	}
	return signer.EncodeAddress() == c.Address, nil
}

// handleCreateRawTransaction answers createrawtransaction as btcd, except
// that the outputs come in address order (btcd's follow map order) and
// any standard address may be paid (btcd takes pay-to-pubkey-hash and
// pay-to-script-hash only).
func handleCreateRawTransaction(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.CreateRawTransactionCmd)
	if c.LockTime != nil && (*c.LockTime < 0 || *c.LockTime > int64(wire.MaxTxInSequenceNum)) {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "Locktime out of range")
	}
	mtx := wire.NewMsgTx(wire.TxVersion)
	for _, in := range c.Inputs {
		h, err := chainhash.NewHashFromStr(in.Txid)
		if err != nil {
			return nil, decodeHexError(in.Txid)
		}
		txIn := wire.NewTxIn(wire.NewOutPoint(h, in.Vout), []byte{}, nil)
		if c.LockTime != nil && *c.LockTime != 0 {
			txIn.Sequence = wire.MaxTxInSequenceNum - 1
		}
		mtx.AddTxIn(txIn)
	}
	addrs := make([]string, 0, len(c.Amounts))
	for a := range c.Amounts {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	params := s.cfg.Params
	for _, encoded := range addrs {
		amount := c.Amounts[encoded]
		if amount <= 0 || amount*btcutil.SatoshiPerBitcoin > btcutil.MaxSatoshi {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCType, "Invalid amount")
		}
		addr, err := address.DecodeAddress(encoded, params)
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey, "Invalid address or key: "+err.Error())
		}
		if !addr.IsForNet(params) {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey,
				"Invalid address: "+truncate(encoded)+" is for the wrong network")
		}
		pkScript, err := txscript.PayToAddrScript(addr)
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey, "Invalid address or key")
		}
		sat, err := btcutil.NewAmount(amount)
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCType, "Invalid amount")
		}
		mtx.AddTxOut(wire.NewTxOut(int64(sat), pkScript))
	}
	if c.LockTime != nil {
		mtx.LockTime = uint32(*c.LockTime)
	}
	return txHex(mtx)
}

// poolChecks is the part of btcd's mempool testmempoolaccept and
// gettxspendingprevout read, beyond the Mempool interface.
type poolChecks interface {
	CheckMempoolAcceptance(tx *btcutil.Tx) (*mempool.MempoolAcceptResult, error)
	CheckSpend(op wire.OutPoint) *btcutil.Tx
}

// pool returns the mempool as btcd's.
func (s *Server) pool() (poolChecks, error) {
	p, ok := s.cfg.Mempool.(poolChecks)
	if !ok {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "the mempool does not support this method")
	}
	return p, nil
}

// handleTestMempoolAccept answers testmempoolaccept.
func handleTestMempoolAccept(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.TestMempoolAcceptCmd)
	pool, err := s.pool()
	if err != nil {
		return nil, err
	}
	txs := make([]*btcutil.Tx, 0, len(c.RawTxns))
	for _, raw := range c.RawTxns {
		b, err := hex.DecodeString(raw)
		if err != nil {
			return nil, decodeHexError(raw)
		}
		tx, err := btcutil.NewTxFromBytes(b)
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCDeserialization, "TX decode failed: "+err.Error())
		}
		txs = append(txs, tx)
	}
	maxFeeRate := float64(c.MaxFeeRate)
	if maxFeeRate == 0 {
		maxFeeRate = defaultMaxFeeRate
	}
	results := make([]*btcjson.TestMempoolAcceptResult, 0, len(txs))
	for _, tx := range txs {
		item := &btcjson.TestMempoolAcceptResult{Txid: tx.Hash().String(), Wtxid: tx.WitnessHash().String()}
		results = append(results, item)
		r, err := pool.CheckMempoolAcceptance(tx)
		if err != nil {
			item.RejectReason = err.Error()
			continue
		}
		if r.MissingParents != nil {
			item.RejectReason = "missing-inputs"
			continue
		}
		rate := (r.TxFee * 1e3 / btcutil.Amount(r.TxSize)).ToBTC()
		if rate > maxFeeRate {
			item.RejectReason = "max-fee-exceeded"
			continue
		}
		item.Allowed = true
		item.Vsize = int32(r.TxSize)
		item.Fees = &btcjson.TestMempoolAcceptFees{Base: r.TxFee.ToBTC(), EffectiveFeeRate: rate}
	}
	return results, nil
}

// handleGetTxSpendingPrevOut answers gettxspendingprevout.
func handleGetTxSpendingPrevOut(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetTxSpendingPrevOutCmd)
	pool, err := s.pool()
	if err != nil {
		return nil, err
	}
	results := make([]*btcjson.GetTxSpendingPrevOutResult, 0, len(c.Outputs))
	for _, o := range c.Outputs {
		h, err := chainhash.NewHashFromStr(o.Txid)
		if err != nil {
			return nil, decodeHexError(o.Txid)
		}
		r := &btcjson.GetTxSpendingPrevOutResult{Txid: h.String(), Vout: o.Vout}
		if tx := pool.CheckSpend(wire.OutPoint{Hash: *h, Index: o.Vout}); tx != nil {
			r.SpendingTxid = tx.Hash().String()
		}
		results = append(results, r)
	}
	return results, nil
}

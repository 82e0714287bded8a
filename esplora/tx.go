package esplora

import (
	"bytes"
	"encoding/hex"
	"errors"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// cachedTx is a transaction read for a request, with where it is.
type cachedTx struct {
	tx        *wire.MsgTx
	raw       []byte
	confirmed bool
	loc       indexers.TxLocation
}

// lookupTx returns a transaction from the index, else from the mempool
// view; nil when neither holds it. Transactions are read once per request.
func (s *Server) lookupTx(q *request, txid chainhash.Hash) (*cachedTx, error) {
	if c, ok := q.txs[txid]; ok {
		return c, nil
	}
	c, err := s.readTx(txid)
	if err != nil || c == nil {
		return nil, err
	}
	q.txs[txid] = c
	return c, nil
}

// requestedTx parses the txid of a request's path and reads its
// transaction; errTxNotFound when there is none.
func (s *Server) requestedTx(q *request, txidStr string) (*cachedTx, error) {
	txid, err := parseTxid(txidStr)
	if err != nil {
		return nil, err
	}
	c, err := s.lookupTx(q, txid)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errTxNotFound
	}
	return c, nil
}

// readTx reads a transaction: confirmed, else unconfirmed, else confirmed
// again (it may have been mined between the two reads).
func (s *Server) readTx(txid chainhash.Hash) (*cachedTx, error) {
	for attempt := 0; attempt < 2; attempt++ {
		raw, loc, err := s.index.RawTx(txid)
		switch {
		case err == nil:
			return parseCached(raw, true, loc)
		case !errors.Is(err, indexers.ErrNotFound):
			return nil, err
		}
		if raw, ok := s.index.MempoolTx(txid); ok {
			return parseCached(raw, false, indexers.TxLocation{})
		}
	}
	return nil, nil
}

func parseCached(raw []byte, confirmed bool, loc indexers.TxLocation) (*cachedTx, error) {
	tx := new(wire.MsgTx)
	if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return &cachedTx{tx: tx, raw: raw, confirmed: confirmed, loc: loc}, nil
}

// prevOut returns the output an input spends, nil when it cannot be found.
func (s *Server) prevOut(q *request, op wire.OutPoint) (*wire.TxOut, error) {
	c, err := s.lookupTx(q, op.Hash)
	if err != nil || c == nil || int(op.Index) >= len(c.tx.TxOut) {
		return nil, err
	}
	return c.tx.TxOut[op.Index], nil
}

// Transaction JSON, field for field and in electrs' order.
type txOutValue struct {
	ScriptPubKey     string `json:"scriptpubkey"`
	ScriptPubKeyAsm  string `json:"scriptpubkey_asm"`
	ScriptPubKeyType string `json:"scriptpubkey_type"`
	ScriptPubKeyAddr string `json:"scriptpubkey_address,omitempty"`
	Value            int64  `json:"value"`
}

type txInValue struct {
	TxID                 string      `json:"txid"`
	Vout                 uint32      `json:"vout"`
	Prevout              *txOutValue `json:"prevout"`
	ScriptSig            string      `json:"scriptsig"`
	ScriptSigAsm         string      `json:"scriptsig_asm"`
	Witness              []string    `json:"witness,omitempty"`
	IsCoinbase           bool        `json:"is_coinbase"`
	Sequence             uint32      `json:"sequence"`
	InnerRedeemScriptAsm *string     `json:"inner_redeemscript_asm,omitempty"`
	InnerWitnessAsm      *string     `json:"inner_witnessscript_asm,omitempty"`
}

type txStatus struct {
	Confirmed   bool   `json:"confirmed"`
	BlockHeight *int32 `json:"block_height,omitempty"`
	BlockHash   string `json:"block_hash,omitempty"`
	BlockTime   *int64 `json:"block_time,omitempty"`
}

type txValue struct {
	TxID     string       `json:"txid"`
	Version  uint32       `json:"version"`
	Locktime uint32       `json:"locktime"`
	Vin      []txInValue  `json:"vin"`
	Vout     []txOutValue `json:"vout"`
	Size     int          `json:"size"`
	Weight   int64        `json:"weight"`
	Fee      int64        `json:"fee"`
	Status   txStatus     `json:"status"`
}

func (s *Server) outValue(o *wire.TxOut) txOutValue {
	return txOutValue{
		ScriptPubKey:     hex.EncodeToString(o.PkScript),
		ScriptPubKeyAsm:  scriptAsm(o.PkScript),
		ScriptPubKeyType: scriptType(o.PkScript),
		ScriptPubKeyAddr: scriptAddress(o.PkScript, s.index.ChainParams()),
		Value:            o.Value,
	}
}

// status returns a transaction's status: its block when confirmed.
func (s *Server) status(c *cachedTx) (txStatus, error) {
	if !c.confirmed {
		return txStatus{}, nil
	}
	return s.statusAt(c.loc.Height, c.loc.BlockHash)
}

func (s *Server) statusAt(height int32, hash chainhash.Hash) (txStatus, error) {
	header, err := s.chain.HeaderByHash(&hash)
	if err != nil {
		return txStatus{}, err
	}
	t := header.Timestamp.Unix()
	h := height
	return txStatus{Confirmed: true, BlockHeight: &h, BlockHash: hash.String(), BlockTime: &t}, nil
}

// txJSON builds a transaction's Esplora form; the prevouts of its inputs
// come from the transactions that created them.
func (s *Server) txJSON(q *request, c *cachedTx) (*txValue, error) {
	tx := c.tx
	v := &txValue{
		TxID:     tx.TxHash().String(),
		Version:  uint32(tx.Version),
		Locktime: tx.LockTime,
		Vin:      make([]txInValue, len(tx.TxIn)),
		Vout:     make([]txOutValue, len(tx.TxOut)),
		Size:     tx.SerializeSize(),
		Weight:   blockchain.GetTransactionWeight(btcutil.NewTx(tx)),
	}
	coinbase := blockchain.IsCoinBaseTx(tx)
	var in, out int64
	missing := false
	for i, txin := range tx.TxIn {
		vin := txInValue{
			TxID:         txin.PreviousOutPoint.Hash.String(),
			Vout:         txin.PreviousOutPoint.Index,
			ScriptSig:    hex.EncodeToString(txin.SignatureScript),
			ScriptSigAsm: scriptAsm(txin.SignatureScript),
			IsCoinbase:   coinbase,
			Sequence:     txin.Sequence,
		}
		for _, w := range txin.Witness {
			vin.Witness = append(vin.Witness, hex.EncodeToString(w))
		}
		if !coinbase {
			prev, err := s.prevOut(q, txin.PreviousOutPoint)
			if err != nil {
				return nil, err
			}
			if prev == nil {
				missing = true
			} else {
				in += prev.Value
				pv := s.outValue(prev)
				vin.Prevout = &pv
				redeem, wscript, hasRedeem, hasWitness := innerScripts(txin, prev.PkScript)
				if hasRedeem {
					a := scriptAsm(redeem)
					vin.InnerRedeemScriptAsm = &a
				}
				if hasWitness {
					a := scriptAsm(wscript)
					vin.InnerWitnessAsm = &a
				}
			}
		}
		v.Vin[i] = vin
	}
	for i, o := range tx.TxOut {
		v.Vout[i] = s.outValue(o)
		out += o.Value
	}
	if !coinbase && !missing {
		v.Fee = in - out
	}
	st, err := s.status(c)
	if err != nil {
		return nil, err
	}
	v.Status = st
	return v, nil
}

// parseTxid parses a txid as displayed (byte-reversed hex).
func parseTxid(s string) (chainhash.Hash, error) {
	if len(s) != 2*chainhash.HashSize {
		return chainhash.Hash{}, errInvalidHex
	}
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		return chainhash.Hash{}, errInvalidHex
	}
	return *h, nil
}

// tipHeightNow returns the index tip's height, for cache lifetimes.
func (s *Server) tipHeightNow() int32 {
	tip, err := s.index.ChainTip()
	if err != nil {
		return 0
	}
	return tip.Height
}

// GET /tx/:txid
func (s *Server) tx(q *request, txidStr string) (*reply, error) {
	c, err := s.requestedTx(q, txidStr)
	if err != nil {
		return nil, err
	}
	v, err := s.txJSON(q, c)
	if err != nil {
		return nil, err
	}
	return jsonReply(v, ttlByDepth(c.loc.Height, s.tipHeightNow(), c.confirmed))
}

// GET /tx/:txid/hex and /tx/:txid/raw
func (s *Server) txRaw(q *request, txidStr string, asHex bool) (*reply, error) {
	c, err := s.requestedTx(q, txidStr)
	if err != nil {
		return nil, err
	}
	ttl := ttlByDepth(c.loc.Height, s.tipHeightNow(), c.confirmed)
	if asHex {
		return textReply(hex.EncodeToString(c.raw), ttl), nil
	}
	return &reply{"application/octet-stream", c.raw, ttl}, nil
}

// GET /tx/:txid/status: unconfirmed for any transaction not in the chain,
// as electrs answers.
func (s *Server) txStatus(txidStr string) (*reply, error) {
	txid, err := parseTxid(txidStr)
	if err != nil {
		return nil, err
	}
	loc, err := s.index.TxLocation(txid)
	if errors.Is(err, indexers.ErrNotFound) {
		return jsonReply(txStatus{}, ttlShort)
	}
	if err != nil {
		return nil, err
	}
	st, err := s.statusAt(loc.Height, loc.BlockHash)
	if err != nil {
		return nil, err
	}
	return jsonReply(st, ttlByDepth(loc.Height, s.tipHeightNow(), true))
}

package electrum

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/btcsuite/btcd/address/v2/bech32"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// MaxPackageTxs is the largest package accepted, as Bitcoin Core's
// MAX_PACKAGE_COUNT.
const MaxPackageTxs = 25

// rejected formats a broadcast rejection as ElectrumX does.
func rejected(msg, rawHex string) *RPCError {
	return badRequest("the transaction was rejected by network rules.\n\n%s\n[%s]", msg, echo(rawHex))
}

// decodeTx parses a hex transaction.
func decodeTx(rawHex string) (*wire.MsgTx, error) {
	raw, err := hex.DecodeString(rawHex)
	if err != nil {
		return nil, errors.New("TX decode failed: invalid hex")
	}
	var tx wire.MsgTx
	r := bytes.NewReader(raw)
	if err := tx.Deserialize(r); err != nil {
		return nil, errors.New("TX decode failed: " + err.Error())
	}
	// As bitcoind, which refuses a transaction followed by anything.
	if r.Len() != 0 {
		return nil, errors.New("TX decode failed: bytes after the transaction")
	}
	return &tx, nil
}

// hBroadcast submits a transaction and returns its txid.
func hBroadcast(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	rawHex, err := argString(args[0], "raw_tx")
	if err != nil {
		return nil, err
	}
	ss.charge(float64(len(rawHex)) / 5000)
	tx, err := decodeTx(rawHex)
	if err != nil {
		return nil, rejected(err.Error(), rawHex)
	}
	if err := ss.srv.backend.SendRawTransaction(tx); err != nil {
		return nil, rejected(err.Error(), rawHex)
	}
	return tx.TxHash().String(), nil
}

// packageError is one failed member in a broadcast_package answer.
type packageError struct {
	TxID  string `json:"txid"`
	Error string `json:"error"`
}

// hBroadcastPackage checks a package's shape (parents first, child last)
// and submits it through the backend's SubmitPackage; see doc.go for how
// this differs from Bitcoin Core's submitpackage.
func hBroadcastPackage(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	var raws []string
	if json.Unmarshal(args[0], &raws) != nil {
		return nil, badRequest("raw_txs should be a list of hex transactions")
	}
	verbose, err := argBool(args[1], false)
	if err != nil {
		return nil, err
	}
	if len(raws) == 0 || len(raws) > MaxPackageTxs {
		return nil, badRequest("the tx package was rejected by network rules.\n\npackage must hold 1 to %d transactions", MaxPackageTxs)
	}
	txs := make([]*wire.MsgTx, len(raws))
	seen := make(map[chainhash.Hash]struct{}, len(raws))
	for i, r := range raws {
		ss.charge(float64(len(r)) / 5000)
		tx, err := decodeTx(r)
		if err != nil {
			return nil, badRequest("the tx package was rejected by network rules.\n\n%s", err)
		}
		h := tx.TxHash()
		if _, dup := seen[h]; dup {
			return nil, badRequest("the tx package was rejected by network rules.\n\npackage contains duplicate transactions")
		}
		seen[h] = struct{}{}
		txs[i] = tx
	}
	// submitpackage's default maxburnamount is 0.
	for _, tx := range txs {
		if BurnsOver(tx, 0) {
			return nil, badRequest("the tx package was rejected by network rules.\n\n%v", ErrMaxBurn)
		}
	}
	if !ChildWithParents(txs) {
		return nil, badRequest("the tx package was rejected by network rules.\n\n" +
			"package topology disallowed. not child-with-parents or parents depend on each other.")
	}
	res := ss.srv.backend.SubmitPackage(txs, DefaultMaxFeeRate)
	var errs []packageError
	for _, tx := range txs {
		if r, ok := res.Results[tx.WitnessHash().String()]; ok && r.Error != "" {
			// A refused member costs what a refused broadcast does.
			ss.charge(errorCost)
			errs = append(errs, packageError{TxID: r.TxID, Error: r.Error})
		}
	}
	if verbose {
		return res, nil
	}
	out := map[string]any{"success": res.Msg == "success"}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	return out, nil
}

// ChildWithParents reports whether txs is one transaction, or a child
// (the last) with its parents, none of which spends another: the only
// packages Bitcoin Core's submitpackage takes. The parents come first
// then, in any order.
func ChildWithParents(txs []*wire.MsgTx) bool {
	if len(txs) == 1 {
		return true
	}
	spentByChild := make(map[chainhash.Hash]struct{})
	for _, in := range txs[len(txs)-1].TxIn {
		spentByChild[in.PreviousOutPoint.Hash] = struct{}{}
	}
	parents := make(map[chainhash.Hash]struct{}, len(txs)-1)
	for _, tx := range txs[:len(txs)-1] {
		h := tx.TxHash()
		if _, ok := spentByChild[h]; !ok {
			return false
		}
		parents[h] = struct{}{}
	}
	for _, tx := range txs[:len(txs)-1] {
		for _, in := range tx.TxIn {
			if _, ok := parents[in.PreviousOutPoint.Hash]; ok {
				return false
			}
		}
	}
	return true
}

// vsize is the virtual size of tx.
func vsize(tx *wire.MsgTx) int64 {
	w := blockchain.GetTransactionWeight(btcutil.NewTx(tx))
	return (w + 3) / 4
}

// hTxGet returns a transaction in hex, or in Bitcoin Core's
// getrawtransaction verbose shape.
func hTxGet(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	txid, err := argTxHash(args[0])
	if err != nil {
		return nil, err
	}
	verbose, err := argBool(args[1], false)
	if err != nil {
		return nil, err
	}
	b := ss.srv.backend
	raw, loc, err := b.RawTx(txid)
	confirmed := err == nil
	if err != nil {
		if !notFound(err) {
			return nil, internal("raw tx", err)
		}
		var ok bool
		raw, ok = b.MempoolTx(txid)
		if !ok {
			return nil, rpcErrorf(codeDaemonError, "daemon error: No such mempool or blockchain transaction. Use gettransaction for wallet transactions. (txid %s)", txid)
		}
	}
	if !verbose {
		return hex.EncodeToString(raw), nil
	}
	var tx wire.MsgTx
	if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
		return nil, internal("decoding stored tx", err)
	}
	res := verboseTx(&tx, raw, b.ChainParams())
	if confirmed {
		tip, err := b.ChainTip()
		if err != nil {
			return nil, internal("tip", err)
		}
		hdr, err := b.BlockHeader(loc.Height)
		if err != nil {
			return nil, internal("header", err)
		}
		res.BlockHash = loc.BlockHash.String()
		res.Confirmations = uint64(tip.Height-loc.Height) + 1
		res.Time = hdr.Timestamp.Unix()
		res.Blocktime = hdr.Timestamp.Unix()
	}
	return res, nil
}

// verboseResult is the getrawtransaction-style description of a
// transaction: btcd's, with inputs written as bitcoind writes them.
type verboseResult struct {
	btcjson.TxRawResult
	Vin []verboseVin `json:"vin"`
}

// verboseVin is an input. btcd names a coinbase input's witness "witness",
// bitcoind (and so ElectrumX) "txinwitness", as for any other input.
type verboseVin struct{ btcjson.Vin }

func (v verboseVin) MarshalJSON() ([]byte, error) {
	if !v.IsCoinBase() {
		return v.Vin.MarshalJSON()
	}
	return json.Marshal(struct {
		Coinbase    string   `json:"coinbase"`
		Txinwitness []string `json:"txinwitness,omitempty"`
		Sequence    uint32   `json:"sequence"`
	}{v.Coinbase, v.Witness, v.Sequence})
}

// verboseTx builds the getrawtransaction-style description of tx.
func verboseTx(tx *wire.MsgTx, raw []byte, params *chaincfg.Params) *verboseResult {
	weight := blockchain.GetTransactionWeight(btcutil.NewTx(tx))
	res := &verboseResult{Vin: make([]verboseVin, len(tx.TxIn))}
	res.TxRawResult = btcjson.TxRawResult{
		Hex:      hex.EncodeToString(raw),
		Txid:     tx.TxHash().String(),
		Hash:     tx.WitnessHash().String(),
		Size:     int32(tx.SerializeSize()),
		Vsize:    int32((weight + 3) / 4),
		Weight:   int32(weight),
		Version:  uint32(tx.Version),
		LockTime: tx.LockTime,
		Vout:     make([]btcjson.Vout, len(tx.TxOut)),
	}
	coinbase := blockchain.IsCoinBaseTx(tx)
	for i, in := range tx.TxIn {
		var wit []string
		for _, w := range in.Witness {
			wit = append(wit, hex.EncodeToString(w))
		}
		if coinbase {
			res.Vin[i].Vin = btcjson.Vin{Coinbase: hex.EncodeToString(in.SignatureScript), Sequence: in.Sequence, Witness: wit}
			continue
		}
		asm, _ := txscript.DisasmString(in.SignatureScript)
		res.Vin[i].Vin = btcjson.Vin{
			Txid:      in.PreviousOutPoint.Hash.String(),
			Vout:      in.PreviousOutPoint.Index,
			ScriptSig: &btcjson.ScriptSig{Asm: asm, Hex: hex.EncodeToString(in.SignatureScript)},
			Sequence:  in.Sequence,
			Witness:   wit,
		}
	}
	for i, out := range tx.TxOut {
		asm, _ := txscript.DisasmString(out.PkScript)
		class, addrs, _, _ := txscript.ExtractPkScriptAddrs(out.PkScript, params)
		spk := btcjson.ScriptPubKeyResult{Asm: asm, Hex: hex.EncodeToString(out.PkScript), Type: class.String()}
		switch {
		case class == txscript.NonStandardTy:
			spk.Type, spk.Address = coreNonStandard(out.PkScript, params)
		// As bitcoind: a bare key or multisig output has no address.
		case len(addrs) == 1 && class != txscript.PubKeyTy && class != txscript.MultiSigTy:
			spk.Address = addrs[0].EncodeAddress()
		}
		res.Vout[i] = btcjson.Vout{Value: btcutil.Amount(out.Value).ToBTC(), N: uint32(i), ScriptPubKey: spk}
	}
	return res
}

// coreNonStandard returns Bitcoin Core's type and address of an output
// script btcd classes nonstandard. Core's nulldata is OP_RETURN followed by
// push opcodes only (up to OP_16), however many and however large; btcd's
// is one push of up to 80 bytes. A witness program of version 1 or more
// other than taproot and the anchor (which btcd classes) is Core's
// witness_unknown, with its bech32m address.
func coreNonStandard(script []byte, params *chaincfg.Params) (typ, addr string) {
	if len(script) > 0 && script[0] == txscript.OP_RETURN && txscript.IsPushOnlyScript(script[1:]) {
		return txscript.NullDataTy.String(), ""
	}
	if version, program, err := txscript.ExtractWitnessProgramInfo(script); err == nil && version != 0 {
		data, err := bech32.ConvertBits(program, 8, 5, true)
		if err == nil {
			addr, err = bech32.EncodeM(params.Bech32HRPSegwit, append([]byte{byte(version)}, data...))
		}
		if err == nil {
			return txscript.WitnessUnknownTy.String(), addr
		}
	}
	return txscript.NonStandardTy.String(), ""
}

// merkleResult is the blockchain.transaction.get_merkle result.
type merkleResult struct {
	BlockHeight int32    `json:"block_height"`
	Merkle      []string `json:"merkle"`
	Pos         int      `json:"pos"`
}

// blockTxIDs returns the txids of the block at height, with a protocol
// error for a height without a block.
func (s *Server) blockTxIDs(height int64) ([]chainhash.Hash, error) {
	tip, err := s.backend.ChainTip()
	if err != nil {
		return nil, internal("tip", err)
	}
	if height > int64(tip.Height) {
		return nil, heightError(height)
	}
	ids, err := s.backend.BlockTxIDs(int32(height))
	if err != nil {
		if notFound(err) {
			return nil, heightError(height)
		}
		return nil, internal("block txids", err)
	}
	return ids, nil
}

// hTxGetMerkle proves a confirmed transaction into its block.
func hTxGetMerkle(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	txid, err := argTxHash(args[0])
	if err != nil {
		return nil, err
	}
	height, err := argInt(args[1], "height")
	if err != nil {
		return nil, err
	}
	ids, err := ss.srv.blockTxIDs(height)
	if err != nil {
		if _, ok := err.(*RPCError); ok {
			return nil, badRequest("tx %s not in block at height %d", txid, height)
		}
		return nil, err
	}
	ss.charge(float64(len(ids)) / 2500)
	pos := -1
	for i := range ids {
		if ids[i] == txid {
			pos = i
			break
		}
	}
	if pos < 0 {
		return nil, badRequest("tx %s not in block at height %d", txid, height)
	}
	branch, _ := merkleBranch(ids, pos, -1)
	return merkleResult{BlockHeight: int32(height), Merkle: hashesHex(branch), Pos: pos}, nil
}

// hIDFromPos returns the txid at a block position, optionally with its
// merkle branch.
func hIDFromPos(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	height, err := argInt(args[0], "height")
	if err != nil {
		return nil, err
	}
	pos, err := argInt(args[1], "tx_pos")
	if err != nil {
		return nil, err
	}
	withMerkle, err := argBool(args[2], false)
	if err != nil {
		return nil, err
	}
	ids, err := ss.srv.blockTxIDs(height)
	if err != nil {
		return nil, err
	}
	if pos >= int64(len(ids)) {
		return nil, badRequest("no tx at position %d in block at height %d", pos, height)
	}
	if !withMerkle {
		return ids[pos].String(), nil
	}
	ss.charge(float64(len(ids)) / 2500)
	branch, _ := merkleBranch(ids, int(pos), -1)
	return map[string]any{"tx_hash": ids[pos].String(), "merkle": hashesHex(branch)}, nil
}

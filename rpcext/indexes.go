package rpcext

import (
	"encoding/hex"
	"errors"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// IndexBackend is implemented by a Backend that keeps btcd's optional
// indexes: the committed filter index (getcfilter, getcfilterheader) and the
// address index (searchrawtransactions). A Backend without it answers those
// methods as btcd does with the index disabled.
type IndexBackend interface {
	// CFilter returns the serialized BIP 158 filter of a block (nil for a
	// block the index does not hold), or ErrIndexDisabled.
	CFilter(hash *chainhash.Hash, filterType wire.FilterType) ([]byte, error)

	// CFilterHeader returns the filter header of a block (nil for a block
	// the index does not hold), or ErrIndexDisabled.
	CFilterHeader(hash *chainhash.Hash, filterType wire.FilterType) ([]byte, error)

	// AddressTxs returns the transactions paying or spending addr, as btcd's
	// searchrawtransactions selects them: confirmed ones in chain order
	// then mempool ones (mempool first, newest first, when reverse), skip
	// skipped, at most count. ErrIndexDisabled without the address index.
	AddressTxs(addr address.Address, skip, count int, reverse bool) ([]AddressTx, error)
}

// AddressTx is one transaction found through the address index.
type AddressTx struct {
	Tx *wire.MsgTx
	// BlockHash is the main-chain block holding it; nil in the mempool.
	BlockHash *chainhash.Hash
}

// ErrIndexDisabled is returned by an IndexBackend for an index the node
// does not keep.
var ErrIndexDisabled = errors.New("index disabled")

// indexMethods are the methods of btcd's optional indexes; methods.go adds
// them to the method table.
var indexMethods = map[string]method{
	"getcfilter": {handleGetCFilter,
		"Returns the hex-encoded BIP 158 committed filter of a block (needs the compact filter index, on unless --nocfilters)."},
	"getcfilterheader": {handleGetCFilterHeader,
		"Returns the BIP 157 filter header of a block (needs the compact filter index, on unless --nocfilters)."},
	"searchrawtransactions": {handleSearchRawTransactions,
		"Returns the transactions paying or spending an address (needs --addrindex)."},
}

// indexBackend returns the backend's index methods, or nil.
func (s *Server) indexBackend() IndexBackend {
	ib, _ := s.cfg.Backend.(IndexBackend)
	return ib
}

// errNoCFIndex is btcd's answer without the committed filter index.
var errNoCFIndex = btcjson.NewRPCError(btcjson.ErrRPCNoCFIndex, "The CF index must be enabled for this command")

// handleGetCFilter answers getcfilter.
func handleGetCFilter(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetCFilterCmd)
	ib := s.indexBackend()
	if ib == nil {
		return nil, errNoCFIndex
	}
	hash, err := parseHash(c.Hash)
	if err != nil {
		return nil, err
	}
	f, err := ib.CFilter(hash, c.FilterType)
	if errors.Is(err, ErrIndexDisabled) {
		return nil, errNoCFIndex
	}
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Block not found")
	}
	return hex.EncodeToString(f), nil
}

// handleGetCFilterHeader answers getcfilterheader.
func handleGetCFilterHeader(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetCFilterHeaderCmd)
	ib := s.indexBackend()
	if ib == nil {
		return nil, errNoCFIndex
	}
	hash, err := parseHash(c.Hash)
	if err != nil {
		return nil, err
	}
	h, err := ib.CFilterHeader(hash, c.FilterType)
	if errors.Is(err, ErrIndexDisabled) {
		return nil, errNoCFIndex
	}
	if err != nil || len(h) != chainhash.HashSize {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Block not found")
	}
	var out chainhash.Hash
	copy(out[:], h)
	return out.String(), nil
}

// handleSearchRawTransactions answers searchrawtransactions as btcd: hex
// strings (verbose=0) or verbose results whose inputs carry the spent
// outputs' addresses and values with vinextra, and whose inputs and outputs
// are narrowed to filteraddrs when given.
func handleSearchRawTransactions(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.SearchRawTransactionsCmd)
	noIndex := btcjson.NewRPCError(btcjson.ErrRPCMisc, "Address index must be enabled (--addrindex)")
	ib := s.indexBackend()
	if ib == nil {
		return nil, noIndex
	}
	params := s.cfg.Params
	addr, err := address.DecodeAddress(c.Address, params)
	if err != nil || !addr.IsForNet(params) {
		msg := "Invalid address or key"
		if err != nil {
			msg += ": " + err.Error()
		}
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey, msg)
	}
	count := 100
	if c.Count != nil {
		count = *c.Count
		if count < 0 {
			count = 1
		}
	}
	if count == 0 {
		return nil, nil
	}
	skip := 0
	if c.Skip != nil && *c.Skip > 0 {
		skip = *c.Skip
	}
	reverse := c.Reverse != nil && *c.Reverse
	vinExtra := c.VinExtra != nil && *c.VinExtra != 0

	txs, err := ib.AddressTxs(addr, skip, count, reverse)
	if errors.Is(err, ErrIndexDisabled) {
		return nil, noIndex
	}
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code,
			"Failed to load address index entries: "+err.Error())
	}
	if len(txs) == 0 {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCNoTxInfo, "No information available about address")
	}
	hexes := make([]string, len(txs))
	for i, t := range txs {
		if hexes[i], err = txHex(t.Tx); err != nil {
			return nil, err
		}
	}
	if c.Verbose != nil && *c.Verbose == 0 {
		return hexes, nil
	}

	filter := make(map[string]struct{})
	if c.FilterAddrs != nil {
		for _, a := range *c.FilterAddrs {
			filter[a] = struct{}{}
		}
	}
	best := s.cfg.Chain.BestSnapshot()
	out := make([]btcjson.SearchRawTransactionsResult, len(txs))
	for i, t := range txs {
		mtx := t.Tx
		raw, err := txRawResult(params, mtx, nil)
		if err != nil {
			return nil, err
		}
		r := &out[i]
		r.Hex, r.Txid, r.Hash = hexes[i], raw.Txid, raw.Hash
		// As btcd, size, vsize and weight are left empty.
		r.Version, r.LockTime = mtx.Version, mtx.LockTime
		r.Vin = s.vinPrevOuts(mtx, vinExtra, filter)
		r.Vout = raw.Vout
		if len(filter) > 0 {
			r.Vout = filterVouts(raw.Vout, filter)
		}
		if t.BlockHash != nil {
			header, err := s.cfg.Chain.HeaderByHash(t.BlockHash)
			if err != nil {
				return nil, btcjson.NewRPCError(btcjson.ErrRPCBlockNotFound, "Block not found")
			}
			height, err := s.cfg.Chain.BlockHeightByHash(t.BlockHash)
			if err != nil {
				return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code,
					"Failed to obtain block height: "+err.Error())
			}
			r.Time = header.Timestamp.Unix()
			r.Blocktime = r.Time
			r.BlockHash = t.BlockHash.String()
			r.Confirmations = uint64(1 + best.Height - height)
		}
	}
	return out, nil
}

// filterVouts keeps the outputs paying one of the filter addresses.
func filterVouts(vouts []btcjson.Vout, filter map[string]struct{}) []btcjson.Vout {
	out := make([]btcjson.Vout, 0, len(vouts))
	for _, v := range vouts {
		for _, a := range v.ScriptPubKey.Addresses {
			if _, ok := filter[a]; ok {
				out = append(out, v)
				break
			}
		}
	}
	return out
}

// vinPrevOuts describes a transaction's inputs as btcd's searchrawtransactions:
// with the spent outputs' addresses and values when vinExtra, and only the
// inputs spending from a filter address when a filter is given. Spent
// outputs are looked up in the mempool and through the backend's confirmed
// transactions; an input whose output is not found has no prevOut.
func (s *Server) vinPrevOuts(mtx *wire.MsgTx, vinExtra bool, filter map[string]struct{}) []btcjson.VinPrevOut {
	if blockchain.IsCoinBaseTx(mtx) {
		if len(filter) != 0 {
			return nil
		}
		in := mtx.TxIn[0]
		return []btcjson.VinPrevOut{{Coinbase: hex.EncodeToString(in.SignatureScript), Sequence: in.Sequence}}
	}
	vins := make([]btcjson.VinPrevOut, 0, len(mtx.TxIn))
	prevTxs := make(map[chainhash.Hash]*wire.MsgTx)
	for _, in := range mtx.TxIn {
		asm, _ := txscript.DisasmString(in.SignatureScript)
		op := in.PreviousOutPoint
		v := btcjson.VinPrevOut{
			Txid:      op.Hash.String(),
			Vout:      op.Index,
			Sequence:  in.Sequence,
			ScriptSig: &btcjson.ScriptSig{Asm: asm, Hex: hex.EncodeToString(in.SignatureScript)},
		}
		if len(in.Witness) != 0 {
			v.Witness = in.Witness.ToHexStrings()
		}
		if !vinExtra && len(filter) == 0 {
			vins = append(vins, v)
			continue
		}
		prev, ok := prevTxs[op.Hash]
		if !ok {
			prev = s.lookupTx(&op.Hash)
			prevTxs[op.Hash] = prev
		}
		if prev == nil || int(op.Index) >= len(prev.TxOut) {
			if len(filter) == 0 {
				vins = append(vins, v)
			}
			continue
		}
		txOut := prev.TxOut[op.Index]
		_, addrs, _, _ := txscript.ExtractPkScriptAddrs(txOut.PkScript, s.cfg.Params)
		encoded := make([]string, len(addrs))
		passes := len(filter) == 0
		for j, a := range addrs {
			encoded[j] = a.EncodeAddress()
			if _, ok := filter[encoded[j]]; ok {
				passes = true
			}
		}
		if !passes {
			continue
		}
		if vinExtra {
			v.PrevOut = &btcjson.PrevOut{Addresses: encoded, Value: btcutil.Amount(txOut.Value).ToBTC()}
		}
		vins = append(vins, v)
	}
	return vins
}

// lookupTx finds a transaction in the mempool or confirmed, or returns nil.
func (s *Server) lookupTx(hash *chainhash.Hash) *wire.MsgTx {
	if tx, err := s.cfg.Mempool.FetchTransaction(hash); err == nil {
		return tx.MsgTx()
	}
	if mtx, _, err := s.cfg.Backend.ConfirmedTx(hash); err == nil {
		return mtx
	}
	return nil
}

package rpcext

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// btcdMethods are more of btcd's chain and utility methods, answered as
// btcd v0.26.2 answers them; methods.go adds them to the method table.
var btcdMethods = map[string]method{
	"getblockchaininfo":    {handleGetBlockChainInfo, "Returns the state of the chain and its soft forks."},
	"getcurrentnet":        {handleGetCurrentNet, "Returns the network's magic number."},
	"getdifficulty":        {handleGetDifficulty, "Returns the proof-of-work difficulty of the tip as a multiple of the minimum."},
	"getheaders":           {handleGetHeaders, "Returns hex-encoded main-chain headers after the block locators, up to hashstop."},
	"gettxout":             {handleGetTxOut, "Returns an unspent transaction output (from the mempool too unless includemempool is false), or null."},
	"decoderawtransaction": {handleDecodeRawTransaction, "Decodes a hex-encoded transaction."},
	"decodescript":         {handleDecodeScript, "Decodes a hex-encoded script."},
	"validateaddress":      {handleValidateAddress, "Checks an address and describes it."},
	"version":              {handleVersion, "Returns the JSON-RPC API version."},
}

// The JSON-RPC API version btcd v0.26.2 reports.
const (
	apiVersionString = "1.3.0"
	apiVersionMajor  = 1
	apiVersionMinor  = 3
	apiVersionPatch  = 0
)

// decodeHexError is btcd's answer to a malformed hex argument.
func decodeHexError(s string) error {
	return btcjson.NewRPCError(btcjson.ErrRPCDecodeHexString,
		fmt.Sprintf("Argument must be hexadecimal string (not %q)", truncate(s)))
}

// decodeOddHex decodes hex, left-padding an odd length with a zero as btcd.
func decodeOddHex(s string) ([]byte, error) {
	if len(s)%2 != 0 {
		s = "0" + s
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, decodeHexError(s)
	}
	return b, nil
}

// handleGetCurrentNet answers getcurrentnet.
func handleGetCurrentNet(s *Server, _ interface{}) (interface{}, error) {
	return s.cfg.Params.Net, nil
}

// handleGetDifficulty answers getdifficulty.
func handleGetDifficulty(s *Server, _ interface{}) (interface{}, error) {
	return difficultyRatio(s.cfg.Chain.BestSnapshot().Bits, s.cfg.Params), nil
}

// handleVersion answers version.
func handleVersion(*Server, interface{}) (interface{}, error) {
	return map[string]btcjson.VersionResult{
		"btcdjsonrpcapi": {VersionString: apiVersionString, Major: apiVersionMajor,
			Minor: apiVersionMinor, Patch: apiVersionPatch},
	}, nil
}

// handleValidateAddress answers validateaddress.
func handleValidateAddress(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.ValidateAddressCmd)
	result := btcjson.ValidateAddressChainResult{}
	addr, err := address.DecodeAddress(c.Address, s.cfg.Params)
	if err != nil {
		return result, nil
	}
	switch a := addr.(type) {
	case *address.AddressPubKeyHash, *address.AddressPubKey:
		result.IsScript, result.IsWitness = btcjson.Bool(false), btcjson.Bool(false)
	case *address.AddressScriptHash:
		result.IsScript, result.IsWitness = btcjson.Bool(true), btcjson.Bool(false)
	case *address.AddressWitnessPubKeyHash:
		result.IsScript, result.IsWitness = btcjson.Bool(false), btcjson.Bool(true)
		result.WitnessVersion = btcjson.Int32(int32(a.WitnessVersion()))
		result.WitnessProgram = btcjson.String(hex.EncodeToString(a.WitnessProgram()))
	case *address.AddressWitnessScriptHash:
		result.IsScript, result.IsWitness = btcjson.Bool(true), btcjson.Bool(true)
		result.WitnessVersion = btcjson.Int32(int32(a.WitnessVersion()))
		result.WitnessProgram = btcjson.String(hex.EncodeToString(a.WitnessProgram()))
	}
	result.Address = addr.EncodeAddress()
	result.IsValid = true
	return result, nil
}

// handleDecodeRawTransaction answers decoderawtransaction.
func handleDecodeRawTransaction(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.DecodeRawTransactionCmd)
	raw, err := decodeOddHex(c.HexTx)
	if err != nil {
		return nil, err
	}
	tx, err := btcutil.NewTxFromBytes(raw)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCDeserialization, "TX decode failed: "+err.Error())
	}
	mtx := tx.MsgTx()
	return btcjson.TxRawDecodeResult{
		Txid:     mtx.TxHash().String(),
		Version:  mtx.Version,
		Locktime: mtx.LockTime,
		Vin:      vinList(mtx),
		Vout:     voutList(mtx, s.cfg.Params),
	}, nil
}

// handleDecodeScript answers decodescript.
func handleDecodeScript(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.DecodeScriptCmd)
	script, err := decodeOddHex(c.HexScript)
	if err != nil {
		return nil, err
	}
	asm, _ := txscript.DisasmString(script)
	class, addrs, reqSigs, _ := txscript.ExtractPkScriptAddrs(script, s.cfg.Params)
	encoded := make([]string, len(addrs))
	for i, a := range addrs {
		encoded[i] = a.EncodeAddress()
	}
	p2sh, err := address.NewAddressScriptHash(script, s.cfg.Params)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code,
			"Failed to convert script to pay-to-script-hash: "+err.Error())
	}
	r := btcjson.DecodeScriptResult{Asm: asm, ReqSigs: int32(reqSigs), Type: class.String(), Addresses: encoded}
	if class != txscript.ScriptHashTy {
		r.P2sh = p2sh.EncodeAddress()
	}
	if len(encoded) == 1 && reqSigs <= 1 {
		r.Address = encoded[0]
	}
	return r, nil
}

// utxoChain is the part of btcd's chain gettxout and getheaders read,
// beyond the Chain interface.
type utxoChain interface {
	FetchUtxoEntry(outpoint wire.OutPoint) (*blockchain.UtxoEntry, error)
	LocateHeaders(locator blockchain.BlockLocator, hashStop *chainhash.Hash) []wire.BlockHeader
	ThresholdState(deploymentID uint32) (blockchain.ThresholdState, error)
}

// fullChain returns the chain as btcd's, or an error for a chain that is
// not (only tests use others).
func (s *Server) fullChain() (utxoChain, error) {
	c, ok := s.cfg.Chain.(utxoChain)
	if !ok {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "the chain does not support this method")
	}
	return c, nil
}

// handleGetTxOut answers gettxout: the output of a mempool transaction
// (unless includemempool is false) or an unspent confirmed output; null
// when spent or unknown.
func handleGetTxOut(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetTxOutCmd)
	hash, err := chainhash.NewHashFromStr(c.Txid)
	if err != nil {
		return nil, decodeHexError(c.Txid)
	}
	includeMempool := c.IncludeMempool == nil || *c.IncludeMempool
	best := s.cfg.Chain.BestSnapshot()
	var (
		confirmations int64
		value         int64
		pkScript      []byte
		coinbase      bool
	)
	if tx, err := s.cfg.Mempool.FetchTransaction(hash); includeMempool && err == nil {
		mtx := tx.MsgTx()
		if int(c.Vout) >= len(mtx.TxOut) {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidTxVout,
				"Output index number (vout) does not exist for transaction.")
		}
		value, pkScript = mtx.TxOut[c.Vout].Value, mtx.TxOut[c.Vout].PkScript
		coinbase = blockchain.IsCoinBaseTx(mtx)
	} else {
		chain, err := s.fullChain()
		if err != nil {
			return nil, err
		}
		entry, err := chain.FetchUtxoEntry(wire.OutPoint{Hash: *hash, Index: c.Vout})
		if err != nil {
			return nil, noTxInfo(hash)
		}
		if entry == nil || entry.IsSpent() {
			return nil, nil
		}
		confirmations = int64(1 + best.Height - entry.BlockHeight())
		value, pkScript, coinbase = entry.Amount(), entry.PkScript(), entry.IsCoinBase()
	}
	asm, _ := txscript.DisasmString(pkScript)
	class, addrs, reqSigs, _ := txscript.ExtractPkScriptAddrs(pkScript, s.cfg.Params)
	encoded := make([]string, len(addrs))
	for i, a := range addrs {
		encoded[i] = a.EncodeAddress()
	}
	r := &btcjson.GetTxOutResult{
		BestBlock:     best.Hash.String(),
		Confirmations: confirmations,
		Value:         btcutil.Amount(value).ToBTC(),
		ScriptPubKey: btcjson.ScriptPubKeyResult{Asm: asm, Hex: hex.EncodeToString(pkScript),
			ReqSigs: int32(reqSigs), Type: class.String(), Addresses: encoded},
		Coinbase: coinbase,
	}
	if len(encoded) == 1 && reqSigs <= 1 {
		r.ScriptPubKey.Address = encoded[0]
	}
	return r, nil
}

// handleGetHeaders answers getheaders.
func handleGetHeaders(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetHeadersCmd)
	chain, err := s.fullChain()
	if err != nil {
		return nil, err
	}
	locator := make(blockchain.BlockLocator, len(c.BlockLocators))
	for i, l := range c.BlockLocators {
		h, err := chainhash.NewHashFromStr(l)
		if err != nil {
			return nil, decodeHexError(l)
		}
		locator[i] = h
	}
	var stop chainhash.Hash
	if c.HashStop != "" {
		if err := chainhash.Decode(&stop, c.HashStop); err != nil {
			return nil, decodeHexError(c.HashStop)
		}
	}
	headers := chain.LocateHeaders(locator, &stop)
	out := make([]string, len(headers))
	var buf bytes.Buffer
	for i := range headers {
		buf.Reset()
		if err := headers[i].Serialize(&buf); err != nil {
			return nil, err
		}
		out[i] = hex.EncodeToString(buf.Bytes())
	}
	return out, nil
}

// handleGetBlockChainInfo answers getblockchaininfo as btcd: the tip, the
// buried soft forks and the state of every BIP 9 deployment.
func handleGetBlockChainInfo(s *Server, _ interface{}) (interface{}, error) {
	chain, err := s.fullChain()
	if err != nil {
		return nil, err
	}
	params := s.cfg.Params
	best := s.cfg.Chain.BestSnapshot()
	info := &btcjson.GetBlockChainInfoResult{
		Chain:         params.Name,
		Blocks:        best.Height,
		Headers:       best.Height,
		BestBlockHash: best.Hash.String(),
		Difficulty:    difficultyRatio(best.Bits, params),
		MedianTime:    best.MedianTime.Unix(),
		Pruned:        s.cfg.Pruned,
		SoftForks: &btcjson.SoftForks{
			Bip9SoftForks: make(map[string]*btcjson.Bip9SoftForkDescription),
		},
	}
	buried := func(id string, version int32, height int32) *btcjson.SoftForkDescription {
		d := &btcjson.SoftForkDescription{ID: id, Version: uint32(version)}
		d.Reject.Status = best.Height >= height
		return d
	}
	info.SoftForks.SoftForks = []*btcjson.SoftForkDescription{
		buried("bip34", 2, params.BIP0034Height),
		buried("bip66", 3, params.BIP0066Height),
		buried("bip65", 4, params.BIP0065Height),
	}
	names := map[int]string{
		chaincfg.DeploymentTestDummy:              "dummy",
		chaincfg.DeploymentTestDummyMinActivation: "dummy-min-activation",
		chaincfg.DeploymentTestDummyAlwaysActive:  "dummy-always-active",
		chaincfg.DeploymentCSV:                    "csv",
		chaincfg.DeploymentSegwit:                 "segwit",
		chaincfg.DeploymentTaproot:                "taproot",
	}
	for id, d := range params.Deployments {
		name, ok := names[id]
		if !ok {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, fmt.Sprintf("Unknown deployment %v detected", id))
		}
		state, err := chain.ThresholdState(uint32(id))
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code,
				"Failed to obtain deployment status: "+err.Error())
		}
		var start, end int64
		if st, ok := d.DeploymentStarter.(*chaincfg.MedianTimeDeploymentStarter); ok {
			start = st.StartTime().Unix()
		}
		if en, ok := d.DeploymentEnder.(*chaincfg.MedianTimeDeploymentEnder); ok {
			end = en.EndTime().Unix()
		}
		info.SoftForks.Bip9SoftForks[name] = &btcjson.Bip9SoftForkDescription{
			Status:              thresholdStatus(state),
			Bit:                 d.BitNumber,
			StartTime2:          start,
			Timeout:             end,
			MinActivationHeight: int32(d.MinActivationHeight),
		}
	}
	return info, nil
}

// thresholdStatus is btcd's lower-case name of a deployment state.
func thresholdStatus(s blockchain.ThresholdState) string {
	switch s {
	case blockchain.ThresholdDefined:
		return "defined"
	case blockchain.ThresholdStarted:
		return "started"
	case blockchain.ThresholdLockedIn:
		return "lockedin"
	case blockchain.ThresholdActive:
		return "active"
	case blockchain.ThresholdFailed:
		return "failed"
	}
	return strings.ToLower(s.String())
}

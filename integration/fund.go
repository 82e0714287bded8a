package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// Faucet pays amount to addr's output script (for an
// *address.AddressPubKey its P2PK script) with the node's faucet RPC
// (regtest only, and the Electrum index on: the faucet finds its coins
// there; the node mines and matures coins for it when it has too few) and
// returns the id of the payment, unconfirmed in the mempool.
func (n *Node) Faucet(addr address.Address, amount btcutil.Amount) (*chainhash.Hash, error) {
	if nilAddress(addr) {
		return nil, errors.New("faucet: pay to a nil address")
	}
	raw, err := rawParams(rpcAddress(addr), amount.ToBTC())
	if err != nil {
		return nil, err
	}
	res, err := rpcWithin("faucet", func() (json.RawMessage, error) { return n.RPC.RawRequest(rpcext.FaucetMethod, raw) })
	if err != nil {
		return nil, fmt.Errorf("faucet %v %v: %w", addr, amount, err)
	}
	var txid string
	if err := json.Unmarshal(res, &txid); err != nil {
		return nil, fmt.Errorf("faucet result %s: %w", res, err)
	}
	return chainhash.NewHashFromStr(txid)
}

// Fund pays amount to `to`, an address.Address (its output script: for an
// *address.AddressPubKey the P2PK script) or any output script ([]byte),
// from the node's faucet, mines a block confirming the payment
// and returns its output once the Electrum server reports that block as
// its tip (regtest only, the Electrum index on). A script no address stands for (bare multisig,
// P2PK, anything non-standard the node relays) is paid through
// MiningAddress: the faucet pays that, and a transaction signed with its
// key pays the script.
func (n *Node) Fund(to any, amount btcutil.Amount) (wire.OutPoint, error) {
	addr, pkScript, err := n.payee(to)
	if err != nil {
		return wire.OutPoint{}, err
	}
	var txid *chainhash.Hash
	if addr != nil {
		if txid, err = n.Faucet(addr, amount); err != nil {
			return wire.OutPoint{}, err
		}
	} else if txid, err = n.fundScript(pkScript, amount); err != nil {
		return wire.OutPoint{}, err
	}
	if _, err := n.Mine(1); err != nil {
		return wire.OutPoint{}, err
	}
	res, err := rpcWithin("getrawtransaction", func() (*btcjson.TxRawResult, error) { return n.RPC.GetRawTransactionVerbose(txid) })
	if err != nil {
		return wire.OutPoint{}, fmt.Errorf("getrawtransaction %v: %w", txid, err)
	}
	if res.Confirmations == 0 {
		return wire.OutPoint{}, fmt.Errorf("the block mined after the payment %v did not confirm it", txid)
	}
	tx, err := rpcWithin("getrawtransaction", func() (*btcutil.Tx, error) { return n.RPC.GetRawTransaction(txid) })
	if err != nil {
		return wire.OutPoint{}, fmt.Errorf("getrawtransaction %v: %w", txid, err)
	}
	for i, out := range tx.MsgTx().TxOut {
		if out.Value == int64(amount) && bytes.Equal(out.PkScript, pkScript) {
			return wire.OutPoint{Hash: *txid, Index: uint32(i)}, nil
		}
	}
	return wire.OutPoint{}, fmt.Errorf("payment %v has no output of %v to %x", txid, amount, pkScript)
}

// fundScriptFee is the fee of the transaction that pays a script without
// an address from a faucet payment to MiningAddress.
const fundScriptFee = 2_000

// fundScript pays amount to pkScript in two steps: the faucet pays
// amount plus a fee to MiningAddress, and a transaction signed with its key
// spends that output to pkScript. It returns the second transaction's id.
func (n *Node) fundScript(pkScript []byte, amount btcutil.Amount) (*chainhash.Hash, error) {
	mining := MiningAddressOn(n.params)
	first, err := n.Faucet(mining, amount+fundScriptFee)
	if err != nil {
		return nil, err
	}
	tx, err := rpcWithin("getrawtransaction", func() (*btcutil.Tx, error) { return n.RPC.GetRawTransaction(first) })
	if err != nil {
		return nil, fmt.Errorf("getrawtransaction %v: %w", first, err)
	}
	for i, out := range tx.MsgTx().TxOut {
		if out.Value != int64(amount+fundScriptFee) || !bytes.Equal(out.PkScript, MiningScript()) {
			continue
		}
		spend, err := SpendMined(wire.OutPoint{Hash: *first, Index: uint32(i)}, out.Value, pkScript, fundScriptFee)
		if err != nil {
			return nil, err
		}
		return n.SendRaw(spend)
	}
	return nil, fmt.Errorf("faucet payment %v has no output of %v to MiningAddress", first, amount+fundScriptFee)
}

// payee returns the address (nil when none stands for the script) and the
// output script Fund pays to.
func (n *Node) payee(to any) (address.Address, []byte, error) {
	switch v := to.(type) {
	case address.Address:
		if nilAddress(v) {
			return nil, nil, errors.New("fund: pay to a nil address")
		}
		if !v.IsForNet(n.params) {
			return nil, nil, fmt.Errorf("address %v is not for %s", v, n.params.Name)
		}
		s, err := txscript.PayToAddrScript(v)
		return v, s, err
	case []byte:
		class, addrs, _, err := txscript.ExtractPkScriptAddrs(v, n.params)
		if err == nil && len(addrs) == 1 && class != txscript.PubKeyTy && class != txscript.MultiSigTy {
			return addrs[0], v, nil
		}
		return nil, v, nil
	}
	return nil, nil, fmt.Errorf("fund: pay to an address.Address or an output script, not %T", to)
}

// rpcAddress returns addr as the node's RPC takes it to pay addr's output
// script: the EncodeAddress of an *address.AddressPubKey is the key's
// P2PKH address, while its String, the key in hex, decodes back to the
// pay-to-pubkey address.
func rpcAddress(addr address.Address) string {
	if pk, ok := addr.(*address.AddressPubKey); ok {
		return pk.String()
	}
	return addr.EncodeAddress()
}

// nilAddress reports whether addr is nil or a nil pointer (an address a
// test failed to decode): the address methods dereference it, some in a
// goroutine of the RPC client, where the panic ends the whole test binary.
func nilAddress(addr address.Address) bool {
	if addr == nil {
		return true
	}
	v := reflect.ValueOf(addr)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

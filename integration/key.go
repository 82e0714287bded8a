package integration

import (
	"bytes"
	"fmt"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// miningKey is the well-known key of MiningAddress; it exists so tests can
// spend what the nodes mine. Never use it outside regtest.
var miningKey, miningPub = btcec.PrivKeyFromBytes(bytes.Repeat([]byte{0x5a}, 32))

// MiningAddress is the regtest P2PKH address nodes started by the harness
// mine to unless told otherwise.
func MiningAddress() *address.AddressPubKeyHash {
	return MiningAddressOn(&chaincfg.RegressionNetParams)
}

// MiningAddressOn is MiningAddress encoded for another network (the same
// key, so the same MiningScript).
func MiningAddressOn(params *chaincfg.Params) *address.AddressPubKeyHash {
	addr, err := address.NewAddressPubKeyHash(address.Hash160(miningPub.SerializeCompressed()), params)
	if err != nil {
		panic(err)
	}
	return addr
}

// MiningScript is MiningAddress's output script.
func MiningScript() []byte {
	s, err := txscript.PayToAddrScript(MiningAddress())
	if err != nil {
		panic(err)
	}
	return s
}

// SpendMined builds a version-2 transaction that spends prev, an output of
// prevValue satoshis paying MiningScript, to pkScript for prevValue-fee,
// signed with MiningAddress's key.
func SpendMined(prev wire.OutPoint, prevValue int64, pkScript []byte, fee int64) (*wire.MsgTx, error) {
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&prev, nil, nil))
	tx.AddTxOut(wire.NewTxOut(prevValue-fee, pkScript))
	sig, err := txscript.SignatureScript(tx, 0, MiningScript(), txscript.SigHashAll, miningKey, true)
	if err != nil {
		return nil, err
	}
	tx.TxIn[0].SignatureScript = sig
	return tx, nil
}

// SpendCoinbaseAt builds, with SpendMined, a transaction that spends the
// coinbase of the main-chain block at height of the node c is connected to
// (a block mined to MiningAddress) to pkScript, minus fee. Each RPC answer
// is awaited within SyncTimeout.
func SpendCoinbaseAt(c *rpcclient.Client, height int64, pkScript []byte, fee int64) (*wire.MsgTx, error) {
	hash, err := rpcWithin("getblockhash", func() (*chainhash.Hash, error) { return c.GetBlockHash(height) })
	if err != nil {
		return nil, fmt.Errorf("getblockhash %d: %w", height, err)
	}
	blk, err := rpcWithin("getblock", func() (*wire.MsgBlock, error) { return c.GetBlock(hash) })
	if err != nil {
		return nil, fmt.Errorf("getblock %v: %w", hash, err)
	}
	cb := blk.Transactions[0]
	if !bytes.Equal(cb.TxOut[0].PkScript, MiningScript()) {
		return nil, fmt.Errorf("block %d was not mined to MiningAddress", height)
	}
	return SpendMined(wire.OutPoint{Hash: cb.TxHash(), Index: 0}, cb.TxOut[0].Value, pkScript, fee)
}

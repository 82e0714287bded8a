package node

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// The faucet pays from coins of a fixed, publicly known key: anyone can
// spend them, which is harmless on regtest and the reason the faucet works
// on regtest only.
const (
	// faucetSeed is hashed into the faucet's private key.
	faucetSeed = "btcd-electrum regtest faucet"

	// faucetFeeRate is the fee rate of faucet payments in satoshis per
	// byte, twice btcd's default minimum relay fee.
	faucetFeeRate = 2

	// faucetMaxInputs bounds the coins one payment spends, which keeps the
	// transaction well under the standard size limit.
	faucetMaxInputs = 400

	// faucetMaxMined bounds the blocks one faucet call mines to gather
	// and mature coins.
	faucetMaxMined = 2000

	// faucetInputSize is an upper bound on a signed P2PKH input's size.
	faucetInputSize = 32 + 4 + 1 + 108 + 4

	// faucetMinChange is the smallest change output kept; less goes to
	// the fee.
	faucetMinChange = 1000
)

// faucetKey is the faucet's private key.
var faucetKey, faucetPub = func() (*btcec.PrivateKey, *btcec.PublicKey) {
	seed := sha256.Sum256([]byte(faucetSeed))
	return btcec.PrivKeyFromBytes(seed[:])
}()

// FaucetAddress is the P2PKH address the faucet pays from on a network's
// parameters (the faucet only runs on regtest). Blocks mined to it, by
// the faucet itself or by --regtestmineinterval without --miningaddr, fund
// the faucet.
func FaucetAddress(params *chaincfg.Params) *address.AddressPubKeyHash {
	addr, err := address.NewAddressPubKeyHash(address.Hash160(faucetPub.SerializeCompressed()), params)
	if err != nil {
		panic(err)
	}
	return addr
}

// errFaucetNetwork is returned by Faucet on networks other than regtest.
var errFaucetNetwork = errors.New("the faucet is only available on regtest")

// faucetCoin is an output paying the faucet.
type faucetCoin struct {
	op    wire.OutPoint
	value int64
}

// Faucet pays amount to pkScript from the node's own regtest coins and
// returns the transaction id; the payment is in the mempool when Faucet
// returns. When the faucet's mature coins do not cover the amount it first
// mines blocks to FaucetAddress and lets their coinbases mature (a fresh
// chain takes 101 blocks). It needs --electrumindex, which finds the
// faucet's coins. Calls are serialized.
func (n *Node) Faucet(pkScript []byte, amount btcutil.Amount) (*chainhash.Hash, error) {
	if !n.started.Load() {
		return nil, errNotStarted
	}
	if n.params.Name != chaincfg.RegressionNetParams.Name {
		return nil, errFaucetNetwork
	}
	if n.index.electrum == nil {
		return nil, errors.New("the faucet needs --electrumindex to find its coins")
	}
	if amount <= 0 || amount > btcutil.MaxSatoshi {
		return nil, fmt.Errorf("invalid amount %v", amount)
	}
	n.faucetMu.Lock()
	defer n.faucetMu.Unlock()

	faucetAddr := FaucetAddress(n.params)
	faucetScript, err := txscript.PayToAddrScript(faucetAddr)
	if err != nil {
		return nil, err
	}
	mined := 0
	for {
		// The index follows the chain in a writer of its own: the coins
		// of the blocks just mined (here or by anyone) are read once it
		// holds them.
		if err := n.index.electrum.Sync(); err != nil {
			return nil, fmt.Errorf("faucet coins: %w", err)
		}
		spendable, immature, err := n.faucetCoins(faucetScript)
		if err != nil {
			return nil, err
		}
		tx, ok, err := faucetTx(spendable, pkScript, int64(amount), faucetScript)
		if err != nil {
			return nil, err
		}
		if ok {
			if _, err := n.ProcessTx(btcutil.NewTx(tx)); err != nil {
				return nil, fmt.Errorf("faucet payment rejected: %w", err)
			}
			hash := tx.TxHash()
			log.Infof("Faucet paid %v in %v", amount, hash)
			return &hash, nil
		}
		blocks := n.faucetBlocksNeeded(spendable, immature, int64(amount))
		if mined+blocks > faucetMaxMined {
			return nil, fmt.Errorf("the faucet cannot gather %v within %d mined blocks", amount, faucetMaxMined)
		}
		if _, err := n.Generate(uint32(blocks), faucetAddr); err != nil {
			return nil, fmt.Errorf("faucet mining: %w", err)
		}
		mined += blocks
	}
}

// faucetCoins returns the faucet's coins it can spend now (mature
// confirmed outputs first, oldest first, then unconfirmed change) and its
// immature coinbase outputs by height, leaving out outputs a mempool
// transaction already spends.
func (n *Node) faucetCoins(faucetScript []byte) (spendable []faucetCoin, immature []immatureCoin, err error) {
	sh := indexers.ScriptHashFromScript(faucetScript)
	confirmed, _, err := n.index.electrum.Unspent(sh, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("faucet coins: %w", err)
	}
	nextHeight := n.chain.BestSnapshot().Height + 1
	maturity := int32(n.params.CoinbaseMaturity)
	for _, u := range confirmed {
		op := wire.OutPoint{Hash: u.TxHash, Index: u.Vout}
		if n.txMemPool.CheckSpend(op) != nil {
			continue
		}
		entry, err := n.chain.FetchUtxoEntry(op)
		if err != nil {
			return nil, nil, err
		}
		if entry == nil || entry.IsSpent() {
			continue
		}
		if entry.IsCoinBase() && nextHeight-entry.BlockHeight() < maturity {
			immature = append(immature, immatureCoin{height: entry.BlockHeight(), value: entry.Amount()})
			continue
		}
		spendable = append(spendable, faucetCoin{op: op, value: entry.Amount()})
	}
	sort.SliceStable(spendable, func(i, j int) bool { return spendable[i].value > spendable[j].value })
	for _, d := range n.txMemPool.TxDescs() {
		hash := d.Tx.Hash()
		for i, out := range d.Tx.MsgTx().TxOut {
			op := wire.OutPoint{Hash: *hash, Index: uint32(i)}
			if string(out.PkScript) == string(faucetScript) && n.txMemPool.CheckSpend(op) == nil {
				spendable = append(spendable, faucetCoin{op: op, value: out.Value})
			}
		}
	}
	sort.Slice(immature, func(i, j int) bool { return immature[i].height < immature[j].height })
	return spendable, immature, nil
}

// immatureCoin is a coinbase output of the faucet that cannot be spent yet.
type immatureCoin struct {
	height int32
	value  int64
}

// faucetBlocksNeeded returns how many blocks to mine to the faucet before
// its spendable coins cover amount and the fee: enough for the immature
// coinbases that cover the shortfall to mature, or, when even all of them
// fall short, enough new coinbases for the rest.
func (n *Node) faucetBlocksNeeded(spendable []faucetCoin, immature []immatureCoin, amount int64) int {
	var have int64
	for i, c := range spendable {
		if i == faucetMaxInputs {
			break
		}
		have += c.value
	}
	// Room for the fee of a large payment.
	short := amount + faucetFeeRate*faucetMaxInputs*faucetInputSize - have
	tip := n.chain.BestSnapshot().Height
	maturity := int32(n.params.CoinbaseMaturity)
	for _, c := range immature {
		short -= c.value
		if short <= 0 {
			// Spendable in the block after the one at height+maturity-1.
			return max(1, int(c.height+maturity-1-tip))
		}
	}
	subsidy := blockchain.CalcBlockSubsidy(tip+1, n.params)
	if subsidy <= 0 {
		return faucetMaxMined + 1
	}
	return int((short+subsidy-1)/subsidy) + int(maturity)
}

// faucetTx builds and signs the payment of amount to pkScript from coins,
// with change back to the faucet. ok is false when the coins do not cover
// the amount and the fee.
func faucetTx(coins []faucetCoin, pkScript []byte, amount int64, faucetScript []byte) (*wire.MsgTx, bool, error) {
	tx := wire.NewMsgTx(2)
	tx.AddTxOut(wire.NewTxOut(amount, pkScript))
	change := wire.NewTxOut(0, faucetScript)
	tx.AddTxOut(change)
	var in int64
	for _, c := range coins {
		if len(tx.TxIn) == faucetMaxInputs {
			break
		}
		op := c.op
		tx.AddTxIn(wire.NewTxIn(&op, nil, nil))
		in += c.value
		fee := int64(tx.SerializeSize()+len(tx.TxIn)*(faucetInputSize-41)) * faucetFeeRate
		if in < amount+fee {
			continue
		}
		change.Value = in - amount - fee
		if change.Value < faucetMinChange {
			tx.TxOut = tx.TxOut[:1]
		}
		for i := range tx.TxIn {
			sig, err := txscript.SignatureScript(tx, i, faucetScript, txscript.SigHashAll, faucetKey, true)
			if err != nil {
				return nil, false, err
			}
			tx.TxIn[i].SignatureScript = sig
		}
		return tx, true, nil
	}
	return nil, false, nil
}

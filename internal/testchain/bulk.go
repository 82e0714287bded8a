package testchain

import (
	"fmt"
	"math/rand"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
)

// BulkTxsPerBlock is the number of transactions of a bulk block.
const BulkTxsPerBlock = 2500

// BulkSpec is the block spec of bulk chains: about 2 inputs and 2.5 outputs
// per transaction, mostly spending confirmed outputs, a little of every
// other feature.
func BulkSpec() BlockSpec {
	return BlockSpec{
		Txs:            BulkTxsPerBlock,
		MaxInputs:      3,
		MaxOutputs:     4,
		SameBlockSpend: 0.05,
		SameScript:     0.03,
		SelfPay:        0.03,
		OpReturn:       0.02,
		Unspendable:    0.05,
		MaxFee:         1000,
	}
}

// BulkScriptPool is a pool large enough that bulk histories look like real
// ones: most scripts have a handful of transactions, none has all of them.
func BulkScriptPool() *ScriptPool {
	return NewScriptPool(50000, 500)
}

// CreateBulk creates a chain in dir holding at least minTxs transactions in
// blocks of BulkSpec, generated from seed, with the index manager index
// builds (nil for none). Use BulkScriptPool's pool when reopening the
// directory with OpenWith.
func CreateBulk(dir string, seed int64, minTxs int, index IndexFactory) (*Harness, error) {
	h, err := CreateWith(dir, Options{Index: index, Pool: BulkScriptPool()})
	if err != nil {
		return nil, err
	}
	if err := h.MineBulk(rand.New(rand.NewSource(seed)), minTxs); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// MineBulk mines blocks of BulkSpec on the tip until the chain holds at
// least minTxs transactions.
func (h *Harness) MineBulk(rng *rand.Rand, minTxs int) error {
	if err := h.MineMature(); err != nil {
		return err
	}
	spec := BulkSpec()
	for int(h.Chain.BestSnapshot().TotalTxns) < minTxs {
		if _, err := h.Mine(rng, spec); err != nil {
			return err
		}
	}
	return nil
}

// MineBigBlock mines a block of txs transactions (about 2 inputs and 2.5
// outputs each, inputs mostly from earlier blocks at many heights) on the
// tip, first mining fan-out blocks until the wallet holds enough coins. It
// returns the block and btcd's spent outputs of it, as an index's
// ConnectBlock receives them.
func (h *Harness) MineBigBlock(rng *rand.Rand, txs int) (*btcutil.Block, []blockchain.SpentTxOut, error) {
	if err := h.MineMature(); err != nil {
		return nil, nil, err
	}
	fanOut := BlockSpec{Txs: 200, MaxInputs: 1, MaxOutputs: 40, SameBlockSpend: 0.3, MaxFee: 100}
	for len(h.wallet.coins) < 2*txs {
		if _, err := h.Mine(rng, fanOut); err != nil {
			return nil, nil, err
		}
	}
	// A few ordinary blocks spread the coins over more heights.
	spec := BulkSpec()
	spec.Txs = txs / 10
	for i := 0; i < 5; i++ {
		if _, err := h.Mine(rng, spec); err != nil {
			return nil, nil, err
		}
	}
	spec.Txs = txs
	block, err := h.Mine(rng, spec)
	if err != nil {
		return nil, nil, err
	}
	if n := len(block.Transactions()); n != txs+1 {
		return nil, nil, fmt.Errorf("testchain: big block has %d transactions, want %d", n, txs+1)
	}
	stxos, err := h.Chain.FetchSpendJournal(block)
	if err != nil {
		return nil, nil, err
	}
	return block, stxos, nil
}

// BigBlock creates a chain without indexes in dir, mines a block of txs
// transactions on it with MineBigBlock and closes it. The directory keeps
// the chain, the big block at its tip.
func BigBlock(dir string, seed int64, txs int) (*btcutil.Block, []blockchain.SpentTxOut, error) {
	h, err := Create(dir, nil)
	if err != nil {
		return nil, nil, err
	}
	block, stxos, err := h.MineBigBlock(rand.New(rand.NewSource(seed)), txs)
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	return block, stxos, err
}

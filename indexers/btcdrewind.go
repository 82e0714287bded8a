package indexers

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"
)

// rewindStaleBtcdIndexes walks btcd's indexes (txindex, addrindex, cfindex)
// whose tip left the main chain while they were disabled back to it before
// btcd's manager initialises them: btcd v0.26.2 would need the spend journals
// the chain deleted with the blocks, and fail to start. The address index's
// spent scripts are read from the transaction index instead; an index that
// cannot be rewound is dropped and built again by btcd's manager. The order
// is the indexes' reverse, as btcd's.
func (m *Manager) rewindStaleBtcdIndexes(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	var txIndex *btcdindexers.TxIndex
	for _, ix := range m.others {
		if t, ok := ix.(*btcdindexers.TxIndex); ok {
			txIndex = t
		}
	}
	for i := len(m.others) - 1; i >= 0; i-- {
		ix := m.others[i]
		initialized := false
		for {
			if interrupted(interrupt) {
				return errInterrupted
			}
			hash, height, ok := m.btcdTip(ix.Key())
			if !ok || height < 0 || chain.MainChainHasBlock(&hash) {
				break
			}
			if !initialized {
				// As btcd's manager before it rewinds (the
				// transaction index counts its block ids).
				if err := ix.Init(); err != nil {
					return err
				}
				initialized = true
			}
			block, err := storedBlock(m.db, &hash)
			if err != nil {
				return fmt.Errorf("%s: block %v of its tip: %w", ix.Name(), hash, err)
			}
			block.SetHeight(height)
			var stxos []blockchain.SpentTxOut
			if _, isAddr := ix.(*btcdindexers.AddrIndex); isAddr {
				stxos, err = chain.FetchSpendJournal(block)
				if err != nil {
					stxos, err = spentScriptsFromTxIndex(m.db, txIndex, block)
				}
				if err != nil {
					log.Warnf("%s: cannot rewind block %v (%v): rebuilding the index", ix.Name(), hash, err)
					if err := btcdindexers.DropAddrIndex(m.db, interrupt); err != nil {
						return err
					}
					break
				}
			}
			err = m.db.Update(func(dbTx database.Tx) error {
				if err := ix.DisconnectBlock(dbTx, block, stxos); err != nil {
					return err
				}
				prev := block.MsgBlock().Header.PrevBlock
				return dbTx.Metadata().Bucket(indexTipsBucketName).Put(ix.Key(), tipVal(&prev, height-1))
			})
			if err != nil {
				return err
			}
			log.Infof("%s: removed block %v at height %d, which is no longer in the main chain",
				ix.Name(), hash, height)
		}
	}
	return nil
}

// btcdTip reads a btcd index's tip from the index tips bucket.
func (m *Manager) btcdTip(key []byte) (chainhash.Hash, int32, bool) {
	var (
		hash   chainhash.Hash
		height int32
		ok     bool
	)
	_ = m.db.View(func(dbTx database.Tx) error {
		tips := dbTx.Metadata().Bucket(indexTipsBucketName)
		if tips == nil {
			return nil
		}
		hash, height, ok = decodeTipVal(tips.Get(key))
		return nil
	})
	return hash, height, ok
}

// storedBlock reads a block from btcd's database, main chain or not.
func storedBlock(db database.DB, hash *chainhash.Hash) (block *btcutil.Block, err error) {
	err = db.View(func(dbTx database.Tx) error {
		raw, err := dbTx.FetchBlock(hash)
		if err == nil {
			block, err = btcutil.NewBlockFromBytes(append([]byte(nil), raw...))
		}
		return err
	})
	return block, err
}

// StoredBlock reads a block from btcd's database, main chain or not: the
// blocks of the index tip's chain that btcd has left (until the index
// undoes them) too.
func (idx *ElectrumIndex) StoredBlock(hash chainhash.Hash) (*btcutil.Block, error) {
	return storedBlock(idx.db, &hash)
}

// spentScriptsFromTxIndex rebuilds what the address index's DisconnectBlock
// reads of a block's spend journal, the scripts of the outputs its inputs
// spend, from btcd's transaction index (or from the block itself for
// outputs it creates).
func spentScriptsFromTxIndex(db database.DB, txIndex *btcdindexers.TxIndex, block *btcutil.Block) ([]blockchain.SpentTxOut, error) {
	if txIndex == nil {
		return nil, errors.New("no transaction index to read spent outputs from")
	}
	inBlock := make(map[chainhash.Hash]*wire.MsgTx)
	for _, tx := range block.Transactions() {
		inBlock[*tx.Hash()] = tx.MsgTx()
	}
	var stxos []blockchain.SpentTxOut
	for _, tx := range block.Transactions()[1:] {
		for _, in := range tx.MsgTx().TxIn {
			op := in.PreviousOutPoint
			prev, ok := inBlock[op.Hash]
			if !ok {
				region, err := txIndex.TxBlockRegion(&op.Hash)
				if err != nil {
					return nil, err
				}
				if region == nil {
					return nil, fmt.Errorf("spent transaction %v is not in the transaction index", op.Hash)
				}
				var raw []byte
				err = db.View(func(dbTx database.Tx) error {
					b, err := dbTx.FetchBlockRegion(region)
					raw = append([]byte(nil), b...)
					return err
				})
				if err != nil {
					return nil, err
				}
				prev = new(wire.MsgTx)
				if err := prev.Deserialize(bytes.NewReader(raw)); err != nil {
					return nil, err
				}
			}
			if int(op.Index) >= len(prev.TxOut) {
				return nil, fmt.Errorf("spent output %v does not exist", op)
			}
			out := prev.TxOut[op.Index]
			stxos = append(stxos, blockchain.SpentTxOut{Amount: out.Value, PkScript: out.PkScript})
		}
	}
	return stxos, nil
}

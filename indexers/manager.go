package indexers

import (
	"bytes"
	"fmt"

	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/wire/v2"
)

// Manager is the node's blockchain.IndexManager. Before btcd's own index
// manager initialises, it brings the Electrum index to the chain tip with
// the fast catch-up of catchup.go, repairing or rebuilding an index whose tip
// is not on the main chain. Afterwards btcd's manager runs btcd's other
// indexes and this one runs the Electrum index, inside the chain's
// transaction, or leaves old blocks to the index's trailing worker during
// initial block download (trail.go).
type Manager struct {
	db       database.DB
	electrum *ElectrumIndex
	others   []btcdindexers.Indexer
	btcd     *btcdindexers.Manager
}

// NewManager returns an index manager for the Electrum index (nil for none)
// and btcd's other indexes (for example its TxIndex), in the order of
// dependency btcd's indexers.NewManager expects them in.
func NewManager(db database.DB, electrum *ElectrumIndex, others ...btcdindexers.Indexer) *Manager {
	others = append([]btcdindexers.Indexer(nil), others...)
	return &Manager{db: db, electrum: electrum, others: others,
		btcd: btcdindexers.NewManager(db, others)}
}

// Init prepares and catches up the Electrum index, rewinds btcd's indexes
// left on a stale branch (btcdrewind.go), then initialises btcd's manager,
// which catches up the other indexes.
//
// This is part of the blockchain.IndexManager interface.
func (m *Manager) Init(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	if m.electrum != nil {
		if err := m.electrum.prepare(chain, interrupt); err != nil {
			return err
		}
	}
	if err := m.rewindStaleBtcdIndexes(chain, interrupt); err != nil {
		return err
	}
	if err := m.btcd.Init(chain, interrupt); err != nil {
		return err
	}
	if m.electrum != nil {
		m.electrum.startTrailing(chain)
	}
	return nil
}

// ConnectBlock passes a connected block to every index.
//
// This is part of the blockchain.IndexManager interface.
func (m *Manager) ConnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	if err := m.btcd.ConnectBlock(dbTx, block, stxos); err != nil {
		return err
	}
	if m.electrum != nil {
		m.electrum.connectHook(dbTx, block, stxos)
	}
	return nil
}

// DisconnectBlock passes a disconnected block to every index.
//
// This is part of the blockchain.IndexManager interface.
func (m *Manager) DisconnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	if err := m.btcd.DisconnectBlock(dbTx, block, stxos); err != nil {
		return err
	}
	if m.electrum != nil {
		m.electrum.disconnectHook(dbTx, block, stxos)
	}
	return nil
}

// connectHook indexes a connected block and moves the index tip with it in
// the chain's transaction, unless the block is left to the trailing worker.
// Like ConnectBlock it never fails: a broken invariant stops the process.
func (idx *ElectrumIndex) connectHook(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) {
	idx.mu.Lock()
	trails := idx.trailsConnect(block)
	idx.mu.Unlock()
	if trails {
		return
	}
	mustWrite(idx.ConnectBlock(dbTx, block, stxos))
	tips := dbTx.Metadata().Bucket(indexTipsBucketName)
	mustWrite(tips.Put(electrumIndexKey, tipVal(block.Hash(), block.Height())))
}

// disconnectHook unindexes a disconnected block and moves the index tip back
// in the chain's transaction, unless the index never held the block.
func (idx *ElectrumIndex) disconnectHook(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) {
	idx.mu.Lock()
	skip := idx.trailsDisconnect(block)
	idx.mu.Unlock()
	if skip {
		return
	}
	mustWrite(idx.DisconnectBlock(dbTx, block, stxos))
	tips := dbTx.Metadata().Bucket(indexTipsBucketName)
	prev := block.MsgBlock().Header.PrevBlock
	mustWrite(tips.Put(electrumIndexKey, tipVal(&prev, block.Height()-1)))
}

// prepare makes the index ready for btcd's manager: created, of the current
// schema version, on the main chain, and caught up to the chain tip.
func (idx *ElectrumIndex) prepare(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	var (
		exists  bool
		version uint32
	)
	err := idx.db.Update(func(dbTx database.Tx) error {
		tips, err := dbTx.Metadata().CreateBucketIfNotExists(indexTipsBucketName)
		if err != nil {
			return err
		}
		exists = tips.Get(electrumIndexKey) != nil
		version = schemaVersionOf(dbTx)
		// A crash inside forceDurable leaves its padding row.
		if dbTx.Metadata().Get(padKey) != nil {
			if err := dbTx.Metadata().Delete(padKey); err != nil {
				return err
			}
		}
		if !exists {
			if err := idx.Create(dbTx); err != nil {
				return err
			}
			return putTip(dbTx.Metadata(), &chainhash.Hash{}, -1)
		}
		// The copy readers read follows btcd's entry, should another
		// program (an older version of this one) have moved the tip.
		if v := tips.Get(electrumIndexKey); !bytes.Equal(dbTx.Metadata().Get(tipKey), v) {
			return dbTx.Metadata().Put(tipKey, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if exists && version != schemaVersion {
		log.Infof("Electrum index has schema version %d, this node writes %d: rebuilding it",
			version, schemaVersion)
		if err := idx.drop(interrupt); err != nil {
			return err
		}
	}
	if err := idx.openBase(chain); err != nil {
		return err
	}
	if err := idx.repairStale(chain, interrupt); err != nil {
		return err
	}
	if err := idx.Init(); err != nil {
		return err
	}
	if idx.building != nil && idx.buildFrom.valid {
		idx.mu.Lock()
		idx.buildTip = idx.buildFrom
		idx.mu.Unlock()
	}
	if idx.building == nil {
		ran, wait, err := idx.extendAtStart(chain, interrupt)
		if err != nil {
			idx.CloseBase()
			return err
		}
		if ran || wait {
			return nil
		}
	}
	if err := idx.catchUp(chain, interrupt); err != nil {
		// The process stops (or opens the chain again): a base being
		// built resumes from its last commit.
		idx.CloseBase()
		return err
	}
	return idx.finishBase()
}

// drop deletes every row of the index in bounded transactions and resets it
// to empty.
func (idx *ElectrumIndex) drop(interrupt <-chan struct{}) error {
	const perTx = 500000
	for {
		if interrupted(interrupt) {
			return errInterrupted
		}
		n := 0
		err := idx.db.Update(func(dbTx database.Tx) error {
			meta := dbTx.Metadata()
			var keys [][]byte
			c := meta.Cursor()
			for ok := c.Seek(rowPrefix); ok && len(keys) < perTx; ok = c.Next() {
				k := c.Key()
				if !bytes.HasPrefix(k, rowPrefix) {
					break
				}
				if bytes.Equal(k, reorgKey) {
					continue
				}
				keys = append(keys, append([]byte(nil), k...))
			}
			for _, k := range keys {
				if err := meta.Delete(k); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		log.Infof("Electrum index: dropped %d rows", n)
	}
	if err := idx.removeBase(); err != nil {
		return err
	}
	return idx.db.Update(func(dbTx database.Tx) error {
		idx.mu.Lock()
		idx.forgetHeld()
		idx.mu.Unlock()
		if err := idx.Create(dbTx); err != nil {
			return err
		}
		// Rows were rewritten: chunks cached before no longer count.
		if err := bumpReorgEpoch(dbTx.Metadata()); err != nil {
			return err
		}
		return putTip(dbTx.Metadata(), &chainhash.Hash{}, -1)
	})
}

// repairStale walks an index whose tip is not on the main chain (the index
// was disabled while the chain reorganised) back to the fork point. btcd has
// deleted the spend journals of those blocks, so the spent outputs are
// rebuilt from the index itself: every spent output's transaction is in the
// index, and its bytes are one block-region read. Should that fail, the
// index is rebuilt from scratch. Either way the node starts.
func (idx *ElectrumIndex) repairStale(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	for {
		if interrupted(interrupt) {
			return errInterrupted
		}
		var (
			tip   memTip
			block *btcutil.Block
			stxos []blockchain.SpentTxOut
		)
		err := idx.readView(func(dbTx database.Tx) error {
			meta, done := idx.view(dbTx)
			defer done()
			var err error
			tip, err = loadTip(dbTx, meta)
			if err != nil || tip.height < 0 || chain.MainChainHasBlock(&tip.hash) {
				block = nil
				return err
			}
			raw, err := dbTx.FetchBlock(&tip.hash)
			if err != nil {
				return err
			}
			block, err = btcutil.NewBlockFromBytes(raw)
			if err != nil {
				return err
			}
			block.SetHeight(tip.height)
			stxos, err = spentOutputsFromIndex(dbTx, meta, block)
			return err
		})
		if err != nil {
			log.Warnf("Electrum index tip is not on the main chain and cannot be "+
				"walked back (%v): rebuilding the index", err)
			return idx.drop(interrupt)
		}
		if block == nil {
			return nil
		}
		plan := planBlock(block, stxos, tip.height == 0)
		err = idx.db.Update(func(dbTx database.Tx) error {
			meta, done := idx.view(dbTx)
			defer done()
			// The tip moves without the held rows (held.go).
			idx.mu.Lock()
			idx.forgetHeld()
			idx.mu.Unlock()
			stats := tip.stats.add(applyDisconnect(meta, plan))
			if err := meta.Put(statsKey, encodeStats(stats)); err != nil {
				return err
			}
			if err := bumpReorgEpoch(meta); err != nil {
				return err
			}
			prev := block.MsgBlock().Header.PrevBlock
			return putTip(meta, &prev, tip.height-1)
		})
		if err != nil {
			return err
		}
		log.Infof("Electrum index: removed block %v at height %d, which is no longer "+
			"in the main chain", tip.hash, tip.height)
	}
}

// spentOutputsFromIndex rebuilds btcd's spent outputs of a block from the
// index: each input's previous transaction is found through the txid rows
// and read from the block files. meta is the index's view of dbTx.
func spentOutputsFromIndex(dbTx database.Tx, meta database.Bucket, block *btcutil.Block) ([]blockchain.SpentTxOut, error) {
	var stxos []blockchain.SpentTxOut
	for i, tx := range block.Transactions() {
		if i == 0 {
			continue
		}
		for _, in := range tx.MsgTx().TxIn {
			prev := in.PreviousOutPoint
			loc, r, err := txLocation(meta, &prev.Hash)
			if err != nil {
				return nil, fmt.Errorf("spent transaction %v: %w", prev.Hash, err)
			}
			raw, err := dbTx.FetchBlockRegion(&database.BlockRegion{
				Hash: &loc.BlockHash, Offset: r.offset, Len: r.size,
			})
			if err != nil {
				return nil, err
			}
			var ptx wire.MsgTx
			if err := ptx.Deserialize(bytes.NewReader(raw)); err != nil {
				return nil, err
			}
			if int(prev.Index) >= len(ptx.TxOut) {
				return nil, fmt.Errorf("spent output %v does not exist", prev)
			}
			out := ptx.TxOut[prev.Index]
			stxos = append(stxos, blockchain.SpentTxOut{
				Amount: out.Value, PkScript: out.PkScript, Height: r.height,
				IsCoinBase: loc.Pos == 0,
			})
		}
	}
	return stxos, nil
}

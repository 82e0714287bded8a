package indexers

import (
	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/database"
)

// Manager is the node's blockchain.IndexManager. btcd's own manager runs its
// other indexes (--txindex) inside the chain's transactions; the Electrum
// index's writer, started at Init at the chain tip, is handed each connected
// block with its spent outputs by btcd's hooks and woken by its notifications.
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

// Init removes what an older version kept of the Electrum index in btcd's
// database, brings the index to the chain tip and starts its writer,
// rewinds btcd's indexes left on a stale branch (btcdrewind.go), then
// initialises btcd's manager, which catches up the other indexes.
//
// This is part of the blockchain.IndexManager interface.
func (m *Manager) Init(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	if m.electrum != nil {
		if err := m.electrum.removeLegacy(interrupt); err != nil {
			return err
		}
		if err := m.electrum.start(chain, interrupt); err != nil {
			return err
		}
		// btcd moves its tip after the hooks' transaction commits, and
		// tells so in these notifications: the writer wakes then.
		w := m.electrum.w
		chain.Subscribe(func(n *blockchain.Notification) {
			if n.Type == blockchain.NTBlockConnected || n.Type == blockchain.NTBlockDisconnected {
				w.poke()
			}
		})
	}
	if err := m.rewindStaleBtcdIndexes(chain, interrupt); err != nil {
		return err
	}
	return m.btcd.Init(chain, interrupt)
}

// ConnectBlock passes a connected block to btcd's indexes and hands it to
// the Electrum index's writer, which btcd's notification of it wakes.
//
// This is part of the blockchain.IndexManager interface.
func (m *Manager) ConnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	if err := m.btcd.ConnectBlock(dbTx, block, stxos); err != nil {
		return err
	}
	if m.electrum != nil && m.electrum.w != nil {
		m.electrum.w.hand(block, stxos)
	}
	return nil
}

// DisconnectBlock passes a disconnected block to btcd's indexes; the
// Electrum index's writer undoes it once btcd's notification wakes it.
//
// This is part of the blockchain.IndexManager interface.
func (m *Manager) DisconnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	return m.btcd.DisconnectBlock(dbTx, block, stxos)
}

// Sync waits until the Electrum index holds the chain's tip as of the call
// (a no-op without the index); see ElectrumIndex.Sync.
func (m *Manager) Sync() error {
	if m.electrum == nil {
		return nil
	}
	return m.electrum.Sync()
}

// Close stops the Electrum index's writer and closes its store (a no-op
// without the index). Call it before btcd's database is closed.
func (m *Manager) Close() error {
	if m.electrum == nil {
		return nil
	}
	return m.electrum.Close()
}

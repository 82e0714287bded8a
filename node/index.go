package node

import (
	"sync"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/database"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// indexSet holds the optional indexes and the index manager the chain runs
// them through.
type indexSet struct {
	txIndex   *btcdindexers.TxIndex
	addrIndex *btcdindexers.AddrIndex
	cfIndex   *btcdindexers.CfIndex
	electrum  *indexers.ElectrumIndex

	// manager is nil when no index is enabled; otherwise it wraps the real
	// manager to time every block it indexes.
	manager blockchain.IndexManager
}

// newIndexSet creates the indexes the configuration asks for and their
// manager; the Electrum index reports its commits and blocks to onCommit
// and onBlock.
func newIndexSet(db database.DB, cfg *Config, onCommit func(indexers.Commit),
	onBlock func(indexers.BlockPass)) (*indexSet, error) {
	s := &indexSet{}
	var others []btcdindexers.Indexer
	if cfg.TxIndex {
		indxLog.Info("Transaction index is enabled")
		s.txIndex = btcdindexers.NewTxIndex(db)
		others = append(others, s.txIndex)
	}
	if cfg.AddrIndex {
		indxLog.Info("Address index is enabled")
		s.addrIndex = btcdindexers.NewAddrIndex(db, cfg.params)
		others = append(others, s.addrIndex)
	}
	if !cfg.NoCFilters {
		indxLog.Info("Committed filter index is enabled")
		s.cfIndex = btcdindexers.NewCfIndex(db, cfg.params)
		others = append(others, s.cfIndex)
	}
	if cfg.ElectrumIndex {
		indxLog.Info("Electrum index is enabled")
		var err error
		s.electrum, err = indexers.NewElectrumIndex(db, indexers.Options{
			Dir:              ElectrumIndexPath(cfg.netDataDir),
			CacheMiB:         cfg.ElectrumCache,
			UndoBlocks:       cfg.ElectrumUndoBlocks,
			BatchBytes:       cfg.ElectrumCatchUpBatch << 10,
			CatchUpMemory:    cfg.ElectrumCatchUpMem,
			ProgressInterval: cfg.ElectrumProgress,
			OnCommit:         onCommit,
			OnBlock:          onBlock,
			Interrupt:        cfg.Interrupt,
		})
		if err != nil {
			return nil, inUseError("Electrum index store", ElectrumIndexPath(cfg.netDataDir), err)
		}
	}
	switch {
	case s.electrum != nil:
		// The Electrum index's writer logs its own per-block line.
		s.manager = indexers.NewManager(db, s.electrum, others...)
	case len(others) > 0:
		s.manager = &timedIndexManager{inner: indexers.NewManager(db, nil, others...)}
	}
	return s, nil
}

// timedIndexManager wraps an index manager without the Electrum index (which
// times itself) and logs, for every block connected, how long indexing it
// took.
type timedIndexManager struct {
	inner blockchain.IndexManager

	mu       sync.Mutex
	lastLog  time.Time
	skipped  int
	skipTxs  int
	skipTime time.Duration
}

// Init runs the inner manager's initialization and catch-up.
func (m *timedIndexManager) Init(chain *blockchain.BlockChain, interrupt <-chan struct{}) error {
	return m.inner.Init(chain, interrupt)
}

// ConnectBlock indexes the block and logs the time it took. While blocks
// arrive faster than one per second (initial sync) the lines are folded into
// one summary per second.
func (m *timedIndexManager) ConnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	start := time.Now()
	err := m.inner.ConnectBlock(dbTx, block, stxos)
	if err != nil {
		return err
	}
	m.logIndexed(block, time.Since(start))
	return nil
}

// DisconnectBlock removes the block from the indexes.
func (m *timedIndexManager) DisconnectBlock(dbTx database.Tx, block *btcutil.Block, stxos []blockchain.SpentTxOut) error {
	start := time.Now()
	err := m.inner.DisconnectBlock(dbTx, block, stxos)
	if err == nil {
		indxLog.Infof("Unindexed block %d (%s tx) in %s", block.Height(),
			groupDigits(int64(len(block.Transactions()))), fmtDuration(time.Since(start)))
	}
	return err
}

// logIndexed writes the per-block line, or folds it into a summary when
// blocks come in faster than one a second.
func (m *timedIndexManager) logIndexed(block *btcutil.Block, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	ntx := len(block.Transactions())
	if now.Sub(m.lastLog) < time.Second {
		m.skipped++
		m.skipTxs += ntx
		m.skipTime += took
		return
	}
	if m.skipped > 0 {
		indxLog.Infof("Indexed %d blocks (%s tx) in %s", m.skipped,
			groupDigits(int64(m.skipTxs)), fmtDuration(m.skipTime))
		m.skipped, m.skipTxs, m.skipTime = 0, 0, 0
	}
	m.lastLog = now
	indxLog.Infof("Indexed block %d (%s tx) in %s", block.Height(),
		groupDigits(int64(ntx)), fmtDuration(took))
}

// fmtDuration formats an index time in whole milliseconds, or microseconds
// below one millisecond.
func fmtDuration(d time.Duration) string {
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// groupDigits formats n with thousands separators (3,210).
func groupDigits(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := []byte{}
	digits := 0
	for {
		if digits > 0 && digits%3 == 0 {
			s = append(s, ',')
		}
		s = append(s, byte('0'+n%10))
		digits++
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		s = append(s, '-')
	}
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return string(s)
}

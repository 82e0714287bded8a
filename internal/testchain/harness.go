package testchain

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/netparams"
	"github.com/btcsuite/btcd/blockchain"
	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb" // registers the ffldb driver
)

// DefaultUtxoCacheMaxSize is the UTXO cache size of harness chains: small, so
// cache flushes happen in tests too.
const DefaultUtxoCacheMaxSize = 4 << 20

// dbName is the database directory inside a harness directory, as btcd names
// it inside a network's data directory.
const dbName = "blocks_ffldb"

// IndexFactory builds the index manager of a chain from the database the
// chain is opened on. A nil IndexFactory means a chain without indexes.
type IndexFactory func(db database.DB, params *chaincfg.Params) blockchain.IndexManager

// Options configure how a harness opens its chain.
type Options struct {
	// Index builds the chain's index manager; nil for none.
	Index IndexFactory
	// Interrupt is passed to blockchain.Config.Interrupt; closing it makes
	// an index catch-up in progress stop.
	Interrupt <-chan struct{}
	// UtxoCacheMaxSize defaults to DefaultUtxoCacheMaxSize.
	UtxoCacheMaxSize uint64
	// WrapDB, when set, wraps the database before the index manager and
	// the chain are given it (to observe or interfere with their access).
	WrapDB func(database.DB) database.DB
	// Pool is the script pool blocks pay to; DefaultScriptPool when nil.
	// A directory must be reopened with the same pool for the wallet to
	// recognise its coins.
	Pool *ScriptPool
}

// Harness is a real btcd regtest chain on a real ffldb database, with a
// wallet of anyone-can-spend outputs to build blocks from. It is not safe for
// concurrent use (the chain and database it exposes are).
type Harness struct {
	// Dir is the harness directory; the database lives in Dir/blocks_ffldb.
	Dir string
	// DB is the open database, nil after Close.
	DB database.DB
	// Chain is the chain opened on DB, nil after Close.
	Chain *blockchain.BlockChain
	// Params are the regtest parameters of this chain (a private copy).
	Params *chaincfg.Params
	// Pool is the script pool blocks pay to.
	Pool *ScriptPool

	opts      Options
	index     blockchain.IndexManager
	wallet    *wallet
	walletTip chainhash.Hash
	records   map[chainhash.Hash]*blockRecord
	nonce     uint64
	byScript  map[string]*Script
}

// RegtestParams returns a copy of chaincfg.RegressionNetParams with
// deployment clocks of its own (netparams.Own).
func RegtestParams() *chaincfg.Params { return netparams.Own(&chaincfg.RegressionNetParams) }

// Create makes a new regtest chain in dir (which may exist but must not hold
// a database yet) with the index manager index builds (nil for none).
func Create(dir string, index IndexFactory) (*Harness, error) {
	return CreateWith(dir, Options{Index: index})
}

// CreateWith is Create with options.
func CreateWith(dir string, opts Options) (*Harness, error) {
	h := newHarness(dir, opts)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	db, err := database.Create("ffldb", h.DBPath(), h.Params.Net)
	if err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	if err := h.openChain(db); err != nil {
		return nil, err
	}
	return h, nil
}

// Open opens an existing harness directory, rebuilding the wallet from the
// main chain, with the index manager index builds (nil for none).
func Open(dir string, index IndexFactory) (*Harness, error) {
	return OpenWith(dir, Options{Index: index})
}

// OpenWith is Open with options.
func OpenWith(dir string, opts Options) (*Harness, error) {
	h := newHarness(dir, opts)
	if err := h.open(); err != nil {
		return nil, err
	}
	if err := h.rescan(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// New creates a harness in a temporary directory of tb, closed when the
// test ends; it fails the test on error.
func New(tb testing.TB, index IndexFactory) *Harness {
	tb.Helper()
	h, err := Create(tb.TempDir(), index)
	if err != nil {
		tb.Fatalf("testchain: %v", err)
	}
	tb.Cleanup(func() { h.Close() })
	return h
}

// newHarness returns an unopened harness knowing only genesis.
func newHarness(dir string, opts Options) *Harness {
	if opts.Pool == nil {
		opts.Pool = DefaultScriptPool()
	}
	if opts.UtxoCacheMaxSize == 0 {
		opts.UtxoCacheMaxSize = DefaultUtxoCacheMaxSize
	}
	h := &Harness{
		Dir:      dir,
		Params:   RegtestParams(),
		Pool:     opts.Pool,
		opts:     opts,
		wallet:   newWallet(),
		records:  make(map[chainhash.Hash]*blockRecord),
		byScript: make(map[string]*Script),
	}
	for i := range h.Pool.Spendable {
		s := &h.Pool.Spendable[i]
		h.byScript[string(s.PkScript)] = s
	}
	genesis := *h.Params.GenesisHash
	h.records[genesis] = &blockRecord{hash: genesis}
	h.walletTip = genesis
	return h
}

// DBPath is the database directory.
func (h *Harness) DBPath() string {
	return filepath.Join(h.Dir, dbName)
}

// open opens the existing database and the chain on it.
func (h *Harness) open() error {
	db, err := database.Open("ffldb", h.DBPath(), h.Params.Net)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	return h.openChain(db)
}

// openChain starts the chain on db; on failure it closes db.
func (h *Harness) openChain(db database.DB) error {
	if h.opts.WrapDB != nil {
		db = h.opts.WrapDB(db)
	}
	var mgr blockchain.IndexManager
	if h.opts.Index != nil {
		mgr = h.opts.Index(db, h.Params)
	}
	chain, err := blockchain.New(&blockchain.Config{
		DB:               db,
		ChainParams:      h.Params,
		TimeSource:       blockchain.NewMedianTime(),
		IndexManager:     mgr,
		UtxoCacheMaxSize: h.opts.UtxoCacheMaxSize,
		Interrupt:        h.opts.Interrupt,
	})
	if err != nil {
		if s, ok := mgr.(syncer); ok {
			s.Close()
		}
		db.Close()
		return fmt.Errorf("start chain: %w", err)
	}
	h.DB, h.Chain, h.index = db, chain, mgr
	return nil
}

// syncer is an index manager whose index follows the chain in a goroutine
// of its own (indexers.Manager): Sync waits until it holds the chain tip,
// Close stops it.
type syncer interface {
	Sync() error
	Close() error
}

// syncIndex waits until the chain's index holds the chain tip, so that a
// test reads what the chain holds after each block, reorganization or
// invalidation.
func (h *Harness) syncIndex() error {
	if s, ok := h.index.(syncer); ok {
		return s.Sync()
	}
	return nil
}

// Close flushes the chain's UTXO cache and closes the database. It is safe
// to call more than once.
func (h *Harness) Close() error {
	if h.DB == nil {
		return nil
	}
	var errs []error
	if s, ok := h.index.(syncer); ok {
		errs = append(errs, s.Close())
	}
	if h.Chain != nil {
		errs = append(errs, h.Chain.FlushUtxoCache(blockchain.FlushRequired))
	}
	errs = append(errs, h.DB.Close())
	h.DB, h.Chain, h.index = nil, nil, nil
	return errors.Join(errs...)
}

// Reopen closes the chain and opens it again on the same directory with the
// index manager index builds (nil for none) and no other options; the
// wallet is kept.
func (h *Harness) Reopen(index IndexFactory) error {
	return h.ReopenWith(Options{Index: index, UtxoCacheMaxSize: h.opts.UtxoCacheMaxSize})
}

// ReopenWith is Reopen with options; the pool cannot change.
func (h *Harness) ReopenWith(opts Options) error {
	if err := h.Close(); err != nil {
		return err
	}
	opts.Pool = h.Pool
	if opts.UtxoCacheMaxSize == 0 {
		opts.UtxoCacheMaxSize = DefaultUtxoCacheMaxSize
	}
	h.opts = opts
	if err := h.open(); err != nil {
		return err
	}
	return h.syncWallet()
}

// Tip returns the hash and height of the main chain tip.
func (h *Harness) Tip() (chainhash.Hash, int32) {
	s := h.Chain.BestSnapshot()
	return s.Hash, s.Height
}

// Coins returns a copy of the wallet: the spendable outputs of the main
// chain the harness knows how to spend.
func (h *Harness) Coins() []Coin {
	return append([]Coin(nil), h.wallet.coins...)
}

// syncWallet moves the wallet to the main chain tip.
func (h *Harness) syncWallet() error {
	tip, _ := h.Tip()
	return h.moveWallet(tip)
}

// moveWallet moves the wallet to the state after block target, undoing
// blocks back to the common ancestor and applying the target's branch.
func (h *Harness) moveWallet(target chainhash.Hash) error {
	cur, ok := h.records[h.walletTip]
	if !ok {
		return fmt.Errorf("testchain: wallet tip %v unknown", h.walletTip)
	}
	dst, ok := h.records[target]
	if !ok {
		return fmt.Errorf("testchain: block %v was not built by this harness", target)
	}
	var forward []*blockRecord
	for cur != dst {
		if cur.height >= dst.height {
			h.wallet.undo(cur)
			cur = h.records[cur.parent]
		} else {
			forward = append(forward, dst)
			dst = h.records[dst.parent]
		}
		if cur == nil || dst == nil {
			return errors.New("testchain: block tree is not connected")
		}
	}
	for i := len(forward) - 1; i >= 0; i-- {
		h.wallet.apply(forward[i])
	}
	h.walletTip = target
	return nil
}

// CheckWallet verifies that every wallet coin is unspent in the chain's UTXO
// set with the recorded amount, script and height.
func (h *Harness) CheckWallet() error {
	tip, _ := h.Tip()
	if h.walletTip != tip {
		return fmt.Errorf("wallet at %v, chain tip %v", h.walletTip, tip)
	}
	for _, c := range h.wallet.coins {
		e, err := h.Chain.FetchUtxoEntry(c.OutPoint)
		if err != nil {
			return err
		}
		switch {
		case e == nil || e.IsSpent():
			return fmt.Errorf("wallet coin %v is not in the UTXO set", c.OutPoint)
		case e.Amount() != c.Value || e.BlockHeight() != c.Height || e.IsCoinBase() != c.Coinbase:
			return fmt.Errorf("wallet coin %v differs from its UTXO entry", c.OutPoint)
		case string(e.PkScript()) != string(c.Script.PkScript):
			return fmt.Errorf("wallet coin %v has another script than its UTXO entry", c.OutPoint)
		}
	}
	return nil
}

// ElectrumIndex returns an IndexFactory of the Electrum index with its
// store in dir (opts.Dir is set to it) and btcd's indexes others makes, if
// any; *out, when out is not nil, receives the index each time the factory
// runs. The factory panics when the store cannot be opened.
func ElectrumIndex(dir string, opts indexers.Options, out **indexers.ElectrumIndex,
	others func(db database.DB, params *chaincfg.Params) []btcdindexers.Indexer) IndexFactory {
	return func(db database.DB, params *chaincfg.Params) blockchain.IndexManager {
		opts.Dir = dir
		idx, err := indexers.NewElectrumIndex(db, opts)
		if err != nil {
			panic(err)
		}
		if out != nil {
			*out = idx
		}
		var more []btcdindexers.Indexer
		if others != nil {
			more = others(db, params)
		}
		return indexers.NewManager(db, idx, more...)
	}
}

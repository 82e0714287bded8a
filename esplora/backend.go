package esplora

import (
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// Index is what the server reads of the Electrum index and its mempool
// view: the same reads the Electrum server makes. *electrum.IndexBackend
// implements it. Every method may be called from many goroutines.
type Index interface {
	// ChainParams returns the network the node runs on.
	ChainParams() *chaincfg.Params
	// ChainTip returns the index tip: every answer describes the chain up
	// to it.
	ChainTip() (indexers.Tip, error)

	// History, Unspent, UnspentTotals, IsUnspent, TxLocation, BlockTxIDs
	// and RawTx are the index's reads (indexers.ElectrumIndex documents
	// them).
	History(sh indexers.ScriptHash, limit int) ([]indexers.HistoryEntry, indexers.Tip, error)
	Unspent(sh indexers.ScriptHash, limit int) ([]indexers.Unspent, indexers.Tip, error)
	UnspentTotals(sh indexers.ScriptHash) (n int, sum int64, tip indexers.Tip, err error)
	IsUnspent(sh indexers.ScriptHash, height int32, op wire.OutPoint) (bool, indexers.Tip, error)
	TxLocation(txid chainhash.Hash) (indexers.TxLocation, error)
	BlockTxIDs(height int32) ([]chainhash.Hash, error)
	RawTx(txid chainhash.Hash) ([]byte, indexers.TxLocation, error)
	// StoredBlock reads a block of btcd's database, in the main chain or
	// not (indexers.ElectrumIndex.StoredBlock).
	StoredBlock(hash chainhash.Hash) (*btcutil.Block, error)
	// HistoryPage reads the n entries of a script's history before a
	// transaction's (nil: the newest), in history order
	// (indexers.ElectrumIndex.HistoryPage).
	HistoryPage(sh indexers.ScriptHash, before *chainhash.Hash, n, limit int) ([]indexers.HistoryEntry, indexers.Tip, error)
	// HistoryTxs hands out the confirmed transactions of a script's
	// history from its from-th entry on, read at one tip
	// (indexers.ElectrumIndex.HistoryTxs).
	HistoryTxs(sh indexers.ScriptHash, from int, fn func(i int, e indexers.HistoryEntry, raw []byte) error) (indexers.Tip, error)

	// MempoolEntries, MempoolUnspent, MempoolIsSpent, MempoolSpends and
	// MempoolTx are the per-script view of unconfirmed transactions
	// (electrum.MempoolView documents them).
	MempoolEntries(sh indexers.ScriptHash) []electrum.MempoolEntry
	MempoolUnspent(sh indexers.ScriptHash) []indexers.Unspent
	MempoolIsSpent(op wire.OutPoint) bool
	MempoolSpends(sh indexers.ScriptHash) int
	// MempoolSpender returns the unconfirmed transaction spending op.
	MempoolSpender(op wire.OutPoint) (chainhash.Hash, bool)
	MempoolTx(txid chainhash.Hash) ([]byte, bool)
	// UnconfirmedTxs returns every transaction that counts as
	// unconfirmed, for the mempool-wide endpoints.
	UnconfirmedTxs() []electrum.UnconfirmedTx

	// Broadcast and EstimateFee are the node's relay and fee policy
	// (electrum.TxRelay documents them).
	Broadcast(tx *wire.MsgTx) error
	EstimateFee(blocks int, mode string) (float64, error)
	// SubmitPackage submits a package of the checked shape
	// (electrum.IndexBackend.SubmitPackage documents it).
	SubmitPackage(txs []*wire.MsgTx, maxRate int64) electrum.PackageResult
	// SendRawTransaction broadcasts a transaction as bitcoind's
	// sendrawtransaction with its defaults
	// (electrum.IndexBackend.SendRawTransaction documents it).
	SendRawTransaction(tx *wire.MsgTx) error
}

// Chain is what the server reads of btcd's chain for blocks and headers.
// *blockchain.BlockChain implements it.
type Chain interface {
	BlockByHash(hash *chainhash.Hash) (*btcutil.Block, error)
	HeaderByHash(hash *chainhash.Hash) (wire.BlockHeader, error)
	BlockByHeight(height int32) (*btcutil.Block, error)
	BlockHashByHeight(height int32) (*chainhash.Hash, error)
	BlockHeightByHash(hash *chainhash.Hash) (int32, error)
	MainChainHasBlock(hash *chainhash.Hash) bool
}

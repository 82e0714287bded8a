package electrum

import (
	"errors"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Backend is everything the server needs from the node. It is the union of
// four small interfaces so that each part can be provided by a different
// component (the chain, the index, the mempool overlay, the relay policy).
// IndexBackend in adapter.go assembles one from the project's real parts.
//
// Every method may be called concurrently from many goroutines.
type Backend interface {
	ChainSource
	IndexReader
	MempoolView
	TxRelay
	// SubmitPackage submits a package whose shape the caller checked, as
	// bitcoind's submitpackage (IndexBackend.SubmitPackage).
	SubmitPackage(txs []*wire.MsgTx, maxRate int64) PackageResult
	// SendRawTransaction broadcasts a transaction as bitcoind's
	// sendrawtransaction with its defaults
	// (IndexBackend.SendRawTransaction).
	SendRawTransaction(tx *wire.MsgTx) error
}

// ChainSource answers questions about the main chain's headers.
type ChainSource interface {
	// ChainParams returns the network the node runs on.
	ChainParams() *chaincfg.Params

	// ChainTip returns the hash and height of the main-chain tip.
	ChainTip() (indexers.Tip, error)

	// BlockHeader returns the main-chain header at height; ErrNotFound
	// (from package indexers) when there is none.
	BlockHeader(height int32) (wire.BlockHeader, error)

	// BlockHash returns the hash of the main-chain block at height.
	BlockHash(height int32) (chainhash.Hash, error)
}

// StatusHasher is the SHA-256 state of a script's status string after its
// confirmed part. *indexers.StatusHasher implements it.
type StatusHasher interface {
	// Add appends the entry "txid:height:" (a mempool entry).
	Add(txid chainhash.Hash, height int32)
	// Len returns the number of entries hashed so far.
	Len() int
	// Sum returns the 32-byte status, or nil when Len() == 0.
	Sum() []byte
}

// IndexReader is the read side of the Electrum index. Every answer that
// carries a Tip was read at that tip. A limit <= 0 means unlimited; an answer
// that would exceed the limit returns indexers.ErrHistoryTooLarge.
type IndexReader interface {
	History(sh indexers.ScriptHash, limit int) ([]indexers.HistoryEntry, indexers.Tip, error)
	Unspent(sh indexers.ScriptHash, limit int) ([]indexers.Unspent, indexers.Tip, error)
	// Balance returns the number and the sum of sh's confirmed unspent
	// outputs: the number is what reading the sum cost.
	Balance(sh indexers.ScriptHash) (unspent int, sum int64, tip indexers.Tip, err error)
	Status(sh indexers.ScriptHash, limit int) (StatusHasher, indexers.Tip, error)
	// Statuses is Status for many scripts read at one tip; errs[i] belongs
	// to shs[i], the error to the read as a whole.
	Statuses(shs []indexers.ScriptHash, limit int) (sts []StatusHasher, errs []error, tip indexers.Tip, err error)

	// TxLocation returns where a confirmed transaction is;
	// indexers.ErrNotFound when it is not in the main chain.
	TxLocation(txid chainhash.Hash) (indexers.TxLocation, error)
	// BlockTxIDs returns all txids of the main-chain block at height.
	BlockTxIDs(height int32) ([]chainhash.Hash, error)
	// RawTx returns a confirmed transaction serialized with witness.
	RawTx(txid chainhash.Hash) ([]byte, indexers.TxLocation, error)
}

// MempoolEntry is one unconfirmed transaction touching a script.
type MempoolEntry struct {
	TxHash chainhash.Hash
	// Height is 0 when every input is confirmed and -1 otherwise.
	Height int32
	// Fee is the transaction fee in satoshis.
	Fee int64
}

// MempoolView is the per-script view of unconfirmed transactions.
type MempoolView interface {
	// MempoolEntries returns the unconfirmed transactions touching sh.
	MempoolEntries(sh indexers.ScriptHash) []MempoolEntry
	// MempoolBalance returns the unconfirmed balance change of sh (may be
	// negative).
	MempoolBalance(sh indexers.ScriptHash) int64
	// MempoolUnspent returns the unconfirmed outputs paying to sh that no
	// other mempool transaction spends.
	MempoolUnspent(sh indexers.ScriptHash) []indexers.Unspent
	// MempoolSpends returns the number of sh's outputs, confirmed or
	// not, that mempool transactions spend: at least as many as the
	// confirmed outputs MempoolIsSpent holds spent.
	MempoolSpends(sh indexers.ScriptHash) int
	// MempoolIsSpent reports whether a mempool transaction spends op.
	MempoolIsSpent(op wire.OutPoint) bool
	// MempoolTx returns an unconfirmed transaction serialized with witness.
	MempoolTx(txid chainhash.Hash) ([]byte, bool)
	// FeeHistogram returns [fee rate sat/vB, vsize] pairs, fee rate
	// strictly descending.
	FeeHistogram() [][2]float64
}

// MempoolInfo is the relay policy reported by mempool.get_info, in BTC/kvB.
type MempoolInfo struct {
	MempoolMinFee       float64
	MinRelayTxFee       float64
	IncrementalRelayFee float64
}

// TxRelay accepts transactions and reports fee policy.
type TxRelay interface {
	// Broadcast validates tx, adds it to the mempool and relays it. A
	// rejection is returned as an error whose text is shown to the client.
	Broadcast(tx *wire.MsgTx) error
	// EstimateFee returns a fee rate in BTC/kvB for confirmation within
	// blocks blocks, or -1 when the node has no estimate. mode is "",
	// "CONSERVATIVE" or "ECONOMICAL".
	EstimateFee(blocks int, mode string) (float64, error)
	// RelayFee returns the minimum relay fee in BTC/kvB.
	RelayFee() float64
	// MempoolInfo returns the mempool fee policy.
	MempoolInfo() MempoolInfo
}

// ErrRejected can wrap a Broadcast error to mark it as a policy or
// consensus rejection (as opposed to an internal failure).
var ErrRejected = errors.New("transaction rejected")

// ErrInChain wraps the Broadcast error of a transaction the chain already
// holds with an output still unspent (bitcoind's -27).
var ErrInChain = errors.New("transaction already in block chain")

// ErrMissingInputs wraps the Broadcast error of a transaction spending an
// output that neither the chain's unspent outputs nor the mempool hold
// (bitcoind's -25, with this text).
var ErrMissingInputs = errors.New("bad-txns-inputs-missingorspent")

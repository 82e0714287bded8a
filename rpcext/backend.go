package rpcext

import (
	"errors"
	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
)

// Chain is what the handlers read from the block chain. Its methods have the
// signatures of btcd's *blockchain.BlockChain, so a node passes its chain
// as is.
type Chain interface {
	// BestSnapshot returns the current main-chain tip.
	BestSnapshot() *blockchain.BestState

	// BlockByHash returns a main-chain block with its height set (btcd's
	// chain fails for blocks off the main chain).
	BlockByHash(hash *chainhash.Hash) (*btcutil.Block, error)

	// BlockHashByHeight returns the hash of the main-chain block at height.
	BlockHashByHeight(height int32) (*chainhash.Hash, error)

	// BlockHeightByHash returns the height of a main-chain block; it fails
	// for blocks not in the main chain.
	BlockHeightByHash(hash *chainhash.Hash) (int32, error)

	// HeaderByHash returns the header of any block the chain knows.
	HeaderByHash(hash *chainhash.Hash) (wire.BlockHeader, error)

	// ChainTips returns every known chain tip, main chain included.
	ChainTips() []blockchain.ChainTip

	// InvalidateBlock marks a block and its descendants invalid and
	// reorganizes away from them.
	InvalidateBlock(hash *chainhash.Hash) error

	// ReconsiderBlock clears the invalid status of a block and its
	// ancestors and reorganizes to the best valid chain.
	ReconsiderBlock(hash *chainhash.Hash) error
}

// Mempool is what the handlers read from the transaction memory pool. Its
// methods have the signatures of btcd's *mempool.TxPool.
type Mempool interface {
	// TxDescs returns a descriptor of every transaction in the pool.
	TxDescs() []*mempool.TxDesc

	// RawMempoolVerbose returns the verbose getrawmempool result, keyed by
	// transaction id.
	RawMempoolVerbose() map[string]*btcjson.GetRawMempoolVerboseResult

	// FetchTransaction returns a transaction from the pool.
	FetchTransaction(txHash *chainhash.Hash) (*btcutil.Tx, error)
}

// Backend is what the handlers need from the node beyond reading the chain
// and the mempool: the Electrum index, transaction and block submission,
// mining, peers and lifecycle.
//
// A method may return a *btcjson.RPCError; the server passes it to the
// client unchanged. Other errors are mapped to the code btcd uses for the
// method.
type Backend interface {
	// ConfirmedTx finds a confirmed transaction through the Electrum
	// index and returns it with the hash of the main-chain block holding
	// it. A *btcjson.RPCError (no index, or one that cannot tell yet)
	// is passed to the client; any other error is reported as "no such
	// transaction".
	ConfirmedTx(txHash *chainhash.Hash) (*wire.MsgTx, *chainhash.Hash, error)

	// ProcessTx validates a transaction into the mempool, relays it and
	// announces it (Electrum mempool tracking included). It returns the
	// accepted descriptors, the submitted transaction first. Rejections
	// are mempool.RuleError values, as from mempool.ProcessTransaction.
	ProcessTx(tx *btcutil.Tx) ([]*mempool.TxDesc, error)

	// SubmitBlock processes a block as if it came from a peer (through the
	// sync manager in a full node). A rejection is returned as an error.
	SubmitBlock(block *btcutil.Block) error

	// Generate mines n blocks on top of the tip and returns their hashes.
	// payTo is the coinbase address; nil means the node's configured
	// mining addresses (an error when there are none).
	Generate(n uint32, payTo address.Address) ([]*chainhash.Hash, error)

	// Faucet pays amount to pkScript from the node's own coins (regtest
	// only) and returns the id of the transaction, in the mempool by then.
	Faucet(pkScript []byte, amount btcutil.Amount) (*chainhash.Hash, error)

	// PeerInfo describes every connected peer.
	PeerInfo() []*btcjson.GetPeerInfoResult

	// ConnectedCount returns the number of connected peers.
	ConnectedCount() int32

	// AddNode connects to a peer at addr (host:port); permanent peers are
	// reconnected when they drop ("addnode add"), others are tried once
	// ("addnode onetry").
	AddNode(addr string, permanent bool) error

	// RemoveNode disconnects and forgets a peer added with AddNode;
	// ErrTemporaryPeer when the peers at addr are temporary ones.
	RemoveNode(addr string) error

	// EstimateFee returns the fee rate in BTC/kB for confirmation within
	// numBlocks blocks.
	EstimateFee(numBlocks uint32) (float64, error)

	// ElectrumInfo reports the state of the Electrum index and server.
	ElectrumInfo() ElectrumInfo

	// RequestStop asks the node to shut down; it must not block.
	RequestStop()
}

// ElectrumInfo is the result of the getelectruminfo extension.
type ElectrumInfo struct {
	// IndexHeight and IndexHash identify the last block the index holds.
	IndexHeight int32  `json:"indexheight"`
	IndexHash   string `json:"indexhash"`

	// ChainHeight is the main-chain tip height.
	ChainHeight int32 `json:"chainheight"`

	// CatchingUp is true while the index is behind the chain after start.
	CatchingUp bool `json:"catchingup"`

	// Progress is the catch-up progress from 0 to 1 (1 when in step).
	Progress float64 `json:"progress"`

	// Listeners are the Electrum listen addresses as URLs, e.g.
	// "tcp://127.0.0.1:50001", "ssl://...", "ws://...", "wss://...".
	Listeners []string `json:"listeners"`

	// Sessions is the number of connected Electrum clients.
	Sessions int `json:"sessions"`

	// Subscriptions is the number of scripthash subscriptions across all
	// sessions.
	Subscriptions int `json:"subscriptions"`

	// IndexRows and IndexSizeBytes are the number of rows of the index and
	// their key and value bytes (the database adds its own overhead).
	IndexRows      int64 `json:"indexrows"`
	IndexSizeBytes int64 `json:"indexsizebytes"`

	// CatchUp describes the index's catch-up since the node started (the
	// one running, or the last one); absent when none ran.
	CatchUp *CatchUpInfo `json:"catchup,omitempty"`

	// Refused counts connections refused before their session began, by
	// reason (max_sessions, max_sessions_per_ip, shutting_down);
	// Disconnected counts ended sessions by reason; Throttled counts
	// requests delayed by cost throttling; SubscriptionsRefused counts
	// subscriptions refused by a limit. All since the node started.
	Refused              map[string]uint64 `json:"refused,omitempty"`
	Disconnected         map[string]uint64 `json:"disconnected,omitempty"`
	Throttled            uint64            `json:"throttled"`
	SubscriptionsRefused uint64            `json:"subscriptionsrefused"`
}

// CatchUpInfo is the state of an index catch-up. Height, Txs, the rate and
// the ETA count committed work only (what the index serves).
type CatchUpInfo struct {
	Running      bool    `json:"running"`
	FromHeight   int32   `json:"fromheight"`
	TargetHeight int32   `json:"targetheight"`
	Height       int32   `json:"height"`
	Txs          uint64  `json:"txs"`
	TargetTxs    uint64  `json:"targettxs"`
	TxPerSecond  float64 `json:"txpersecond"`
	ETASeconds   float64 `json:"etaseconds"`
	Seconds      float64 `json:"seconds"`
	// MemoryLimit is the process's soft memory limit in bytes during the
	// catch-up (0: the catch-up set none).
	MemoryLimit int64 `json:"memorylimit"`
}

// The chain and mempool of btcd satisfy the interfaces above unchanged.
var (
	_ Chain   = (*blockchain.BlockChain)(nil)
	_ Mempool = (*mempool.TxPool)(nil)
)

// ErrTemporaryPeer and ErrPermanentPeer are a Backend's refusals to remove
// a temporary peer and to disconnect a permanent one, as btcd refuses them.
var (
	ErrTemporaryPeer = errors.New("can't remove a temporary peer, use disconnect")
	ErrPermanentPeer = errors.New("can't disconnect a permanent peer, use remove")
)

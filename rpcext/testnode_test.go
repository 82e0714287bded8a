package rpcext

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// testNode is a real in-process regtest node for the server to answer
// from: a btcd chain on ffldb, btcd's mempool and fee estimator. It
// implements Backend; blocks are mined with rpctest.CreateBlock, and a
// txid -> block map kept from chain notifications stands in for the
// Electrum index. Peers are recorded, not dialled.
type testNode struct {
	t       testing.TB
	params  *chaincfg.Params
	db      database.DB
	chain   *blockchain.BlockChain
	pool    *mempool.TxPool
	fees    *mempool.FeeEstimator
	key     *btcec.PrivateKey
	minerTo address.Address

	mineMu sync.Mutex

	mu       sync.Mutex
	txBlocks map[chainhash.Hash]chainhash.Hash
	peers    map[string]bool // addr -> permanent
	stopped  chan struct{}
	stopOnce sync.Once
	server   *Server
}

// newTestNode opens a fresh regtest chain in a temporary directory.
func newTestNode(t testing.TB) *testNode {
	t.Helper()
	// A copy: btcd points its parameters' deployment clocks at the chain,
	// and tests run chains in parallel.
	params := testchain.RegtestParams()
	db, err := database.Create("ffldb", filepath.Join(t.TempDir(), "blocks"), params.Net)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	chain, err := blockchain.New(&blockchain.Config{
		DB:          db,
		ChainParams: params,
		TimeSource:  blockchain.NewMedianTime(),
		SigCache:    txscript.NewSigCache(1000),
		HashCache:   txscript.NewHashCache(1000),
	})
	if err != nil {
		t.Fatal(err)
	}
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	minerTo, err := address.NewAddressPubKeyHash(
		address.Hash160(key.PubKey().SerializeCompressed()), params)
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{
		t: t, params: params, db: db, chain: chain, key: key, minerTo: minerTo,
		fees:     mempool.NewFeeEstimator(mempool.DefaultEstimateFeeMaxRollback, 1),
		txBlocks: make(map[chainhash.Hash]chainhash.Hash),
		peers:    make(map[string]bool),
		stopped:  make(chan struct{}),
	}
	n.pool = testchain.NewTxPool(chain, params, n.fees)

	chain.Subscribe(n.onChainEvent)
	return n
}

// onChainEvent keeps the mempool, the fee estimator and the tx map in step
// with the chain (as btcd's netsync does) and forwards the event to the
// server.
func (n *testNode) onChainEvent(note *blockchain.Notification) {
	block, ok := note.Data.(*btcutil.Block)
	if !ok {
		return
	}
	switch note.Type {
	case blockchain.NTBlockConnected:
		n.mu.Lock()
		for _, tx := range block.Transactions() {
			n.txBlocks[*tx.Hash()] = *block.Hash()
		}
		srv := n.server
		n.mu.Unlock()
		testchain.RemoveMined(n.pool, block)
		n.fees.RegisterBlock(block)
		if srv != nil {
			srv.NotifyBlockConnected(block)
		}
	case blockchain.NTBlockDisconnected:
		n.mu.Lock()
		for _, tx := range block.Transactions() {
			delete(n.txBlocks, *tx.Hash())
		}
		srv := n.server
		n.mu.Unlock()
		for _, tx := range block.Transactions()[1:] {
			n.pool.MaybeAcceptTransaction(tx, false, true)
		}
		n.fees.Rollback(block.Hash())
		if srv != nil {
			srv.NotifyBlockDisconnected(block)
		}
	}
}

// tipBlock returns the main-chain tip block with its height set.
func (n *testNode) tipBlock() (*btcutil.Block, error) {
	best := n.chain.BestSnapshot()
	b, err := n.chain.BlockByHash(&best.Hash)
	if err != nil {
		return nil, err
	}
	b.SetHeight(best.Height)
	return b, nil
}

// mine builds and processes one block on prev holding txs and paying
// payTo. A nil prev means the tip.
func (n *testNode) mine(prev *btcutil.Block, txs []*btcutil.Tx, payTo address.Address) (*btcutil.Block, error) {
	if prev == nil {
		var err error
		if prev, err = n.tipBlock(); err != nil {
			return nil, err
		}
	}
	// Timestamps start an hour ago so that time-activated rules (BIP16)
	// apply, as they do on a real regtest node.
	ts := prev.MsgBlock().Header.Timestamp.Add(time.Second)
	if floor := time.Now().Add(-time.Hour).Truncate(time.Second); ts.Before(floor) {
		ts = floor
	}
	block, err := rpctest.CreateBlock(prev, txs, 4, ts, payTo, nil, n.params)
	if err != nil {
		return nil, err
	}
	_, orphan, err := n.chain.ProcessBlock(block, blockchain.BFNone)
	if err != nil {
		return nil, err
	}
	if orphan {
		return nil, errors.New("mined an orphan")
	}
	return block, nil
}

// ConfirmedTx implements Backend from the tx map.
func (n *testNode) ConfirmedTx(hash *chainhash.Hash) (*wire.MsgTx, *chainhash.Hash, error) {
	n.mu.Lock()
	bh, ok := n.txBlocks[*hash]
	n.mu.Unlock()
	if !ok {
		return nil, nil, errors.New("not found")
	}
	block, err := n.chain.BlockByHash(&bh)
	if err != nil {
		return nil, nil, err
	}
	for _, tx := range block.Transactions() {
		if tx.Hash().IsEqual(hash) {
			return tx.MsgTx(), &bh, nil
		}
	}
	return nil, nil, errors.New("not in block")
}

// ProcessTx implements Backend with btcd's mempool.
func (n *testNode) ProcessTx(tx *btcutil.Tx) ([]*mempool.TxDesc, error) {
	return n.pool.ProcessTransaction(tx, false, false, 0)
}

// SubmitBlock implements Backend with the chain's ProcessBlock.
func (n *testNode) SubmitBlock(block *btcutil.Block) error {
	_, orphan, err := n.chain.ProcessBlock(block, blockchain.BFNone)
	if err != nil {
		return err
	}
	if orphan {
		return errors.New("orphan block")
	}
	return nil
}

// Generate implements Backend: n blocks holding the mempool's
// transactions, paying payTo or the node's mining address.
func (n *testNode) Generate(count uint32, payTo address.Address) ([]*chainhash.Hash, error) {
	n.mineMu.Lock()
	defer n.mineMu.Unlock()
	if payTo == nil {
		payTo = n.minerTo
	}
	var hashes []*chainhash.Hash
	for i := uint32(0); i < count; i++ {
		var txs []*btcutil.Tx
		for _, d := range n.pool.TxDescs() {
			txs = append(txs, d.Tx)
		}
		block, err := n.mine(nil, txs, payTo)
		if err != nil {
			return hashes, err
		}
		hashes = append(hashes, block.Hash())
	}
	return hashes, nil
}

// PeerInfo implements Backend from the recorded peers.
func (n *testNode) PeerInfo() []*btcjson.GetPeerInfoResult {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*btcjson.GetPeerInfoResult
	id := int32(1)
	for addr := range n.peers {
		out = append(out, &btcjson.GetPeerInfoResult{ID: id, Addr: addr, SubVer: "/test:0.1/"})
		id++
	}
	return out
}

// ConnectedCount implements Backend.
func (n *testNode) ConnectedCount() int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return int32(len(n.peers))
}

// AddNode implements Backend by recording the peer.
func (n *testNode) AddNode(addr string, permanent bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.peers[addr]; ok {
		return fmt.Errorf("peer %s already connected", addr)
	}
	n.peers[addr] = permanent
	return nil
}

// RemoveNode implements Backend.
func (n *testNode) RemoveNode(addr string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.peers[addr]; !ok {
		return fmt.Errorf("peer %s not found", addr)
	}
	delete(n.peers, addr)
	return nil
}

// EstimateFee implements Backend with btcd's fee estimator.
func (n *testNode) EstimateFee(numBlocks uint32) (float64, error) {
	r, err := n.fees.EstimateFee(numBlocks)
	return float64(r), err
}

// ElectrumInfo implements Backend from the chain tip.
func (n *testNode) ElectrumInfo() ElectrumInfo {
	best := n.chain.BestSnapshot()
	return ElectrumInfo{
		IndexHeight: best.Height, IndexHash: best.Hash.String(), ChainHeight: best.Height,
		Progress: 1, Listeners: []string{"tcp://127.0.0.1:50001"}, Sessions: 2,
		Subscriptions: 3, IndexSizeBytes: 4096,
	}
}

// Faucet implements Backend: the test node has no coins of its own (the
// node package tests the faucet itself).
func (n *testNode) Faucet([]byte, btcutil.Amount) (*chainhash.Hash, error) {
	return nil, errors.New("the test node has no faucet")
}

// RequestStop implements Backend.
func (n *testNode) RequestStop() {
	n.stopOnce.Do(func() { close(n.stopped) })
}

// testServer is a running server over a test node.
type testServer struct {
	node     *testNode
	srv      *Server
	addr     string
	certFile string
	cert     []byte
}

// Test credentials.
const (
	testUser = "user"
	testPass = "pass"
)

// startServer serves node over TLS (or plain HTTP) on a free port, with a
// generated certificate.
func startServer(t testing.TB, node *testNode, mutate func(*Config)) *testServer {
	t.Helper()
	dir := t.TempDir()
	cfg := &Config{
		Listen:   []string{"127.0.0.1:0"},
		User:     testUser,
		Pass:     testPass,
		CertFile: filepath.Join(dir, "rpc.cert"),
		KeyFile:  filepath.Join(dir, "rpc.key"),
		Params:   node.params,
		Chain:    node.chain,
		Mempool:  node.pool,
		Backend:  node,
		RelayFee: 0.00001,
	}
	if mutate != nil {
		mutate(cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	node.mu.Lock()
	node.server = srv
	node.mu.Unlock()
	t.Cleanup(func() {
		node.mu.Lock()
		node.server = nil
		node.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	ts := &testServer{node: node, srv: srv, addr: srv.Addrs()[0].String(), certFile: cfg.CertFile}
	if !cfg.DisableTLS {
		ts.cert, err = os.ReadFile(cfg.CertFile)
		if err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

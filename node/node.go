package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/addrmgr"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/connmgr"
	"github.com/btcsuite/btcd/database"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/mining"
	"github.com/btcsuite/btcd/mining/cpuminer"
	"github.com/btcsuite/btcd/netsync"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// Node is a btcd-compatible full node with the Electrum index: btcd's block
// database, chain, index manager, mempool, fee estimator, sync manager, peer
// server and CPU miner, plus the Electrum and JSON-RPC servers.
//
// Create it with New (which opens the database and brings every index up to
// the chain tip), then Start; Stop shuts everything down and closes the
// database. A Node is not restartable; create a new one on the same datadir.
type Node struct {
	cfg    *Config
	params *chaincfg.Params

	db          database.DB
	chain       *blockchain.BlockChain
	index       *indexSet
	timeSource  blockchain.MedianTimeSource
	sigCache    *txscript.SigCache
	hashCache   *txscript.HashCache
	fees        feeEstimates
	txMemPool   *mempool.TxPool
	syncManager *netsync.SyncManager
	tmplGen     *mining.BlkTmplGenerator
	cpuMiner    *cpuminer.CPUMiner
	mempoolView *indexers.Mempool // nil without the Electrum index
	viewMu      sync.Mutex        // serializes updateMempoolView

	addrManager *addrmgr.AddrManager
	connManager *connmgr.ConnManager
	downgrader  *peer.P2PDowngrader
	admission   *admission // inbound handshakes pending
	// indexBackend is the Electrum index's reads for the Electrum and
	// Esplora servers, one for both (electrumBackend).
	indexBackend *electrum.IndexBackend
	services     wire.ServiceFlag
	p2pListeners []net.Listener
	peers        *peerSet
	totals       netTotals
	bans         *banList
	rebroadcast  *rebroadcaster

	// permanent are the permanent connection requests by address, so a
	// permanent peer can be removed while it is not connected.
	permanentMu sync.Mutex
	permanent   map[string]*connmgr.ConnReq

	events *eventQueue
	// held are the pool transactions held aside during a reorganization
	// (reorgpool.go).
	held *heldAside
	srv  *servers
	// metrics is the Prometheus endpoint (nil without --metricslisten).
	metrics *metricsServer

	// verifyJob runs verifyelectrumindex (nil without the Electrum index);
	// verifyCancel ends its verification at shutdown.
	verifyJob    *verifyJob
	verifyCancel context.CancelFunc

	generateMu sync.Mutex
	faucetMu   sync.Mutex
	// intervalMiner is the --regtestmineinterval goroutine, waited for
	// before the sync manager it submits blocks to stops.
	intervalMiner sync.WaitGroup

	// lifeMu runs Start and Stop one at a time; stopped (under it) makes
	// Start refuse once Stop ran, and a second Stop return.
	lifeMu    sync.Mutex
	stopped   bool
	startErr  error
	started   atomic.Bool
	quit      chan struct{}
	stopReq   chan struct{}
	stopReqMu sync.Once
	wg        sync.WaitGroup
}

// New opens (or creates) the block database in the configured datadir,
// builds the chain with the configured indexes (catching them up to the tip
// before it returns), and assembles the mempool, sync manager, miner and
// peer server. Nothing listens or connects until Start.
func New(cfg *Config) (*Node, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:         cfg,
		params:      cfg.params,
		timeSource:  blockchain.NewMedianTime(),
		sigCache:    txscript.NewSigCache(cfg.SigCacheMaxSize),
		hashCache:   txscript.NewHashCache(cfg.SigCacheMaxSize),
		events:      newEventQueue(),
		held:        newHeldAside(),
		permanent:   make(map[string]*connmgr.ConnReq),
		bans:        newBanList(),
		rebroadcast: newRebroadcaster(),
		quit:        make(chan struct{}),
		stopReq:     make(chan struct{}),
	}
	if err := os.MkdirAll(cfg.netDataDir, 0o700); err != nil {
		return nil, err
	}
	db, err := openBlockDB(BlockDBPath(cfg.netDataDir), n.params)
	if err != nil {
		return nil, fmt.Errorf("open block database: %w", err)
	}
	n.db = guardDB(db)
	if err := checkIndexesAgainstPruning(n.db, cfg); err != nil {
		n.closeAfterFailedNew()
		return nil, err
	}
	if err := n.assemble(); err != nil {
		n.closeAfterFailedNew()
		return nil, err
	}
	if err := n.setupVerification(); err != nil {
		n.closeAfterFailedNew()
		return nil, err
	}
	return n, nil
}

// assemble builds every component on top of the open database.
func (n *Node) assemble() error {
	cfg := n.cfg
	var err error
	n.index, err = newIndexSet(n.db, cfg, n.indexCommitted, n.observeBlock)
	if err != nil {
		return err
	}
	if cfg.MetricsListen != "" {
		// Open before the chain loads, so the index's catch-up shows.
		if n.metrics, err = newMetricsServer(cfg.MetricsListen, n.index.electrum); err != nil {
			return err
		}
	}
	n.chain, err = blockchain.New(&blockchain.Config{
		DB:               n.db,
		Interrupt:        cfg.Interrupt,
		ChainParams:      n.params,
		Checkpoints:      n.checkpoints(),
		TimeSource:       n.timeSource,
		SigCache:         n.sigCache,
		HashCache:        n.hashCache,
		IndexManager:     n.index.manager,
		UtxoCacheMaxSize: cfg.utxoCacheBytes(),
		Prune:            cfg.Prune * 1024 * 1024,
	})
	if err != nil {
		return fmt.Errorf("load chain: %w", err)
	}
	best := n.chain.BestSnapshot()
	log.Infof("Chain tip %v at height %d", best.Hash, best.Height)
	if n.metrics != nil {
		n.metrics.chain.Store(n.chain)
	}

	n.fees.p.Store(loadFeeEstimator(n.db, best.Height))
	n.txMemPool = mempool.New(&mempool.Config{
		Policy: mempool.Policy{
			DisableRelayPriority: cfg.NoRelayPriority,
			AcceptNonStd:         n.acceptNonStd(),
			FreeTxRelayLimit:     cfg.FreeTxRelayLimit,
			MaxOrphanTxs:         cfg.MaxOrphanTxs,
			MaxOrphanTxSize:      defaultMaxOrphanTxSize,
			MaxSigOpCostPerTx:    maxSigOpCostPerTx,
			MinRelayTxFee:        cfg.minRelayTxFee,
			MaxTxVersion:         2,
			RejectReplacement:    cfg.RejectReplacement,
		},
		ChainParams:    n.params,
		FetchUtxoView:  n.chain.FetchUtxoView,
		BestHeight:     func() int32 { return n.chain.BestSnapshot().Height },
		MedianTimePast: func() time.Time { return n.chain.BestSnapshot().MedianTime },
		CalcSequenceLock: func(tx *btcutil.Tx, view *blockchain.UtxoViewpoint) (*blockchain.SequenceLock, error) {
			return n.chain.CalcSequenceLock(tx, view, true)
		},
		IsDeploymentActive: n.chain.IsDeploymentActive,
		SigCache:           n.sigCache,
		HashCache:          n.hashCache,
		AddrIndex:          n.index.addrIndex,
		// No FeeEstimator: the node feeds it (feeEstimates).
	})
	if idx := n.index.electrum; idx != nil {
		n.mempoolView = indexers.NewMempool(idx.PrevOut)
	}
	if n.metrics != nil {
		n.metrics.pool.Store(n.txMemPool)
	}

	n.peers = newPeerSet()
	// Subscribed before netsync.New: on a disconnect, the pool descendants
	// of the block's transactions are held before netsync's callback can
	// remove them (reorgpool.go).
	n.chain.Subscribe(n.holdDescendants)
	n.syncManager, err = netsync.New(&netsync.Config{
		PeerNotifier:       n,
		Chain:              n.chain,
		TxMemPool:          n.txMemPool,
		ChainParams:        n.params,
		DisableCheckpoints: cfg.DisableCheckpoints,
		MaxPeers:           cfg.MaxPeers,
		// No FeeEstimator: the node feeds it (feeEstimates).
	})
	if err != nil {
		return fmt.Errorf("create sync manager: %w", err)
	}

	// Subscribed after netsync.New, so that by the time these callbacks run
	// the mempool has already dropped a connected block's transactions.
	n.chain.Subscribe(n.handleChainNotification)

	policy := mining.Policy{
		BlockMinWeight:    cfg.BlockMinWeight,
		BlockMaxWeight:    cfg.BlockMaxWeight,
		BlockMinSize:      cfg.BlockMinSize,
		BlockMaxSize:      cfg.BlockMaxSize,
		BlockPrioritySize: cfg.BlockPrioritySize,
		TxMinFreeFee:      cfg.minRelayTxFee,
	}
	n.tmplGen = mining.NewBlkTmplGenerator(&policy, n.params, n.txMemPool,
		n.chain, n.timeSource, n.sigCache, n.hashCache)
	n.cpuMiner = cpuminer.New(&cpuminer.Config{
		ChainParams:            n.params,
		BlockTemplateGenerator: n.tmplGen,
		MiningAddrs:            cfg.miningAddrs,
		ProcessBlock:           n.syncManager.ProcessBlock,
		ConnectedCount:         n.ConnectedCount,
		IsCurrent:              n.syncManager.IsCurrent,
	})

	if err := n.setupPeerServer(); err != nil {
		return err
	}
	n.srv, err = n.setupServers()
	if err != nil {
		return err
	}
	if n.metrics != nil {
		n.metrics.nodeReady(n.ConnectedCount)
	}
	return nil
}

// closeAfterFailedNew releases what New opened before it failed.
func (n *Node) closeAfterFailedNew() {
	for _, l := range n.p2pListeners {
		_ = l.Close()
	}
	if n.srv != nil {
		n.srv.close()
	}
	if n.metrics != nil {
		n.metrics.close()
	}
	if n.index != nil && n.index.electrum != nil {
		if err := n.index.electrum.Close(); err != nil {
			log.Errorf("Close the Electrum index: %v", err)
		}
	}
	if n.chain != nil {
		if err := n.chain.FlushUtxoCache(blockchain.FlushRequired); err != nil {
			log.Errorf("Flush UTXO cache: %v", err)
		}
	}
	if err := n.db.Close(); err != nil {
		log.Errorf("Close block database: %v", err)
	}
}

// acceptNonStd is btcd's policy: relay non-standard transactions on test
// networks unless --rejectnonstd, on mainnet only with --relaynonstd.
func (n *Node) acceptNonStd() bool {
	switch {
	case n.cfg.RejectNonStd:
		return false
	case n.cfg.RelayNonStd:
		return true
	default:
		return n.params.RelayNonStdTxs
	}
}

// checkpoints returns the network's checkpoints merged with --addcheckpoint,
// or none with --nocheckpoints.
func (n *Node) checkpoints() []chaincfg.Checkpoint {
	return n.cfg.Checkpoints()
}

// Start starts the peer server (listeners, sync manager, permanent peers,
// DNS seeding), the event dispatcher and the Electrum and RPC servers.
func (n *Node) Start() error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	if n.stopped {
		return errors.New("the node is stopped: a Node is not restartable")
	}
	if n.started.Load() {
		return n.startErr
	}
	n.startErr = n.start()
	return n.startErr
}

// start starts the node's goroutines, btcd's managers and the servers.
func (n *Node) start() error {
	n.started.Store(true)
	n.wg.Add(2)
	go n.dispatchEvents()
	go n.rebroadcastLoop()
	if n.srv.electrum != nil {
		n.wg.Add(1)
		go n.releaseMemoryWhenIdle()
	}

	n.addrManager.Start()
	n.syncManager.Start()
	n.connManager.Start()
	n.connectPermanentPeers()
	n.seedFromDNS()
	if n.upnpWanted() {
		n.wg.Add(1)
		go n.upnpLoop()
	}

	if err := n.srv.start(); err != nil {
		return err
	}
	if n.cfg.Generate {
		n.cpuMiner.Start()
	}
	if n.cfg.RegtestMineInterval > 0 {
		n.intervalMiner.Add(1)
		go n.mineEvery(n.cfg.RegtestMineInterval)
	}
	log.Info(n.startupSummary())
	return nil
}

// Stop shuts the node down: the Electrum and RPC servers, listeners and
// peers, the sync manager (which flushes the UTXO cache), the address
// manager; it saves the fee estimator and closes the database. It is safe to
// call more than once and without Start.
func (n *Node) Stop() error {
	n.lifeMu.Lock()
	defer n.lifeMu.Unlock()
	if n.stopped {
		return nil
	}
	n.stopped = true
	var err error
	log.Infof("Shutting down")
	close(n.quit)
	n.srv.stop()
	n.intervalMiner.Wait()
	// A verification reads the index's store and btcd's database.
	n.stopVerification()
	if idx := n.index.electrum; idx != nil {
		// The index's writer reads the chain and btcd's database;
		// what it has not committed is caught up next start.
		if e := idx.Close(); e != nil {
			log.Errorf("Close the Electrum index: %v", e)
		}
	}
	if n.started.Load() {
		n.cpuMiner.Stop()
		n.connManager.Stop()
		n.peers.disconnectAll()
		n.connManager.Wait()
		n.peers.wait()
		if e := n.syncManager.Stop(); e != nil {
			log.Errorf("Stop sync manager: %v", e)
		}
		if e := n.addrManager.Stop(); e != nil {
			log.Errorf("Stop address manager: %v", e)
		}
	} else {
		for _, l := range n.p2pListeners {
			_ = l.Close()
		}
		if e := n.chain.FlushUtxoCache(blockchain.FlushRequired); e != nil {
			log.Errorf("Flush UTXO cache: %v", e)
		}
	}
	n.events.close()
	n.wg.Wait()
	saveFeeEstimator(n.db, n.fees.current())
	if n.metrics != nil {
		n.metrics.close()
	}
	if e := n.db.Close(); e != nil {
		// Writing ffldb's cache failed: what it held is lost, and the
		// next start resumes from the last commit written.
		log.Errorf("Close block database: %v", e)
		err = fmt.Errorf("close block database: %w", e)
	}
	log.Infof("Shutdown complete")
	return err
}

// RequestStop asks whoever runs the node (the binary's main) to shut it
// down; it never blocks. StopRequested is closed on the first call.
func (n *Node) RequestStop() {
	n.stopReqMu.Do(func() { close(n.stopReq) })
}

// StopRequested is closed when a client (the RPC stop command) asked the
// node to shut down.
func (n *Node) StopRequested() <-chan struct{} { return n.stopReq }

// Config returns the node's normalized configuration.
func (n *Node) Config() *Config { return n.cfg }

// Params returns the network parameters.
func (n *Node) Params() *chaincfg.Params { return n.params }

// Chain returns btcd's block chain.
func (n *Node) Chain() *blockchain.BlockChain { return n.chain }

// DB returns the block database.
func (n *Node) DB() database.DB { return n.db }

// TxPool returns btcd's transaction memory pool.
func (n *Node) TxPool() *mempool.TxPool { return n.txMemPool }

// SyncManager returns btcd's sync manager.
func (n *Node) SyncManager() *netsync.SyncManager { return n.syncManager }

// FeeEstimator returns btcd's fee estimator as it is now: the node starts a
// new one when btcd's cannot follow the chain.
func (n *Node) FeeEstimator() *mempool.FeeEstimator { return n.fees.current() }

// P2PAddrs returns the addresses the peer listeners are bound to (the real
// ports when ":0" was configured).
func (n *Node) P2PAddrs() []net.Addr {
	addrs := make([]net.Addr, 0, len(n.p2pListeners))
	for _, l := range n.p2pListeners {
		addrs = append(addrs, l.Addr())
	}
	return addrs
}

// errNotStarted is returned by operations that need a started node.
var errNotStarted = errors.New("node is not started")

package rpcext

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/gorilla/websocket"
)

// TestNotifySpentSendsOnlyRedeemingTx: a mempool spend of outpoints
// notifyspent adds is told with redeemingtx alone, as btcd tells it.
func TestNotifySpentSendsOnlyRedeemingTx(t *testing.T) {
	node := matureNode(t)
	to, _ := newAddress(t, node)
	spendTx := spendCoinbase(t, node, 1, to)
	if _, err := node.ProcessTx(btcutil.NewTx(spendTx)); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	redeems := make(chan chainhash.Hash, 10)
	accepted := make(chan chainhash.Hash, 10)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRedeemingTx: func(tx *btcutil.Tx, _ *btcjson.BlockDetails) { redeems <- *tx.Hash() },
		OnTxAccepted:  func(h *chainhash.Hash, _ btcutil.Amount) { accepted <- *h },
	})
	// Subscribed after the transaction was accepted: no txaccepted is due
	// for it.
	if err := c.NotifyNewTransactions(false); err != nil {
		t.Fatal(err)
	}
	op := spendTx.TxIn[0].PreviousOutPoint
	if err := c.NotifySpent([]*wire.OutPoint{&op}); err != nil {
		t.Fatal(err)
	}
	if _, ok := parityWait(redeems, 5*time.Second); !ok {
		t.Fatal("no redeemingtx")
	}
	if h, ok := parityWait(accepted, time.Second); ok {
		t.Fatalf("notifyspent sent txaccepted for %v, accepted into the mempool before the client subscribed; "+
			"btcd sends redeemingtx only", h)
	}
}

// TestRescanStopsWhenClientLeavesWithFullSemaphore: with every request
// place of a client taken, its reader still reads on, so a client that
// leaves is seen and its rescan stops.
func TestRescanStopsWhenClientLeavesWithFullSemaphore(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(300, nil); err != nil {
		t.Fatal(err)
	}
	chain := &slowChain{BlockChain: node.chain}
	ts := startServer(t, node, func(c *Config) {
		c.Chain = chain
		c.MaxConcurrentRequests = 1
	})
	watched, _ := newAddress(t, node)
	conn := parityWSDial(t, ts, testUser, testPass)
	for _, req := range []string{
		fmt.Sprintf(`{"jsonrpc":"1.0","method":"rescan","params":["%s",["%s"],[]],"id":1}`,
			node.params.GenesisHash, watched.EncodeAddress()),
		`{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":2}`,
	} {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	conn.Close()
	time.Sleep(500 * time.Millisecond)
	before := chain.calls.Load()
	time.Sleep(time.Second)
	after := chain.calls.Load()
	if after != before {
		t.Fatalf("rescan read %d more blocks in the second after its client left: the reader, blocked on the "+
			"semaphore, never saw the close", after-before)
	}
}

// racingChain is the test chain that connects one more block (fire) right
// after a rescan has read the tip and checked the chain's height for the
// last time: the moment between the scan's end and its registration of
// the addresses for later notifications.
type racingChain struct {
	*blockchain.BlockChain
	tip   chainhash.Hash
	armed atomic.Bool
	fire  func()
}

func (c *racingChain) BlockByHash(h *chainhash.Hash) (*btcutil.Block, error) {
	if *h == c.tip {
		c.armed.Store(true)
	}
	return c.BlockChain.BlockByHash(h)
}

func (c *racingChain) BestSnapshot() *blockchain.BestState {
	snap := c.BlockChain.BestSnapshot()
	if c.armed.CompareAndSwap(true, false) {
		c.fire()
	}
	return snap
}

// TestRescanThroughTipMissesBlockAtItsEnd: a block connected as a rescan
// through the tip ends is scanned or notified, never missed.
func TestRescanThroughTipMissesBlockAtItsEnd(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(5, nil); err != nil {
		t.Fatal(err)
	}
	watched, _ := newAddress(t, node)
	chain := &racingChain{BlockChain: node.chain, tip: node.chain.BestSnapshot().Hash}
	var late chainhash.Hash
	chain.fire = func() {
		hashes, err := node.Generate(1, watched)
		if err != nil {
			t.Error(err)
			return
		}
		late = *hashes[0]
	}
	ts := startServer(t, node, func(c *Config) { c.Chain = chain })
	recvs := make(chan string, 10)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRecvTx: func(_ *btcutil.Tx, d *btcjson.BlockDetails) {
			if d != nil {
				recvs <- d.Hash
			}
		},
	})
	if err := c.Rescan(node.params.GenesisHash, []address.Address{watched}, nil); err != nil {
		t.Fatal(err)
	}
	if late == (chainhash.Hash{}) {
		t.Fatal("the racing block was not made")
	}
	for {
		h, ok := parityWait(recvs, 3*time.Second)
		if !ok {
			t.Fatalf("no recvtx for block %v, paying the rescanned address, connected as the rescan reached the tip", late)
		}
		if h == late.String() {
			return
		}
	}
}

// inCallbackChain is btcd's chain which, when a rescan that has read the
// tip next looks at the best state, connects a block paying the rescanned
// address on another goroutine and answers once the chain is inside its
// NTBlockConnected callback for it, before the callback reaches the
// server: btcd moves its best state before it calls its subscribers.
type inCallbackChain struct {
	*blockchain.BlockChain
	tip   chainhash.Hash
	armed atomic.Bool
	fire  func()
}

func (c *inCallbackChain) BlockByHash(h *chainhash.Hash) (*btcutil.Block, error) {
	if *h == c.tip {
		c.armed.Store(true)
	}
	return c.BlockChain.BlockByHash(h)
}

func (c *inCallbackChain) BestSnapshot() *blockchain.BestState {
	if c.armed.CompareAndSwap(true, false) {
		c.fire()
	}
	return c.BlockChain.BestSnapshot()
}

// TestRescanThroughTipTellsBlockOnce: a block connected as a rescan
// through the tip ends, which the rescan scans before the server is told
// of it, is told once.
func TestRescanThroughTipTellsBlockOnce(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(5, nil); err != nil {
		t.Fatal(err)
	}
	watched, _ := newAddress(t, node)
	chain := &inCallbackChain{BlockChain: node.chain, tip: node.chain.BestSnapshot().Hash}
	ts := startServer(t, node, func(c *Config) { c.Chain = chain })
	srv := ts.srv
	// The server is told by a callback subscribed after the node's, as in
	// the node (netsync's subscriber runs first).
	node.mu.Lock()
	node.server = nil
	node.mu.Unlock()
	var (
		gate       sync.Once
		gated      atomic.Bool
		inCallback = make(chan struct{})
		release    = make(chan struct{})
		late       chainhash.Hash
	)
	node.chain.Subscribe(func(note *blockchain.Notification) {
		block, ok := note.Data.(*btcutil.Block)
		if !ok {
			return
		}
		switch note.Type {
		case blockchain.NTBlockConnected:
			if gated.Load() {
				gate.Do(func() {
					late = *block.Hash()
					close(inCallback)
					<-release
				})
			}
			srv.NotifyBlockConnected(block)
		case blockchain.NTBlockDisconnected:
			srv.NotifyBlockDisconnected(block)
		}
	})
	chain.fire = func() {
		gated.Store(true)
		go func() {
			if _, err := node.Generate(1, watched); err != nil {
				t.Error(err)
			}
		}()
		<-inCallback // the block is connected, chainLock is free
		go func() {
			time.Sleep(100 * time.Millisecond)
			close(release)
		}()
	}
	recvs := make(chan string, 10)
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{
		OnRecvTx: func(_ *btcutil.Tx, d *btcjson.BlockDetails) {
			if d != nil {
				recvs <- d.Hash
			}
		},
	})
	if err := c.Rescan(node.params.GenesisHash, []address.Address{watched}, nil); err != nil {
		t.Fatal(err)
	}
	if late == (chainhash.Hash{}) {
		t.Fatal("the racing block was not made")
	}
	told := 0
	for {
		h, ok := parityWait(recvs, 2*time.Second)
		if !ok {
			break
		}
		if h == late.String() {
			told++
		}
	}
	if told != 1 {
		t.Fatalf("the coinbase of block %v, paying the rescanned address, was told %d times", late, told)
	}
}

// TestNotifyDuringStart: block notifications arriving while the server
// starts (the node starts its chain before its RPC server) neither block
// nor stop the start.
func TestNotifyDuringStart(t *testing.T) {
	node := newTestNode(t)
	tip, err := node.tipBlock()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		srv, err := New(&Config{
			Listen: []string{"127.0.0.1:0"}, DisableTLS: true, User: testUser, Pass: testPass,
			Params: node.params, Chain: node.chain, Mempool: node.pool, Backend: node, RelayFee: 0.00001,
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for j := 0; j < 4; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					srv.NotifyBlockConnected(tip)
				}
			}()
		}
		started := make(chan error, 1)
		go func() { started <- srv.Start() }()
		select {
		case err := <-started:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			buf := make([]byte, 1<<20)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
			t.Fatalf("iteration %d: Start and NotifyBlockConnected deadlocked (Server.mu vs notifier.mu)", i)
		}
		close(stop)
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(ctx)
		cancel()
	}
}

package rpcext

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
)

// holdChain is btcd's chain whose BlockByHash of one block holds the
// first `hold` callers until release is closed: it keeps that many
// rescans in flight, as long rescans over a mainnet chain are.
type holdChain struct {
	*blockchain.BlockChain
	gate    chainhash.Hash
	hold    int32
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (c *holdChain) BlockByHash(h *chainhash.Hash) (*btcutil.Block, error) {
	if *h == c.gate && c.calls.Add(1) <= c.hold {
		c.entered <- struct{}{}
		<-c.release
	}
	return c.BlockChain.BlockByHash(h)
}

// TestConcurrentRescansQueued: lnd's btcd notifier (chainntnfs/btcdnotify,
// RegisterSpendNtfn) issues one RescanAsync per spend registration needing a
// historical dispatch, all on its one websocket connection, and only logs a
// failed one: the spend is then never found. btcd runs every websocket
// request of a client beside the others and never refuses a rescan. Here a
// third rescan while two run waits for one of them, and then runs.
func TestConcurrentRescansQueued(t *testing.T) {
	node := matureNode(t)
	start, err := node.chain.BlockHashByHeight(1)
	if err != nil {
		t.Fatal(err)
	}
	chain := &holdChain{BlockChain: node.chain, gate: *start, hold: 2,
		entered: make(chan struct{}, 4), release: make(chan struct{})}
	ts := startServer(t, node, func(c *Config) { c.Chain = chain })
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{})

	var once sync.Once
	release := func() { once.Do(func() { close(chain.release) }) }
	defer release()

	// Three spend registrations of lnd, each with its outpoint.
	ops := make([]*wire.OutPoint, 3)
	for i := range ops {
		ops[i] = &wire.OutPoint{Hash: chainhash.Hash{byte(i + 1)}, Index: uint32(i)}
	}
	r1 := c.RescanAsync(start, nil, []*wire.OutPoint{ops[0]})
	r2 := c.RescanAsync(start, nil, []*wire.OutPoint{ops[1]})
	for i := 0; i < 2; i++ {
		select {
		case <-chain.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the first two rescans did not start")
		}
	}
	r3 := c.RescanAsync(start, nil, []*wire.OutPoint{ops[2]})
	// Answered once the server has read the third rescan, and run or
	// refused it.
	if _, err := c.GetBlockCount(); err != nil {
		t.Fatal(err)
	}
	release()
	if err := r1.Receive(); err != nil {
		t.Fatalf("rescan 1: %v", err)
	}
	if err := r2.Receive(); err != nil {
		t.Fatalf("rescan 2: %v", err)
	}
	if err3 := r3.Receive(); err3 != nil {
		t.Fatalf("third concurrent rescan of one websocket client refused: %v "+
			"(btcd runs it; lnd then never learns the outpoint's historical spend)", err3)
	}
}

// TestWaitingRescansBounded: past the two running and the
// --rpcmaxconcurrentreqs (here 5) waiting,
// a client's next rescan is refused at once (-1), so that one client
// cannot park goroutines without bound; the others all run.
func TestWaitingRescansBounded(t *testing.T) {
	node := matureNode(t)
	start, err := node.chain.BlockHashByHeight(1)
	if err != nil {
		t.Fatal(err)
	}
	chain := &holdChain{BlockChain: node.chain, gate: *start, hold: maxLongRequests,
		entered: make(chan struct{}, maxLongRequests), release: make(chan struct{})}
	const waiting = 5
	ts := startServer(t, node, func(c *Config) { c.Chain = chain; c.MaxConcurrentRequests = waiting })
	c := ts.wsClient(t, &rpcclient.NotificationHandlers{})
	var once sync.Once
	release := func() { once.Do(func() { close(chain.release) }) }
	defer release()

	op := &wire.OutPoint{Hash: chainhash.Hash{9}}
	var rs []rpcclient.FutureRescanResult
	for range maxLongRequests + waiting {
		rs = append(rs, c.RescanAsync(start, nil, []*wire.OutPoint{op}))
	}
	for range maxLongRequests {
		select {
		case <-chain.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("hang guard: the first rescans did not start")
		}
	}
	extra := c.RescanAsync(start, nil, []*wire.OutPoint{op})
	err = extra.Receive() // answered while the others still wait
	if err == nil || !strings.Contains(err.Error(), "running or waiting already") {
		t.Fatalf("rescan past %d running and %d waiting: %v, want it refused", maxLongRequests, waiting, err)
	}
	release()
	for i, r := range rs {
		if err := r.Receive(); err != nil {
			t.Fatalf("rescan %d: %v", i, err)
		}
	}
}

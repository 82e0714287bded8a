package rpcext

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/gorilla/websocket"
)

// gateChain holds every BlockByHash until gate closes and counts the calls
// waiting, so the rescans running at once can be counted.
type gateChain struct {
	*blockchain.BlockChain
	gate     chan struct{}
	inflight atomic.Int32
}

func (c *gateChain) BlockByHash(h *chainhash.Hash) (*btcutil.Block, error) {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	<-c.gate
	return c.BlockChain.BlockByHash(h)
}

// A websocket client runs at most maxLongRequests (2) rescans and long polls
// at once, more wait their turn (docs/OPERATIONS.md, --rpcmaxconcurrentreqs
// row). A rescan wrapped in a one-element batch counts as one too: were it
// run in an ordinary slot, one client could run up to
// --rpcmaxconcurrentreqs of them, each batch up to --rpcmaxbatch rescans
// long.
func TestBatchedRescansTakeLongRequestLane(t *testing.T) {
	node := newTestNode(t)
	if _, err := node.Generate(10, nil); err != nil {
		t.Fatal(err)
	}
	chain := &gateChain{BlockChain: node.chain, gate: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(chain.gate) }) }
	defer release()
	ts := startServer(t, node, func(c *Config) { c.Chain = chain; c.DisableTLS = true })
	watched, _ := newAddress(t, node)

	conn, _, err := websocket.DefaultDialer.Dial("ws://"+ts.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	auth := fmt.Sprintf(`{"jsonrpc":"1.0","method":"authenticate","params":["%s","%s"],"id":0}`, testUser, testPass)
	if err := conn.WriteMessage(websocket.TextMessage, []byte(auth)); err != nil {
		t.Fatal(err)
	}
	answers := make(chan string, 16)
	go func() {
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				close(answers)
				return
			}
			answers <- string(msg)
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case m, ok := <-answers:
			if !ok {
				t.Fatal("connection closed")
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatal("hang guard: no answer")
			return ""
		}
	}
	next() // authenticate
	const sent = 6
	for i := 1; i <= sent; i++ {
		req := fmt.Sprintf(`[{"jsonrpc":"1.0","method":"rescan","params":["%s",["%s"],[]],"id":%d}]`,
			node.params.GenesisHash, watched.EncodeAddress(), i)
		if err := conn.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	// Once getblockcount, sent after them, is answered, the server has
	// read all six and started those it runs.
	if err := conn.WriteMessage(websocket.TextMessage,
		[]byte(`{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":100}`)); err != nil {
		t.Fatal(err)
	}
	if m := next(); !strings.Contains(m, `"id":100`) {
		t.Fatalf("before getblockcount's answer: %s", m)
	}
	for deadline := time.Now().Add(30 * time.Second); chain.inflight.Load() < maxLongRequests; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("hang guard: the rescans did not start")
		}
	}
	if running := chain.inflight.Load(); running > maxLongRequests {
		t.Fatalf("one websocket client runs %d rescans at once (each in a one-element batch); "+
			"the bound is %d, more wait", running, maxLongRequests)
	}
	release()
	for answered := 0; answered < sent; {
		m := next()
		if !strings.HasPrefix(m, "[") {
			continue // a rescan's notification
		}
		if strings.Contains(m, `"error":{`) {
			t.Fatalf("rescan answer: %s", m)
		}
		answered++
	}
}

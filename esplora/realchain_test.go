package esplora

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// testNode is both servers on the project's real parts: a btcd regtest
// chain on ffldb with the Electrum index, btcd's mempool, the index's
// mempool view, the Electrum server and the Esplora server, wired as the
// node wires them.
type testNode struct {
	t       testing.TB
	h       *testchain.Harness
	idx     *indexers.ElectrumIndex
	pool    *mempool.TxPool
	overlay *indexers.Mempool
	backend *electrum.IndexBackend
	esrv    *electrum.Server
	srv     *Server
	base    string // http://host:port/api
	elAddr  string
	http    *http.Client
	reg     *prometheus.Registry

	mu    sync.Mutex
	coins []testchain.Coin
}

// newTestNode builds a chain with mature coinbases, random blocks (a
// small script pool, so many scripts have long histories) and one block
// of more than 25 transactions, and starts both servers; the Esplora server
// also serves the extra listeners.
func newTestNode(t testing.TB, prefix string, extra ...net.Listener) *testNode {
	t.Helper()
	n := &testNode{t: t}
	n.h = testchain.New(t, testchain.ElectrumIndex(t.TempDir(), indexers.Options{OnCommit: n.onCommit}, &n.idx, nil))
	if err := n.h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.h.MineEmpty(20); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(11))
	for i := 0; i < 30; i++ {
		if _, err := n.h.Mine(rng, testchain.DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	big := testchain.DefaultSpec()
	big.Txs = 60
	if _, err := n.h.Mine(rng, big); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := n.h.Mine(rng, testchain.DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	_, tipH := n.h.Tip()
	for _, c := range n.h.Coins() {
		if (!c.Coinbase || tipH+1-c.Height >= int32(n.h.Params.CoinbaseMaturity)) && c.Script.Kind.Spendable() && c.Value > 1_0000_0000 {
			n.coins = append(n.coins, c)
		}
	}
	n.serve(n.h.Chain, n.h.Params, prefix, extra...)
	return n
}

// serve starts the mempool, the Electrum server and the Esplora server on
// chain, as the node wires them.
func (n *testNode) serve(chain *blockchain.BlockChain, params *chaincfg.Params, prefix string, extra ...net.Listener) {
	t := n.t
	fees := mempool.NewFeeEstimator(mempool.DefaultEstimateFeeMaxRollback, 1)
	n.pool = testchain.NewTxPool(chain, params, fees)

	n.overlay = indexers.NewMempool(n.idx.PrevOut)
	n.backend = &electrum.IndexBackend{
		Params: params, Chain: chain, Index: n.idx, Mempool: n.overlay, Pool: n.pool,
		Relay: &electrum.PoolRelay{Pool: n.pool, Fees: fees, OnAccept: func(descs []*mempool.TxDesc) {
			n.esrv.NotifyMempool(n.overlay.Add(descs...))
		}},
	}
	el, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The tests' Electrum client asks for long histories over and over:
	// no cost throttling.
	n.esrv = electrum.New(electrum.Config{Listeners: []electrum.Listener{{Transport: electrum.TCP, Listener: el}},
		CostHardLimit: -1}, n.backend)
	if err := n.esrv.Start(); err != nil {
		t.Fatal(err)
	}
	n.elAddr = el.Addr().String()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Tests ask thousands of questions from one address: no cost limits
	// but in the test of them.
	n.srv = New(Config{Listeners: append([]net.Listener{hl}, extra...), PathPrefix: prefix, CostHardLimit: -1},
		n.backend, chain)
	// As a node with --metricslisten.
	n.reg = prometheus.NewRegistry()
	if err := n.srv.RegisterMetrics(n.reg); err != nil {
		t.Fatal(err)
	}
	if err := n.srv.Start(); err != nil {
		t.Fatal(err)
	}
	n.base = "http://" + hl.Addr().String() + prefix
	n.http = &http.Client{Timeout: time.Minute}
	chain.Subscribe(n.onChain)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.srv.Shutdown(ctx)
		_ = n.esrv.Shutdown(ctx)
	})
}

// onChain keeps btcd's mempool in step with the chain, as the node does.
func (n *testNode) onChain(note *blockchain.Notification) {
	block, ok := note.Data.(*btcutil.Block)
	if !ok {
		return
	}
	switch note.Type {
	case blockchain.NTBlockConnected:
		testchain.RemoveMined(n.pool, block)
	case blockchain.NTBlockDisconnected:
		for _, tx := range block.Transactions()[1:] {
			_, _, _ = n.pool.MaybeAcceptTransaction(tx, false, true)
		}
		n.overlay.Sync(n.pool.TxDescs())
	}
}

// onCommit reconciles the mempool view after the index commits, as the
// node does.
func (n *testNode) onCommit(c indexers.Commit) {
	if n.pool == nil {
		return
	}
	var descs []*mempool.TxDesc
	for _, d := range n.pool.TxDescs() {
		if _, ok := c.Confirmed[*d.Tx.Hash()]; !ok {
			descs = append(descs, d)
		}
	}
	n.overlay.SyncKeeping(descs, n.backend.MinedAhead)
}

// coin takes a mature anyone-can-spend coin.
func (n *testNode) coin() testchain.Coin {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.coins) == 0 {
		n.t.Fatal("out of coins")
	}
	c := n.coins[0]
	n.coins = n.coins[1:]
	return c
}

// mineMempool mines the pool's transactions into a block at the tip and
// waits for the index.
func (n *testNode) mineMempool() *btcutil.Block {
	n.t.Helper()
	var txs []*wire.MsgTx
	for _, d := range n.pool.MiningDescs() {
		txs = append(txs, d.Tx.MsgTx())
	}
	return n.mine(testchain.OrderTxs(txs)...)
}

// mine mines one block holding txs at the tip and waits for the index.
func (n *testNode) mine(txs ...*wire.MsgTx) *btcutil.Block {
	n.t.Helper()
	best := n.h.Chain.BestSnapshot()
	prev, err := n.h.Chain.BlockByHash(&best.Hash)
	if err != nil {
		n.t.Fatal(err)
	}
	prev.SetHeight(best.Height)
	return n.mineOn(prev, txs...)
}

// mineOn mines one block holding txs on prev (which may leave the tip: a
// longer branch reorganizes the chain) and waits for the index.
func (n *testNode) mineOn(prev *btcutil.Block, txs ...*wire.MsgTx) *btcutil.Block {
	n.t.Helper()
	var utxs []*btcutil.Tx
	for _, tx := range txs {
		utxs = append(utxs, btcutil.NewTx(tx))
	}
	minerTo, err := address.NewAddressWitnessPubKeyHash(bytes.Repeat([]byte{0x99}, 20), n.h.Params)
	if err != nil {
		n.t.Fatal(err)
	}
	ts := prev.MsgBlock().Header.Timestamp.Add(time.Second)
	block, err := rpctest.CreateBlock(prev, utxs, 4, ts, minerTo, nil, n.h.Params)
	if err != nil {
		n.t.Fatal(err)
	}
	block.SetHeight(prev.Height() + 1)
	if _, _, err := n.h.Chain.ProcessBlock(block, blockchain.BFNone); err != nil {
		n.t.Fatal(err)
	}
	if err := n.idx.Sync(); err != nil {
		n.t.Fatal(err)
	}
	return block
}

// get fetches a path under the API and returns the status and body.
func (n *testNode) get(path string) (int, string) {
	n.t.Helper()
	resp, err := n.http.Get(n.base + path)
	if err != nil {
		n.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		n.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// getJSON fetches a path that must answer 200 and decodes its JSON.
func (n *testNode) getJSON(path string, v any) {
	n.t.Helper()
	code, body := n.get(path)
	if code != http.StatusOK {
		n.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		n.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// getText fetches a path that must answer 200 with text.
func (n *testNode) getText(path string) string {
	n.t.Helper()
	code, body := n.get(path)
	if code != http.StatusOK {
		n.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return body
}

func (n *testNode) post(path, body string) (int, string) {
	n.t.Helper()
	resp, err := n.http.Post(n.base+path, "text/plain", strings.NewReader(body))
	if err != nil {
		n.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// electrumClient is a minimal Electrum protocol client over TCP.
type electrumClient struct {
	conn net.Conn
	r    *bufio.Reader
	id   int
}

func (n *testNode) dialElectrum() *electrumClient {
	n.t.Helper()
	conn, err := net.Dial("tcp", n.elAddr)
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { conn.Close() })
	c := &electrumClient{conn: conn, r: bufio.NewReaderSize(conn, 1<<20)}
	c.call(n.t, "server.version", []any{"esplora-test", "1.4"}, nil)
	return c
}

func (c *electrumClient) call(t testing.TB, method string, params []any, out any) {
	t.Helper()
	c.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.conn.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Error) > 0 && string(resp.Error) != "null" {
		t.Fatalf("%s: %s", method, resp.Error)
	}
	if out != nil {
		if err := json.Unmarshal(resp.Result, out); err != nil {
			t.Fatalf("%s: %v in %s", method, err, resp.Result)
		}
	}
}

// chainOracle is what the chain itself says, computed by walking every
// main-chain block: each output's script and value, each output's spender,
// and per script its funded and spent outputs.
type chainOracle struct {
	blocks  []*btcutil.Block
	outputs map[wire.OutPoint]*wire.TxOut
	spender map[wire.OutPoint]spendRef
	txBlock map[chainhash.Hash]int32
	stats   map[indexers.ScriptHash]*scriptStats
}

type spendRef struct {
	txid   chainhash.Hash
	vin    int
	height int32
}

func buildOracle(t testing.TB, chain *blockchain.BlockChain) *chainOracle {
	t.Helper()
	o := &chainOracle{
		outputs: map[wire.OutPoint]*wire.TxOut{}, spender: map[wire.OutPoint]spendRef{},
		txBlock: map[chainhash.Hash]int32{}, stats: map[indexers.ScriptHash]*scriptStats{},
	}
	stat := func(script []byte) *scriptStats {
		sh := indexers.ScriptHashFromScript(script)
		if o.stats[sh] == nil {
			o.stats[sh] = &scriptStats{}
		}
		return o.stats[sh]
	}
	best := chain.BestSnapshot()
	for h := int32(0); h <= best.Height; h++ {
		block, err := chain.BlockByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		o.blocks = append(o.blocks, block)
		for _, tx := range block.Transactions() {
			txid := *tx.Hash()
			o.txBlock[txid] = h
			touched := map[*scriptStats]bool{}
			if !blockchain.IsCoinBaseTx(tx.MsgTx()) {
				for vin, in := range tx.MsgTx().TxIn {
					prev := o.outputs[in.PreviousOutPoint]
					o.spender[in.PreviousOutPoint] = spendRef{txid, vin, h}
					st := stat(prev.PkScript)
					st.SpentTxoCount++
					st.SpentTxoSum += prev.Value
					touched[st] = true
				}
			}
			for vout, out := range tx.MsgTx().TxOut {
				o.outputs[wire.OutPoint{Hash: txid, Index: uint32(vout)}] = out
				if h == 0 {
					continue // the genesis coinbase is in no history
				}
				st := stat(out.PkScript)
				st.FundedTxoCount++
				st.FundedTxoSum += out.Value
				touched[st] = true
			}
			for st := range touched {
				st.TxCount++
			}
		}
	}
	return o
}

package esplora

// Confirmed and unconfirmed data around block boundaries and
// reorganizations: never both, never neither.

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// heldNode is a testNode whose index writer can be held in its commit
// callback (after the commit is published, before the mempool view's
// reconciliation), so that the chain moves on while the index stays.
type heldNode struct {
	*testNode
	mu   sync.Mutex
	gate chan struct{}
	held chan struct{}
	// reconciled is the height of the last commit whose mempool view
	// reconciliation is done.
	reconciled int32
}

func newHeldNode(t *testing.T) *heldNode {
	t.Helper()
	hn := &heldNode{testNode: &testNode{t: t}}
	n := hn.testNode
	n.h = testchain.New(t, testchain.ElectrumIndex(t.TempDir(), indexers.Options{OnCommit: func(c indexers.Commit) {
		hn.mu.Lock()
		gate, held := hn.gate, hn.held
		hn.mu.Unlock()
		if gate != nil {
			select {
			case held <- struct{}{}:
			default:
			}
			<-gate
		}
		n.onCommit(c)
		hn.mu.Lock()
		hn.reconciled = c.Tip.Height
		hn.mu.Unlock()
	}}, &n.idx, nil))
	if err := n.h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.h.MineEmpty(20); err != nil {
		t.Fatal(err)
	}
	_, tipH := n.h.Tip()
	for _, c := range n.h.Coins() {
		if (!c.Coinbase || tipH+1-c.Height >= int32(n.h.Params.CoinbaseMaturity)) && c.Script.Kind.Spendable() && c.Value > 1_0000_0000 {
			n.coins = append(n.coins, c)
		}
	}
	n.serve(n.h.Chain, n.h.Params, "")
	return hn
}

func (hn *heldNode) hold() {
	hn.mu.Lock()
	hn.gate, hn.held = make(chan struct{}), make(chan struct{}, 1)
	hn.mu.Unlock()
	hn.t.Cleanup(hn.release)
}

func (hn *heldNode) release() {
	hn.mu.Lock()
	if hn.gate != nil {
		close(hn.gate)
		hn.gate = nil
	}
	hn.mu.Unlock()
}

// tipBlock returns the chain's tip block with its height.
func (hn *heldNode) tipBlock() *btcutil.Block {
	best := hn.h.Chain.BestSnapshot()
	b, err := hn.h.Chain.BlockByHash(&best.Hash)
	if err != nil {
		hn.t.Fatal(err)
	}
	b.SetHeight(best.Height)
	return b
}

// process mines a block with txs on prev, timed after it by after, and has
// the chain process it without waiting for the index.
func (hn *heldNode) process(prev *btcutil.Block, after time.Duration, txs ...*wire.MsgTx) *btcutil.Block {
	hn.t.Helper()
	var utxs []*btcutil.Tx
	for _, tx := range txs {
		utxs = append(utxs, btcutil.NewTx(tx))
	}
	minerTo, err := address.NewAddressWitnessPubKeyHash(bytes.Repeat([]byte{0x99}, 20), hn.h.Params)
	if err != nil {
		hn.t.Fatal(err)
	}
	block, err := rpctest.CreateBlock(prev, utxs, 4, prev.MsgBlock().Header.Timestamp.Add(after), minerTo, nil, hn.h.Params)
	if err != nil {
		hn.t.Fatal(err)
	}
	block.SetHeight(prev.Height() + 1)
	if _, _, err := hn.h.Chain.ProcessBlock(block, blockchain.BFNone); err != nil {
		hn.t.Fatal(err)
	}
	return block
}

// pay broadcasts a transaction paying coin's value less 10,000 to a
// P2WPKH script made of b, and returns it with the script and the value.
func (hn *heldNode) pay(b byte) (*wire.MsgTx, []byte, int64) {
	hn.t.Helper()
	coin := hn.coin()
	payTo := p2wpkhScript(b)
	value := coin.Value - 10_000
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(value, payTo))
	if code, body := hn.post("/tx", txHex(tx)); code != http.StatusOK {
		hn.t.Fatalf("POST /tx: %d %s", code, body)
	}
	return tx, payTo, value
}

func p2wpkhScript(b byte) []byte { return append([]byte{0x00, 0x14}, bytes.Repeat([]byte{b}, 20)...) }

func esploraHash(script []byte) string {
	sh := indexers.ScriptHashFromScript(script)
	return hex.EncodeToString(sh[:])
}

// TestOutspendMissesMinedAheadSpender: the spender of an output, mined a
// block ahead of the index, is the one the address answers show as
// unconfirmed.
func TestOutspendMissesMinedAheadSpender(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, _ := hn.pay(0x81)
	hn.hold()
	nb := hn.process(hn.tipBlock(), time.Second)
	<-hn.held
	hn.process(nb, time.Second, tx)

	txid := tx.TxHash().String()
	var mem []txValue
	hn.getJSON("/scripthash/"+esploraHash(payTo)+"/txs/mempool", &mem)
	if len(mem) != 1 || mem[0].TxID != txid || mem[0].Status.Confirmed {
		t.Fatalf("payee's txs/mempool %+v, want T unconfirmed", mem)
	}
	var sp spendValue
	hn.getJSON(fmt.Sprintf("/tx/%s/outspend/%d", tx.TxIn[0].PreviousOutPoint.Hash, tx.TxIn[0].PreviousOutPoint.Index), &sp)
	if !sp.Spent || sp.TxID != txid {
		t.Fatalf("outspend of the coin %+v, while T spending it is served as unconfirmed; want spent by %s", sp, txid)
	}
}

// TestReorgWindowStatsCountTwice: while the index has yet to undo a block
// the chain left, chain_stats and mempool_stats count its transaction
// once.
func TestReorgWindowStatsCountTwice(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, value := hn.pay(0x82)
	parent := hn.tipBlock()
	hn.hold()
	hn.process(parent, time.Second, tx) // a
	<-hn.held
	type view struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	path := "/scripthash/" + esploraHash(payTo)
	var v view
	hn.getJSON(path, &v)
	if v.ChainStats.TxCount != 1 || v.MempoolStats.TxCount != 0 {
		t.Fatalf("stats at a: %+v", v)
	}
	b1 := hn.process(parent, 2*time.Second)
	hn.process(b1, time.Second) // reorganized; T back in btcd's pool
	hn.getJSON(path, &v)
	if v.ChainStats.FundedTxoSum+v.MempoolStats.FundedTxoSum != value {
		t.Fatalf("stats in the reorganization %+v: T's output (%d) counted in chain_stats and mempool_stats", v, value)
	}
}

// TestReorgWindowStatsCold: stats first asked in the window, with nothing
// cached at a, are answered and count T's output once.
func TestReorgWindowStatsCold(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, value := hn.pay(0x85)
	parent := hn.tipBlock()
	hn.hold()
	hn.process(parent, time.Second, tx) // a
	<-hn.held
	b1 := hn.process(parent, 2*time.Second)
	hn.process(b1, time.Second) // reorganized; T back in btcd's pool
	var v struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	hn.getJSON("/scripthash/"+esploraHash(payTo), &v)
	if v.ChainStats.FundedTxoSum+v.MempoolStats.FundedTxoSum != value ||
		v.ChainStats.TxCount+v.MempoolStats.TxCount != 1 {
		t.Fatalf("stats in the reorganization %+v: T's output (%d) not counted once", v, value)
	}
}

// TestReorgWindowNewBranchTxMissing: a transaction of the new branch the
// index has yet to take is served as unconfirmed.
func TestReorgWindowNewBranchTxMissing(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, _ := hn.pay(0x83)
	parent := hn.tipBlock()
	hn.hold()
	hn.process(parent, time.Second) // a, without X
	<-hn.held
	b1 := hn.process(parent, 2*time.Second, tx)
	hn.process(b1, time.Second)

	txid := tx.TxHash().String()
	el := hn.dialElectrum()
	var pool []struct {
		TxHash string `json:"tx_hash"`
		Height int32  `json:"height"`
	}
	sh := indexers.ScriptHashFromScript(payTo)
	el.call(t, "blockchain.scripthash.get_mempool", []any{sh.String()}, &pool)
	if len(pool) != 1 || pool[0].TxHash != txid {
		t.Fatalf("Electrum get_mempool %+v, want X", pool)
	}
	var mem, chain []txValue
	hn.getJSON("/scripthash/"+esploraHash(payTo)+"/txs/mempool", &mem)
	hn.getJSON("/scripthash/"+esploraHash(payTo)+"/txs/chain", &chain)
	code, _ := hn.get("/tx/" + txid)
	if len(mem) == 0 && len(chain) == 0 {
		t.Fatalf("X is in neither txs/mempool %+v nor txs/chain %+v (GET /tx/X: %d), "+
			"while Electrum get_mempool lists it unconfirmed", mem, chain, code)
	}
}

// TestReorgWindowFirstReadsAnswered: while the index has yet to undo a
// block the chain left, a script's first stats and its unspent outputs are
// answered, as the rest of the answers are, for the chain the index tip
// ends: its outputs' blocks are the index's, as /tx/:txid/status gives
// them.
func TestReorgWindowFirstReadsAnswered(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, value := hn.pay(0x84)
	parent := hn.tipBlock()
	hn.hold()
	a := hn.process(parent, time.Second, tx)
	<-hn.held
	b1 := hn.process(parent, 2*time.Second)
	hn.process(b1, time.Second) // reorganized; the index is still at a

	path := "/scripthash/" + esploraHash(payTo)
	if code, body := hn.get(path); code != http.StatusOK {
		t.Fatalf("GET %s in the reorganization: %d %s", path, code, body)
	}
	var v struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	hn.getJSON(path, &v)
	if v.ChainStats.TxCount != 1 || v.ChainStats.FundedTxoSum != value || v.MempoolStats.TxCount != 0 {
		t.Fatalf("stats at the index tip a: %+v", v)
	}
	if code, body := hn.get(path + "/utxo"); code != http.StatusOK {
		t.Fatalf("GET %s/utxo in the reorganization: %d %s", path, code, body)
	}
	var utxos []utxoValue
	hn.getJSON(path+"/utxo", &utxos)
	var st txStatus
	hn.getJSON("/tx/"+tx.TxHash().String()+"/status", &st)
	if len(utxos) != 1 || utxos[0].Status.BlockHash != a.Hash().String() || st.BlockHash != a.Hash().String() {
		t.Fatalf("utxo %+v and status %+v, want both in block a %s", utxos, st, a.Hash())
	}
}

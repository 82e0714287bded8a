package esplora

// Answers made of a confirmed part (the index's rows) and an unconfirmed
// part (the mempool view) while the index commits a block between the two
// reads. The index commits whenever the chain moves, so
// the tests place the commit between the reads with an Index that lets the
// held writer go at a chosen read, on the test node's real index, mempool
// view and chain.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// commitAtIndex is the test node's Index whose first read named at lets
// the held index writer go and waits until the index tip is at height and
// the mempool view reconciled with it: the read then straddles the commit,
// as atOneTip must handle. (Between a commit and the view's reconciliation
// a transaction an undo returns to btcd's pool is in neither part.)
type commitAtIndex struct {
	Index
	hn     *heldNode
	at     string
	height int32
	once   sync.Once
}

func (c *commitAtIndex) before(name string) {
	if name != c.at {
		return
	}
	c.once.Do(func() {
		c.hn.release()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			c.hn.mu.Lock()
			done := c.hn.reconciled >= c.height
			c.hn.mu.Unlock()
			if done {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		c.hn.t.Errorf("the index did not reach height %d", c.height)
	})
}

func (c *commitAtIndex) MempoolEntries(sh indexers.ScriptHash) []electrum.MempoolEntry {
	c.before("MempoolEntries")
	return c.Index.MempoolEntries(sh)
}

func (c *commitAtIndex) MempoolUnspent(sh indexers.ScriptHash) []indexers.Unspent {
	c.before("MempoolUnspent")
	return c.Index.MempoolUnspent(sh)
}

func (c *commitAtIndex) HistoryPage(sh indexers.ScriptHash, before *chainhash.Hash, n, limit int) ([]indexers.HistoryEntry, indexers.Tip, error) {
	c.before("HistoryPage")
	return c.Index.HistoryPage(sh, before, n, limit)
}

// serveCommitAt starts a second Esplora server on the held node's backend
// and chain whose index commits the held blocks at the read named at, and
// returns its base URL.
func serveCommitAt(hn *heldNode, at string, height int32) string {
	t := hn.t.(*testing.T)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{Listeners: []net.Listener{l}, CostHardLimit: -1},
		&commitAtIndex{Index: hn.backend, hn: hn, at: at, height: height}, hn.h.Chain)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return "http://" + l.Addr().String()
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// minedAhead pays a fresh script with T, mines an empty block the index
// commits and holds at, then T in the next block: T is mined a block ahead
// of the index (unconfirmed for every answer until the index commits it).
func minedAhead(t *testing.T, b byte) (*heldNode, string, []byte, int64, int32) {
	hn := newHeldNode(t)
	tx, payTo, value := hn.pay(b)
	hn.hold()
	nb := hn.process(hn.tipBlock(), time.Second)
	<-hn.held
	withT := hn.process(nb, time.Second, tx)
	return hn, tx.TxHash().String(), payTo, value, withT.Height()
}

// TestStatsCommitBetweenChainAndMempool: /scripthash/:h reads chain_stats
// at one index tip and mempool_stats after it; a block committed between
// the two leaves T, which it confirms, in neither.
func TestStatsCommitBetweenChainAndMempool(t *testing.T) {
	hn, _, payTo, value, height := minedAhead(t, 0xc1)
	type view struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	var before view
	hn.getJSON("/scripthash/"+esploraHash(payTo), &before)
	if before.ChainStats.TxCount != 0 || before.MempoolStats.TxCount != 1 {
		t.Fatalf("precondition: T mined ahead of the index counts as unconfirmed: %+v", before)
	}
	base := serveCommitAt(hn, "MempoolEntries", height)
	var v view
	code, body := getBody(t, base+"/scripthash/"+esploraHash(payTo))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if v.ChainStats.TxCount+v.MempoolStats.TxCount != 1 || v.ChainStats.FundedTxoSum+v.MempoolStats.FundedTxoSum != value {
		t.Fatalf("stats read across the commit of T's block: %+v; T (%d) counted in neither chain_stats nor mempool_stats", v, value)
	}
}

// TestTxsUndoBetweenMempoolAndChain: /scripthash/:h/txs reads the
// unconfirmed part, then the confirmed page. In a reorganization the index
// has yet to undo, T (in a, left by the chain) is confirmed for the index
// and so not unconfirmed; the undo committed between the two reads leaves
// T, back in btcd's pool, in neither part of the answer.
func TestTxsUndoBetweenMempoolAndChain(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, _ := hn.pay(0xc2)
	parent := hn.tipBlock()
	hn.hold()
	a := hn.process(parent, time.Second, tx) // a, holding T
	<-hn.held
	b1 := hn.process(parent, 2*time.Second)
	hn.process(b1, time.Second) // reorganized; T back in btcd's pool, the index still at a
	txid := tx.TxHash().String()

	var before []txValue
	hn.getJSON("/scripthash/"+esploraHash(payTo)+"/txs", &before)
	if len(before) != 1 || !before[0].Status.Confirmed || before[0].Status.BlockHash != a.Hash().String() {
		t.Fatalf("precondition: T confirmed in a for the index: %+v", before)
	}
	base := serveCommitAt(hn, "HistoryPage", a.Height()+1)
	code, body := getBody(t, base+"/scripthash/"+esploraHash(payTo)+"/txs")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var txs []txValue
	if err := json.Unmarshal([]byte(body), &txs); err != nil {
		t.Fatal(err)
	}
	var after []txValue
	hn.getJSON("/scripthash/"+esploraHash(payTo)+"/txs", &after)
	if len(txs) != 1 || txs[0].TxID != txid {
		t.Fatalf("/txs read across the undo of a: %d transactions, want T (%s) once (the next answer lists %d, unconfirmed %v)",
			len(txs), txid, len(after), len(after) == 1 && !after[0].Status.Confirmed)
	}
}

// TestUtxoCommitBetweenChainAndMempool: /utxo reads the confirmed unspent
// outputs, then the unconfirmed ones; a block committed between them
// leaves T's output, unspent all along, out of the answer.
func TestUtxoCommitBetweenChainAndMempool(t *testing.T) {
	hn, txid, payTo, value, height := minedAhead(t, 0xc3)
	base := serveCommitAt(hn, "MempoolUnspent", height)
	code, body := getBody(t, base+"/scripthash/"+esploraHash(payTo)+"/utxo")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var utxos []utxoValue
	if err := json.Unmarshal([]byte(body), &utxos); err != nil {
		t.Fatal(err)
	}
	if len(utxos) != 1 || utxos[0].TxID != txid || utxos[0].Value != value {
		t.Fatalf("/utxo read across the commit of T's block: %+v, want T's output (%s:0, %d)", utxos, txid, value)
	}
}

// Answers at their documented edges, each unchecked by earlier tests:
// get_merkle above the tip, get_mempool at the history limit, a status
// change while a subscribe's answer is held.

package electrum

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestGetMerkleAboveTipNamesTheTransaction pins get_merkle's refusal of a
// height above the tip: docs/PROTOCOL.md (blockchain.transaction.get_merkle)
// and /work/shared/PROTOCOL.md (ElectrumX) answer "tx T not in block at
// height H" (code 1) there, as for a block without the transaction, not the
// header methods' "height H out of range".
func TestGetMerkleAboveTipNamesTheTransaction(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.6")
	txid := fx.tx1.TxHash().String()
	for _, h := range []int{5, 1000} { // the tip is at 4
		_, rerr := c.call("blockchain.transaction.get_merkle", txid, h)
		want := fmt.Sprintf("tx %s not in block at height %d", txid, h)
		if rerr == nil || rerr.Code != codeBadRequest || rerr.Message != want {
			t.Errorf("get_merkle(tx1, %d): %v, want code 1 %q", h, rerr, want)
		}
	}
	// A block below the tip without the transaction: the same answer.
	_, rerr := c.call("blockchain.transaction.get_merkle", txid, 3)
	if want := fmt.Sprintf("tx %s not in block at height 3", txid); rerr == nil || rerr.Code != codeBadRequest || rerr.Message != want {
		t.Errorf("get_merkle(tx1, 3): %v, want code 1 %q", rerr, want)
	}
}

// TestGetMempoolOverHistoryLimit pins get_mempool's history limit: a
// script with more unconfirmed transactions than the history limit is
// refused as get_history and subscribe refuse it, code 1 "history too
// large" (docs/PROTOCOL.md, /work/shared/PROTOCOL.md §error codes), and one
// at the limit is answered whole. Without the check the answer is built
// and sent (or refused as a response too large, code -32600).
func TestGetMempoolOverHistoryLimit(t *testing.T) {
	fx := newFixture(t, func(c *Config) { c.MaxSend = minMaxSend })
	limit := fx.s.cfg.historyLimit()
	d := p2wpkh(0xdd)
	shD := indexers.ScriptHashFromScript(d)
	// Unconfirmed transactions paying d, put in the fake's pool directly
	// (its Broadcast scans the pool for each input: thousands would be
	// slow). They spend a confirmed coinbase, found before the pool is.
	add := func(from, n int) {
		fx.f.mu.Lock()
		defer fx.f.mu.Unlock()
		for i := from; i < from+n; i++ {
			fx.f.mempool = append(fx.f.mempool, spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}},
				wire.NewTxOut(int64(1000+i), d)))
		}
	}
	add(0, limit)
	c := fx.client(t, "1.4")
	var es []historyItem
	c.must(&es, "blockchain.scripthash.get_mempool", shD.String())
	if len(es) != limit {
		t.Fatalf("get_mempool at the history limit (%d) answered %d entries", limit, len(es))
	}
	add(limit, 1)
	if _, rerr := c.call("blockchain.scripthash.get_mempool", shD.String()); rerr == nil || rerr.Code != codeBadRequest || rerr.Message != "history too large" {
		t.Fatalf("get_mempool of %d entries, over the history limit %d: %v, want code 1 \"history too large\"", limit+1, limit, rerr)
	}
	c.must(nil, "server.ping")
}

// gateBackend is the fake chain whose Unspent of one script waits until
// release is closed: it keeps a batch's answer from being queued while its
// other members are done.
type gateBackend struct {
	*fakeBackend
	gated   indexers.ScriptHash
	entered chan struct{}
	release chan struct{}
}

func (g *gateBackend) Unspent(sh indexers.ScriptHash, limit int) ([]indexers.Unspent, indexers.Tip, error) {
	if sh == g.gated {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.fakeBackend.Unspent(sh, limit)
}

// TestStatusChangeWhileSubscribeAnswerHeldIsSent: a script's status that
// changes after its subscribe read it but before the answer is queued (the
// answer waits for the rest of its batch) is held while the subscription is
// pending and sent right after the answer (docs/PROTOCOL.md §4.2: a client
// is told every status change after the one answered). Dropping it leaves
// the wallet with the old status until the next change.
func TestStatusChangeWhileSubscribeAnswerHeldIsSent(t *testing.T) {
	fx := newFixtureChain(t)
	g := &gateBackend{fakeBackend: fx.f, gated: fx.shB, entered: make(chan struct{}, 1), release: make(chan struct{})}
	fx.s, fx.addr = startServer(t, g, func(c *Config) { c.AnswerCache = -1 })
	d := p2wpkh(0xdd)
	shD := indexers.ScriptHashFromScript(d)
	lc := dialLines(t, fx.addr)
	lc.negotiate()
	lc.send(`[{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.subscribe","params":["` + shD.String() + `"]},` +
		`{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.listunspent","params":["` + fx.shB.String() + `"]}]`)
	<-g.entered
	// Batch members run in order: the subscribe read D's status (no
	// history) before listunspent reached the gate.
	tx := spend([]wire.OutPoint{{Hash: fx.tx1.TxHash(), Index: 1}}, wire.NewTxOut(1_0000_0000, d))
	if err := fx.f.Broadcast(tx); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool([]indexers.ScriptHash{shD})
	if err := fx.s.flushNotifications(contextWithTimeout(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	var batch []rpcResponse
	if err := json.Unmarshal(lc.line(), &batch); err != nil || len(batch) != 2 {
		t.Fatalf("batch answer: %v %v", batch, err)
	}
	note := string(lc.line())
	if !strings.Contains(note, `"blockchain.scripthash.subscribe"`) || !strings.Contains(note, shD.String()) {
		t.Fatalf("after the batch answer: %s, want D's status notification", note)
	}
}

package electrum

import (
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestBatchOverflowErrorCountedOnce: a batch member answered with an error
// whose error then takes the batch past MaxSend counts once in
// electrum_request_errors_total.
func TestBatchOverflowErrorCountedOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	fx.s, fx.addr = startServerMetrics(t, fx.f, func(c *Config) {
		c.MaxSend = minMaxSend
		// The banner's answer leaves room for the next member's
		// "response too large" but not for its longer error answer,
		// which repeats 100 bytes of the argument.
		c.Banner = strings.Repeat("b", minMaxSend-160)
	}, reg)
	c := fx.client(t, "1.4")
	c.send(`[{"jsonrpc":"2.0","id":1,"method":"server.banner"},` +
		`{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.get_balance","params":["` + strings.Repeat("z", 100) + `"]}]`)
	var rs []rpcResponse
	select {
	case rs = <-c.batches:
	case <-time.After(30 * time.Second):
		t.Fatal("no batch answer")
	}
	if len(rs) != 2 || rs[1].Error == nil || !strings.Contains(rs[1].Error.Message, "response too large") {
		t.Fatalf("batch answer %+v: want the second member replaced by response too large", rs)
	}
	labels := map[string]string{"method": "blockchain.scripthash.get_balance"}
	if v, _ := metricValue(t, reg, "electrum_requests_total", labels); v != 1 {
		t.Fatalf("electrum_requests_total{get_balance} = %v, want 1", v)
	}
	if v, _ := metricValue(t, reg, "electrum_request_errors_total", labels); v != 1 {
		t.Fatalf("one failed get_balance request counted %v times in electrum_request_errors_total, want 1", v)
	}
}

// TestChildOfMinedAheadParentHeight: while a parent the chain has mined is
// unconfirmed beside the index (a block behind), its child in the pool has
// height -1 in the same answer.
func TestChildOfMinedAheadParentHeight(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	target := p2wpkh(0x5d)
	sh := indexers.ScriptHashFromScript(target)
	change := &n.h.Pool.Spendable[1]
	coin := n.coin()
	tx1 := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(1_0000_0000, target),
		wire.NewTxOut(coin.Value-1_0000_0000-20_000, change.PkScript))
	tx2 := testchain.SpendTx([]testchain.Coin{changeCoin(tx1, 1, change)}, wire.NewTxOut(5000_0000, target),
		wire.NewTxOut(tx1.TxOut[1].Value-5000_0000-30_000, change.PkScript))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx1))
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx2))
	heights := func() map[string]int32 {
		t.Helper()
		var pool []historyItem
		c.must(&pool, "blockchain.scripthash.get_mempool", sh.String())
		out := map[string]int32{}
		for _, e := range pool {
			out[e.TxHash] = e.Height
		}
		return out
	}
	id1, id2 := tx1.TxHash().String(), tx2.TxHash().String()
	if h := heights(); h[id1] != 0 || h[id2] != -1 {
		t.Fatalf("in the pool: get_mempool heights %v, want %s:0 %s:-1", h, id1[:8], id2[:8])
	}

	n.hold()
	n.process(nil, time.Second)
	<-n.held // the index holds that block and waits
	n.process(nil, time.Second, tx1)
	if h := tx1.TxHash(); n.pool.IsTransactionInPool(&h) {
		t.Fatal("btcd's pool still holds the mined parent")
	}
	if h := tx2.TxHash(); !n.pool.IsTransactionInPool(&h) {
		t.Fatal("btcd's pool dropped the child")
	}
	h := heights()
	if _, ok := h[id1]; !ok {
		t.Fatalf("the mined parent is not unconfirmed while the index is a block behind: %v", h)
	}
	if h[id2] != -1 {
		t.Fatalf("get_mempool lists the parent %s as unconfirmed (height %d) and its child %s at height %d; "+
			"a child of an unconfirmed parent is -1", id1[:8], h[id1], id2[:8], h[id2])
	}
}

// TestMinedAheadBeyondMaxAhead: with the index more than maxAhead blocks
// behind the chain (catching up), a transaction btcd's pool dropped is not
// counted as unconfirmed, so nothing is listed that cannot be fetched.
func TestMinedAheadBeyondMaxAhead(t *testing.T) {
	n := newRealNode(t, 0, nil)
	c := dial(t, n.addr)
	c.negotiate("1.4")
	coin := n.coin()
	payTo := p2wpkh(0x5c)
	payee := indexers.ScriptHashFromScript(payTo)
	tx := testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, payTo))
	var txid string
	c.must(&txid, "blockchain.transaction.broadcast", txHex(tx))

	n.hold()
	n.process(nil, time.Second)
	<-n.held
	n.process(nil, time.Second, tx)
	for i := 0; i < maxAhead; i++ {
		n.process(nil, time.Second)
	}
	tip, _ := n.idx.LatestTip()
	if best := n.h.Chain.BestSnapshot(); best.Height-tip.Height != maxAhead+1 {
		t.Fatalf("chain at %d, index at %d", best.Height, tip.Height)
	}
	var pool []historyItem
	c.must(&pool, "blockchain.scripthash.get_mempool", payee.String())
	shown := false
	for _, e := range pool {
		shown = shown || e.TxHash == txid
	}
	if shown {
		t.Fatalf("get_mempool shows %s, mined %d blocks past the index tip, as unconfirmed", txid[:8], maxAhead)
	}
}

// TestHeldNotificationCountedOnlyWhenQueued: a notification held back for a
// subscription's answer counts in electrum_notifications_total only when
// its session is still there to get it.
func TestHeldNotificationCountedOnlyWhenQueued(t *testing.T) {
	reg := prometheus.NewRegistry()
	fx := newFixtureChain(t)
	fx.s, fx.addr = startServerMetrics(t, fx.f, nil, reg)
	fx.client(t, "1.4")
	var ss *session
	for deadline := time.Now().Add(5 * time.Second); ss == nil && time.Now().Before(deadline); {
		fx.s.mu.Lock()
		for s := range fx.s.sessions {
			ss = s
		}
		fx.s.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	if ss == nil {
		t.Fatal("no session")
	}
	ss.close()
	before, _ := metricValue(t, reg, "electrum_notifications_total", nil)
	var sh indexers.ScriptHash
	status := "00"
	ss.sendHeld(statusNotification(sh.String(), &status))
	after, _ := metricValue(t, reg, "electrum_notifications_total", nil)
	if after != before {
		t.Fatalf("a held notification for a closed session (never queued) counted in electrum_notifications_total: %v -> %v",
			before, after)
	}
}

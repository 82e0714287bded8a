package esplora

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// gatedTxs is the test node's Index with the transaction reads of one
// script's history (the stats' HistoryTxs) held until open is closed.
type gatedTxs struct {
	Index
	sh      indexers.ScriptHash
	open    chan struct{}
	arrived chan struct{}
}

func (g *gatedTxs) HistoryTxs(sh indexers.ScriptHash, from int, fn func(int, indexers.HistoryEntry, []byte) error) (indexers.Tip, error) {
	if sh == g.sh {
		g.arrived <- struct{}{}
		<-g.open
	}
	return g.Index.HistoryTxs(sh, from, fn)
}

// TestOutspendsAnsweredWhileStatsReadTransactions: the reader places bound
// the first-time stats of histories so that they leave the other requests
// the rest of the CPU. A client's outspends, whose spent output is found in
// its script's history, are answered while every place is taken by stats
// reading their transactions.
func TestOutspendsAnsweredWhileStatsReadTransactions(t *testing.T) {
	n := newTestNode(t, "")
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 525_252)
	coin := n.coin()
	tx1 := testchain.SpendTx([]testchain.Coin{coin},
		&wire.TxOut{Value: 50_000_000, PkScript: script.PkScript},
		&wire.TxOut{Value: coin.Value - 50_000_000 - 1000, PkScript: script.PkScript})
	n.mine(tx1)
	other := testchain.NewSpendableScript(testchain.KindP2SH, 535_353)
	tx2 := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: tx1.TxHash(), Index: 0}, Value: 50_000_000, Script: &script}},
		&wire.TxOut{Value: 50_000_000 - 1000, PkScript: other.PkScript})
	n.mine(tx2)

	var busy []byte
	for _, c := range n.h.Coins() {
		busy = c.Script.PkScript
		break
	}
	busySH := indexers.ScriptHashFromScript(busy)
	idx := &gatedTxs{Index: n.backend, sh: busySH, open: make(chan struct{}), arrived: make(chan struct{}, 64)}
	s := New(Config{CostHardLimit: -1}, idx, n.h.Chain)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(idx.open)
		wg.Wait()
	})
	places := cap(s.readers)
	for i := 0; i < places; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := httptest.NewRequest(http.MethodGet, "/scripthash/"+hex.EncodeToString(busySH[:]), nil)
			r.RemoteAddr = fmt.Sprintf("198.51.100.%d:1234", i+1)
			s.ServeHTTP(httptest.NewRecorder(), r)
		}(i)
	}
	for i := 0; i < places; i++ {
		select {
		case <-idx.arrived:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d stats reading transactions", i, places)
		}
	}
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		r := httptest.NewRequest(http.MethodGet, "/tx/"+tx1.TxHash().String()+"/outspends", nil)
		r.RemoteAddr = "203.0.113.7:1234"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		done <- w
	}()
	select {
	case w := <-done:
		spent := `[{"spent":true,"txid":"` + tx2.TxHash().String() + `"`
		if w.Code != http.StatusOK || !strings.HasPrefix(w.Body.String(), spent) {
			t.Fatalf("outspends: %d %s", w.Code, w.Body.String())
		}
	case <-time.After(20 * time.Second): // a hang guard
		t.Fatalf("outspends of a spent output wait while %d stats requests read their transactions (%d reader places)",
			places, places)
	}
}

package esplora

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// commitAtRawTx is commitAtIndex whose held index writer goes at the first
// transaction read (RawTx), which /txs/chain makes after reading the page's
// history.
type commitAtRawTx struct{ *commitAtIndex }

func (c commitAtRawTx) RawTx(txid chainhash.Hash) ([]byte, indexers.TxLocation, error) {
	c.before("RawTx")
	return c.commitAtIndex.Index.RawTx(txid)
}

// TestChainPageUndoBetweenHistoryAndTxs: /txs/chain reads a page at one
// index tip. An undo committed between the page's history read and its
// transactions' would drop T (the newest entry, back in btcd's pool)
// without the next older entry taking its place: a page of 24 while 25 or
// more confirmed entries exist at either tip, where a client paging "until
// a page has fewer than 25" (BDK's esplora sync, the esplora web UI) stops.
// electrs fills its page after skipping unconfirmed entries.
func TestChainPageUndoBetweenHistoryAndTxs(t *testing.T) {
	hn := newHeldNode(t)
	const older = 26
	// One coin split in older+1 outputs, each spent by its own
	// transaction paying payTo: older of them confirmed, T unconfirmed.
	payTo := p2wpkhScript(0xd7)
	coin := hn.coin()
	split := testchain.NewSpendableScript(testchain.KindP2WSH, 717_171)
	each := (coin.Value - 100_000) / (older + 1)
	var outs []*wire.TxOut
	for i := 0; i <= older; i++ {
		outs = append(outs, &wire.TxOut{Value: each, PkScript: split.PkScript})
	}
	splitTx := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	spend := func(i int) *wire.MsgTx {
		return testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: splitTx.TxHash(), Index: uint32(i)},
			Value: each, Script: &split}}, &wire.TxOut{Value: each - 10_000, PkScript: payTo})
	}
	txs := []*wire.MsgTx{splitTx}
	for i := 0; i < older; i++ {
		txs = append(txs, spend(i))
	}
	hn.mine(txs...)
	tx := spend(older)
	if code, body := hn.post("/tx", txHex(tx)); code != http.StatusOK {
		t.Fatalf("POST /tx: %d %s", code, body)
	}
	parent := hn.tipBlock()
	hn.hold()
	a := hn.process(parent, time.Second, tx) // a, holding T
	<-hn.held
	b1 := hn.process(parent, 2*time.Second)
	hn.process(b1, time.Second) // reorganized; T back in btcd's pool, the index still at a

	path := "/scripthash/" + esploraHash(payTo) + "/txs/chain"
	var before []txValue
	hn.getJSON(path, &before)
	if len(before) != chainTxsPerPage || before[0].TxID != tx.TxHash().String() {
		t.Fatalf("precondition: first page at a is T and 24 older: %d entries", len(before))
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	idx := commitAtRawTx{&commitAtIndex{Index: hn.backend, hn: hn, at: "RawTx", height: a.Height() + 1}}
	srv := New(Config{Listeners: []net.Listener{l}, CostHardLimit: -1}, idx, hn.h.Chain)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	code, body := getBody(t, "http://"+l.Addr().String()+path)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var page []txValue
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	var after []txValue
	hn.getJSON(path, &after)
	if len(page) != chainTxsPerPage {
		t.Fatalf("/txs/chain read across the undo of a: %d entries, want %d (the history holds %d confirmed "+
			"entries at a and %d after the undo; the next answer has %d): a pager stops at this short page",
			len(page), chainTxsPerPage, older+1, older, len(after))
	}
}

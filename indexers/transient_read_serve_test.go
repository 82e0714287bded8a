package indexers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/mempool"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

// servedOnFlaky is an Electrum server on the index (its store on a flaky disk),
// btcd's pool and the index's mempool overlay, as the node wires them, with
// a connected client.
type servedOnFlaky struct {
	h       *testchain.Harness
	idx     *indexers.ElectrumIndex
	flaky   *flakyStorage
	pool    *mempool.TxPool
	overlay *indexers.Mempool
	coin    testchain.Coin
	call    func(method string, params ...any) (json.RawMessage, json.RawMessage)
}

func serveOnFlaky(t *testing.T) *servedOnFlaky {
	t.Helper()
	s := &servedOnFlaky{}
	h, idx, flaky := createOnFlaky(t, t.TempDir(), indexers.Options{})
	t.Cleanup(func() { h.Close() })
	s.h, s.idx, s.flaky = h, idx, flaky
	if err := h.MineMature(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.MineEmpty(5); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 3; i++ {
		if _, err := h.Mine(rng, testchain.DefaultSpec()); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Sync(); err != nil {
		t.Fatal(err)
	}
	_, tipH := h.Tip()
	found := false
	for _, c := range h.Coins() {
		if (!c.Coinbase || tipH+1-c.Height >= int32(h.Params.CoinbaseMaturity)) && c.Script.Kind.Spendable() && c.Value > 2_0000_0000 {
			s.coin, found = c, true
			break
		}
	}
	if !found {
		t.Fatal("no mature coin")
	}
	fees := mempool.NewFeeEstimator(mempool.DefaultEstimateFeeMaxRollback, 1)
	s.pool = testchain.NewTxPool(h.Chain, h.Params, fees)
	s.overlay = indexers.NewMempool(idx.PrevOut)
	srv := electrum.New(electrum.Config{TCPListen: []string{"127.0.0.1:0"}}, &electrum.IndexBackend{
		Params: h.Params, Chain: h.Chain, Index: idx, Mempool: s.overlay, Pool: s.pool,
		Relay: &electrum.PoolRelay{Pool: s.pool, Fees: fees, OnAccept: func(descs []*mempool.TxDesc) {
			s.overlay.Add(descs...) // as the node's dispatcher does with accepted transactions
		}}})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	conn, err := net.Dial("tcp", srv.Addrs()[electrum.TCP][0].String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(60 * time.Second)) // hang guard
	rd := bufio.NewScanner(conn)
	rd.Buffer(nil, 1<<20)
	id := 0
	s.call = func(method string, params ...any) (json.RawMessage, json.RawMessage) {
		t.Helper()
		id++
		p, _ := json.Marshal(params)
		fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, p)
		if !rd.Scan() {
			t.Fatalf("%s: no answer: %v", method, rd.Err())
		}
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(rd.Bytes(), &resp); err != nil {
			t.Fatalf("%s: %v: %s", method, err, rd.Bytes())
		}
		if string(resp.Error) == "null" {
			resp.Error = nil
		}
		return resp.Result, resp.Error
	}
	s.call("server.version", "test", "1.4")
	return s
}

// listsOnly reports whether a get_mempool answer is exactly txid.
func listsOnly(res json.RawMessage, txid string) bool {
	var es []struct {
		TxHash string `json:"tx_hash"`
	}
	_ = json.Unmarshal(res, &es)
	return len(es) == 1 && es[0].TxHash == txid
}

var flakyPayee = []byte{0x00, 0x14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}

// A transaction in btcd's pool paying a wallet's script is listed while the
// index's disk answers reads with EIO for a moment: a transaction the index
// failed to look up is not taken for one it holds, confirmed.
func TestMempoolEntriesDuringReadError(t *testing.T) {
	s := serveOnFlaky(t)
	sh := indexers.ScriptHashFromScript(flakyPayee)
	tx := testchain.SpendTx([]testchain.Coin{s.coin}, wire.NewTxOut(s.coin.Value-100_000, flakyPayee))
	if _, _, err := s.pool.MaybeAcceptTransaction(btcutil.NewTx(tx), true, false); err != nil {
		t.Fatal(err)
	}
	s.overlay.Sync(s.pool.TxDescs())
	want := tx.TxHash().String()
	if res, rerr := s.call("blockchain.scripthash.get_mempool", sh.String()); !listsOnly(res, want) {
		t.Fatalf("get_mempool before any read error: %s %s, want %s", res, rerr, want)
	}

	// The rows in tables on disk, as on any node that has run a while.
	if err := s.idx.Store().CompactRange(util.Range{}); err != nil {
		t.Fatal(err)
	}
	s.flaky.failing.Store(true)
	res, rerr := s.call("blockchain.scripthash.get_mempool", sh.String())
	s.flaky.failing.Store(false)
	if s.flaky.failed.Load() == 0 {
		t.Fatal("setup: no table read failed during the call")
	}
	t.Logf("%d reads failed with EIO; answer %s, error %s", s.flaky.failed.Load(), res, rerr)
	if rerr == nil && !listsOnly(res, want) {
		t.Errorf("get_mempool while the index's reads failed: %s and no error; the pool holds %s paying the script", res, want)
	}
}

package esplora

// Review tests: the mempool-wide endpoints against the per-transaction and
// per-script answers around block boundaries, and mempool.space's
// after_txid paging past the first 50 unconfirmed transactions.

import (
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
)

type reviewBacklog struct {
	Count    int   `json:"count"`
	Vsize    int64 `json:"vsize"`
	TotalFee int64 `json:"total_fee"`
}

// TestReorgWindowMempoolListsAgree: while the index has yet
// to undo a block the chain left, T (back in btcd's pool) is confirmed for
// /tx/:txid/status, /tx/:txid and the payee's txs (the index's view), and
// must then not be listed by /mempool/txids, /mempool and /mempool/recent
// too: a transaction is reported once.
func TestReorgWindowMempoolListsAgree(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, _ := hn.pay(0xa1)
	parent := hn.tipBlock()
	hn.hold()
	a := hn.process(parent, time.Second, tx) // a, holding T
	<-hn.held
	b1 := hn.process(parent, 2*time.Second)
	hn.process(b1, time.Second) // reorganized; T back in btcd's pool, index still at a

	txid := tx.TxHash().String()
	var st txStatus
	hn.getJSON("/tx/"+txid+"/status", &st)
	var v txValue
	hn.getJSON("/tx/"+txid, &v)
	var mem []txValue
	hn.getJSON("/scripthash/"+esploraHash(payTo)+"/txs/mempool", &mem)
	var txids []string
	hn.getJSON("/mempool/txids", &txids)
	var backlog reviewBacklog
	hn.getJSON("/mempool", &backlog)
	var recent []txOverview
	hn.getJSON("/mempool/recent", &recent)
	inRecent := slices.ContainsFunc(recent, func(o txOverview) bool { return o.TxID == txid })

	if !st.Confirmed || st.BlockHash != a.Hash().String() || !v.Status.Confirmed || len(mem) != 0 {
		t.Fatalf("precondition: T confirmed in a for the index's answers: status %+v, tx status %+v, txs/mempool %d", st, v.Status, len(mem))
	}
	if slices.Contains(txids, txid) || backlog.Count != 0 || inRecent {
		t.Fatalf("T is confirmed (/tx/T/status block %s, /tx/T confirmed, not in the payee's txs/mempool) "+
			"and unconfirmed at once: /mempool/txids %v, /mempool %+v, in /mempool/recent %v",
			st.BlockHash, txids, backlog, inRecent)
	}
}

// TestMinedAheadInMempoolLists: T mined in a block the
// index has not committed yet is unconfirmed for /tx/:txid/status and is
// in the payee's /txs/mempool (the mempool view keeps it), so it must be in
// /mempool/txids and counted by /mempool too, as electrs answers all of
// them from one mempool: otherwise it is reported neither confirmed nor in
// the mempool.
func TestMinedAheadInMempoolLists(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, _ := hn.pay(0xa2)
	hn.hold()
	nb := hn.process(hn.tipBlock(), time.Second)
	<-hn.held
	hn.process(nb, time.Second, tx) // T mined; the index is held before it

	txid := tx.TxHash().String()
	var st txStatus
	hn.getJSON("/tx/"+txid+"/status", &st)
	var mem []txValue
	hn.getJSON("/scripthash/"+esploraHash(payTo)+"/txs/mempool", &mem)
	if st.Confirmed || len(mem) != 1 || mem[0].TxID != txid {
		t.Fatalf("precondition: T unconfirmed for the index's answers: status %+v, txs/mempool %d", st, len(mem))
	}
	var txids []string
	hn.getJSON("/mempool/txids", &txids)
	var backlog reviewBacklog
	hn.getJSON("/mempool", &backlog)
	if !slices.Contains(txids, txid) || backlog.Count != 1 {
		t.Fatalf("T is unconfirmed (/tx/T/status %+v, payee's txs/mempool [%s]) but /mempool/txids %v and /mempool %+v leave it out",
			st, mem[0].TxID, txids, backlog)
	}
}

// TestAfterTxidPastFirst50Unconfirmed: a script with 56 unconfirmed
// transactions; ?after_txid= naming its 52nd is "among the script's
// unconfirmed" (docs/OPERATIONS.md) and mempool.space's electrs answers the
// unconfirmed ones after it, not 422.
func TestAfterTxidPastFirst50Unconfirmed(t *testing.T) {
	hn := newHeldNode(t)
	script := testchain.NewSpendableScript(testchain.KindP2WSH, 77_777)
	coin := hn.coin()
	const fan = 55
	const each = 1_000_000
	outs := make([]*wire.TxOut, 0, fan+1)
	for i := 0; i < fan; i++ {
		outs = append(outs, &wire.TxOut{Value: each, PkScript: script.PkScript})
	}
	outs = append(outs, &wire.TxOut{Value: coin.Value - fan*each - 20_000, PkScript: p2wpkhScript(0xa3)})
	f := testchain.SpendTx([]testchain.Coin{coin}, outs...)
	if code, body := hn.post("/tx", txHex(f)); code != http.StatusOK {
		t.Fatalf("POST fan-out: %d %s", code, body)
	}
	var children []chainhash.Hash
	for i := 0; i < fan; i++ {
		c := testchain.SpendTx([]testchain.Coin{{OutPoint: wire.OutPoint{Hash: f.TxHash(), Index: uint32(i)}, Value: each, Script: &script}},
			&wire.TxOut{Value: each - 1000, PkScript: p2wpkhScript(0xa4)})
		if code, body := hn.post("/tx", txHex(c)); code != http.StatusOK {
			t.Fatalf("POST child %d: %d %s", i, code, body)
		}
		children = append(children, c.TxHash())
	}
	// The documented order: height 0 (f) first, then the children (-1) by
	// displayed txid.
	sort.Slice(children, func(i, j int) bool { return children[i].String() < children[j].String() })
	order := append([]string{f.TxHash().String()}, func() []string {
		var s []string
		for _, h := range children {
			s = append(s, h.String())
		}
		return s
	}()...)
	esh := esploraHash(script.PkScript)
	var first []txValue
	hn.getJSON("/scripthash/"+esh+"/txs", &first)
	if len(first) != 50 || first[49].TxID != order[49] {
		t.Fatalf("precondition: first page %d txs, want the first 50 unconfirmed", len(first))
	}
	var stats struct {
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	hn.getJSON("/scripthash/"+esh, &stats)
	if stats.MempoolStats.TxCount != fan+1 {
		t.Fatalf("precondition: mempool tx_count %d, want %d", stats.MempoolStats.TxCount, fan+1)
	}
	// A client pages on from the last transaction of the first page, the
	// 50th unconfirmed one: mempool.space's electrs answers the 6 after it.
	var next []txValue
	hn.getJSON("/scripthash/"+esh+"/txs?after_txid="+order[49], &next)
	if len(next) != len(order)-50 {
		t.Errorf("GET /txs?after_txid=<50th unconfirmed, the first page's last>: %d txs, want the %d unconfirmed after it; "+
			"the script's unconfirmed transactions past the 50th are never served", len(next), len(order)-50)
	}
	after := order[51] // the 52nd unconfirmed transaction of the script
	code, body := hn.get("/scripthash/" + esh + "/txs?after_txid=" + after)
	if code != http.StatusOK {
		t.Fatalf("GET /txs?after_txid=<52nd of the script's %d unconfirmed>: %d %q; want 200 with the %d unconfirmed after it (mempool.space)",
			fan+1, code, body, len(order)-52)
	}
}

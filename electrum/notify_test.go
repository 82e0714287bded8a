package electrum

import (
	"encoding/json"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// mineAndNotify mines a fake block and pushes its events as the node does.
func (fx *fixture) mineAndNotify(script []byte, txs ...*wire.MsgTx) int32 {
	hdr, h, touched := fx.f.mine(script, txs...)
	fx.s.NotifyTip(hdr, h)
	fx.s.NotifyScriptHashes(touched)
	return h
}

// statusOf decodes a scripthash notification into (scripthash, status).
func statusOf(t *testing.T, n rpcResponse) (string, *string) {
	t.Helper()
	if n.Method != "blockchain.scripthash.subscribe" {
		t.Fatalf("notification %s %s, want a scripthash status", n.Method, n.Params)
	}
	var p []*string
	if err := json.Unmarshal(n.Params, &p); err != nil || len(p) != 2 || p[0] == nil {
		t.Fatalf("bad params %s", n.Params)
	}
	return *p[0], p[1]
}

func TestNotifications(t *testing.T) {
	fx := newFixture(t, nil)
	c := fx.client(t, "1.4")
	var hs headerResult
	c.must(&hs, "blockchain.headers.subscribe")
	d := p2wpkh(0xdd)
	var st *string
	c.must(&st, "blockchain.scripthash.subscribe", fx.shC.String())
	first := *st

	// A block paying nobody subscribed: one header notification only.
	h := fx.mineAndNotify(d)
	n := c.note()
	var hdrs []headerResult
	json.Unmarshal(n.Params, &hdrs)
	if n.Method != "blockchain.headers.subscribe" || len(hdrs) != 1 || hdrs[0].Height != h {
		t.Fatalf("header notification %s %s", n.Method, n.Params)
	}
	c.noNote(fx.s)

	// Mining tx2 (C's height-0 tx) changes C's status: tx2 confirms and
	// tx3 goes from -1 to 0. One header and one status notification.
	h = fx.mineAndNotify(d, fx.tx2)
	sawHeader, sawStatus := false, false
	for i := 0; i < 2; i++ {
		n := c.note()
		switch n.Method {
		case "blockchain.headers.subscribe":
			sawHeader = true
		default:
			sh, status := statusOf(t, n)
			if sh != fx.shC.String() || status == nil || *status == first {
				t.Fatalf("status notification %s %v", sh, status)
			}
			sawStatus = true
			var hist []historyItem
			c.must(&hist, "blockchain.scripthash.get_history", fx.shC.String())
			dg := newStatusDigest()
			for _, e := range hist {
				dg.Add(mustHash(t, e.TxHash), e.Height)
			}
			if *statusHex(dg.Sum()) != *status {
				t.Fatal("notified status differs from the history's status")
			}
			if len(hist) != 2 || hist[0].Height != h || hist[1].Height != 0 {
				t.Fatalf("history after block %+v", hist)
			}
		}
	}
	if !sawHeader || !sawStatus {
		t.Fatal("missing notifications")
	}
	c.noNote(fx.s)

	// A mempool change: a new payment to C.
	tx5 := spend([]wire.OutPoint{{Hash: fx.cb[1].TxHash(), Index: 0}}, wire.NewTxOut(1000, fx.c))
	if err := fx.f.Broadcast(tx5); err != nil {
		t.Fatal(err)
	}
	fx.s.NotifyMempool(fx.f.txScriptsLocked(tx5))
	if sh, _ := statusOf(t, c.note()); sh != fx.shC.String() {
		t.Fatalf("mempool notification for %s", sh)
	}
	// Pushing the same change again sends nothing: the status is the same.
	fx.s.NotifyMempool(fx.f.txScriptsLocked(tx5))
	c.noNote(fx.s)

	// Reorg: disconnecting the block with tx2 puts it back in the mempool;
	// C's status changes and the header goes back one block.
	touched := fx.f.disconnect()
	hdr, th := fx.f.tip()
	fx.s.NotifyTip(hdr, th)
	fx.s.NotifyScriptHashes(touched)
	gotHeader := false
	for i := 0; i < 2; i++ {
		n := c.note()
		if n.Method == "blockchain.headers.subscribe" {
			json.Unmarshal(n.Params, &hdrs)
			if hdrs[0].Height != th {
				t.Fatalf("reorg header height %d, want %d", hdrs[0].Height, th)
			}
			gotHeader = true
		} else if sh, _ := statusOf(t, n); sh != fx.shC.String() {
			t.Fatalf("reorg status for %s", sh)
		}
	}
	if !gotHeader {
		t.Fatal("no header notification on reorg")
	}
	// The unsubscribed session gets nothing more.
	c2 := fx.client(t, "1.4.2")
	c2.must(&st, "blockchain.scripthash.subscribe", fx.shC.String())
	var ok bool
	c2.must(&ok, "blockchain.scripthash.unsubscribe", fx.shC.String())
	fx.mineAndNotify(fx.c)
	c2.noNote(fx.s)
}

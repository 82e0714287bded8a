package esplora

// The block endpoints against /blocks/tip/* and /tx/:txid/status while the
// index has yet to undo a block btcd's chain left (the reorganization
// window).

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestReorgWindowTipHashAtTipHeight: BDK's esplora sync reads the tip
// hash, then block hashes by height. While the index is still at a (the
// chain reorganized onto b1, b2), /blocks/tip/hash and /blocks/tip/height
// say a is the block at H: /block-height/H, /blocks and /block/a must say
// the same (electrs answers them all from its one header list).
func TestReorgWindowTipHashAtTipHeight(t *testing.T) {
	hn := newHeldNode(t)
	parent := hn.tipBlock()
	hn.hold()
	a := hn.process(parent, time.Second)
	<-hn.held
	b1 := hn.process(parent, 2*time.Second)
	hn.process(b1, time.Second) // reorganized; the index is still at a

	tipHash := hn.getText("/blocks/tip/hash")
	tipHeight := hn.getText("/blocks/tip/height")
	if tipHash != a.Hash().String() || tipHeight != strconv.Itoa(int(a.Height())) {
		t.Fatalf("precondition: tip %s at %s, want a %s at %d", tipHash, tipHeight, a.Hash(), a.Height())
	}
	code, atHeight := hn.get("/block-height/" + tipHeight)
	var list []blockValue
	hn.getJSON("/blocks", &list)
	blockCode, _ := hn.get("/block/" + tipHash)
	statusText := hn.getText("/block/" + tipHash + "/status")
	if code != http.StatusOK || atHeight != tipHash || len(list) == 0 || list[0].ID != tipHash ||
		blockCode != http.StatusOK || statusText != `{"in_best_chain":true,"height":`+tipHeight+`,"next_best":null}` {
		t.Fatalf("/blocks/tip/hash %s at /blocks/tip/height %s, but /block-height/%s is %d %s (b1 is %s), "+
			"/blocks starts at %s, /block/<tip> is %d and /block/<tip>/status is %s",
			tipHash, tipHeight, tipHeight, code, atHeight, b1.Hash(), list[0].ID, blockCode, statusText)
	}
}

// TestReorgWindowTxBlockNotInBestChain: in the same window /tx/T/status
// says T is confirmed in a, the index tip; /block/a/status must then say a
// is in the best chain, /block/a/txs must list T, and the status of a's
// parent must name a as next_best.
func TestReorgWindowTxBlockNotInBestChain(t *testing.T) {
	hn := newHeldNode(t)
	tx, _, _ := hn.pay(0xb1)
	parent := hn.tipBlock()
	hn.hold()
	a := hn.process(parent, time.Second, tx) // a, holding T
	<-hn.held
	b1 := hn.process(parent, 2*time.Second)
	hn.process(b1, time.Second) // reorganized; the index is still at a

	txid := tx.TxHash().String()
	var st txStatus
	hn.getJSON("/tx/"+txid+"/status", &st)
	if !st.Confirmed || st.BlockHash != a.Hash().String() {
		t.Fatalf("precondition: /tx/T/status %+v, want confirmed in a %s", st, a.Hash())
	}
	var bs blockStatus
	hn.getJSON("/block/"+st.BlockHash+"/status", &bs)
	txsCode, _ := hn.get("/block/" + st.BlockHash + "/txs")
	var ps blockStatus
	hn.getJSON("/block/"+parent.Hash().String()+"/status", &ps)
	next := "null"
	if ps.NextBest != nil {
		next = *ps.NextBest
	}
	if !bs.InBestChain || txsCode != http.StatusOK || next != st.BlockHash {
		t.Fatalf("/tx/T/status: confirmed in %s at %d; but /block/%s/status in_best_chain %v, /block/%s/txs %d, "+
			"and the parent's next_best is %s (b1 %s)",
			st.BlockHash, *st.BlockHeight, st.BlockHash, bs.InBestChain, st.BlockHash, txsCode, next, b1.Hash())
	}
}

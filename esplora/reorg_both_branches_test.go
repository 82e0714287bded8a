package esplora

import (
	"testing"
	"time"
)

// TestReorgBothBranchesStatsCountTwice: T is mined in a (committed by
// the index) and again in b1 of the new branch; while the index still holds
// a, chain_stats and mempool_stats count T's output once.
func TestReorgBothBranchesStatsCountTwice(t *testing.T) {
	hn := newHeldNode(t)
	tx, payTo, value := hn.pay(0x91)
	parent := hn.tipBlock()
	hn.hold()
	hn.process(parent, time.Second, tx) // a, holding T
	<-hn.held
	type view struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	var v view
	// Asked at a first, so the window's answer starts from stats cached
	// at a; TestReorgWindowStatsCold asks first in the window.
	hn.getJSON("/scripthash/"+esploraHash(payTo), &v)
	b1 := hn.process(parent, 2*time.Second, tx) // b1 holds T too
	hn.process(b1, time.Second)                 // reorganized onto b1, b2
	hn.getJSON("/scripthash/"+esploraHash(payTo), &v)
	if v.ChainStats.FundedTxoSum+v.MempoolStats.FundedTxoSum != value ||
		v.ChainStats.TxCount+v.MempoolStats.TxCount != 1 {
		t.Fatalf("stats %+v: T (%d) counted in both chain_stats and mempool_stats", v, value)
	}
}

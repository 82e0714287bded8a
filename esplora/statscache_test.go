package esplora

import (
	"encoding/hex"
	"math/rand"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// TestUnusedScriptsLeaveLongTotals: stats asked for scripts never paid
// (cheap to send, and to answer again) take no place in the stats cache,
// and leave a long history's totals in it. The cache is made 100 entries
// here (100,000 in the server; the rule is the same).
func TestUnusedScriptsLeaveLongTotals(t *testing.T) {
	n := newTestNode(t, "")
	n.srv.stats = newStatsCache(100)

	// The longest history among the test chain's spendable coins' scripts.
	var long []byte
	most := 0
	for _, c := range n.coins {
		hist, _, err := n.idx.History(indexers.ScriptHashFromScript(c.Script.PkScript), 0)
		if err == nil && len(hist) > most {
			long, most = c.Script.PkScript, len(hist)
		}
	}
	if most < 2 {
		t.Fatalf("no script with a history of 2 entries or more (%d)", most)
	}
	longSH := indexers.ScriptHashFromScript(long)
	var v struct {
		ChainStats scriptStats `json:"chain_stats"`
	}
	n.getJSON("/scripthash/"+esploraHash(long), &v)
	if _, ok := n.srv.stats.get(longSH); !ok {
		t.Fatalf("the stats of a %d-entry history were not cached", most)
	}

	rng := rand.New(rand.NewSource(1))
	unused := 0
	for i := 0; i < 1000; i++ {
		var sh indexers.ScriptHash
		rng.Read(sh[:])
		var w struct {
			ChainStats scriptStats `json:"chain_stats"`
		}
		n.getJSON("/scripthash/"+hex.EncodeToString(sh[:]), &w)
		if w.ChainStats.TxCount != 0 {
			t.Fatalf("random script %x has a history", sh)
		}
		if _, ok := n.srv.stats.get(sh); ok {
			unused++
		}
	}
	_, kept := n.srv.stats.get(longSH)
	if unused > 0 || !kept {
		t.Errorf("after stats requests for 1,000 scripts never paid: %d of them were cached as they were asked; "+
			"the %d-entry history's totals kept: %v", unused, most, kept)
	}
}

// TestStatsCacheEvictsShortHistories: past its bound the cache drops short
// histories' totals before a long one's.
func TestStatsCacheEvictsShortHistories(t *testing.T) {
	c := newStatsCache(10)
	var long indexers.ScriptHash
	long[2] = 0xff
	c.put(long, fundedTotals{stats: scriptStats{TxCount: 50_000}})
	for i := 0; i < 1000; i++ {
		var sh indexers.ScriptHash
		sh[0], sh[1] = byte(i), byte(i>>8)
		c.put(sh, fundedTotals{stats: scriptStats{TxCount: 1 + i%3}})
	}
	if _, ok := c.get(long); !ok {
		t.Fatal("a 50,000-entry history's totals were dropped for short ones")
	}
	if len(c.m) != 10 {
		t.Fatalf("the cache holds %d entries, bound 10", len(c.m))
	}
}

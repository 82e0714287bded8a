package indexers

import (
	"math/rand"
	"testing"
)

// The heavy-hitters count keeps every script funded more than n/heavyCounters
// times among n outputs, with a count at most that much too low, in bounded
// memory, whatever the order of the outputs.
func TestHeavyCountFindsFrequentScripts(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	heavy := map[ScriptHash]int64{{1}: 9000, {2}: 5000, {3}: 2500}
	var outs []ScriptHash
	for sh, n := range heavy {
		for i := int64(0); i < n; i++ {
			outs = append(outs, sh)
		}
	}
	for i := 0; i < 200000; i++ {
		var sh ScriptHash
		rng.Read(sh[:])
		outs = append(outs, sh)
	}
	rng.Shuffle(len(outs), func(i, j int) { outs[i], outs[j] = outs[j], outs[i] })

	h := newHeavyCount()
	for len(outs) > 0 {
		n := min(len(outs), 3000)
		tx := txPlan{}
		for _, sh := range outs[:n] {
			tx.funds = append(tx.funds, fundRow{script: sh, value: 1})
		}
		h.add(&blockPlan{txs: []txPlan{tx}})
		if len(h.n) > heavyCounters {
			t.Fatalf("%d counters", len(h.n))
		}
		outs = outs[n:]
	}
	total := int64(200000 + 9000 + 5000 + 2500)
	slack := total / heavyCounters
	for sh, n := range heavy {
		c := h.n[sh.hashX()]
		if c > n || c < n-slack {
			t.Errorf("script %x counted %d times, funded %d", sh[:1], c, n)
		}
	}
	got := h.take(4000)
	if len(got) != 2 {
		t.Fatalf("take(4000) returned %d scripts, want the two funded 9000 and 5000 times", len(got))
	}
	if len(h.n) != 0 {
		t.Fatal("take did not start the count again")
	}
}

// Over many windows, a script funded steadily is carried in the totals
// even though no one window holds more than a sliver of its outputs.
func TestHeavyCountAcrossWindows(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	steady := ScriptHash{9}
	h := newHeavyCount()
	h.window = 1 << 18
	funded := int64(0)
	for w := 0; w < 3; w++ {
		for done := int64(0); done < h.window; {
			tx := txPlan{}
			for i := 0; i < 4000; i++ {
				var sh ScriptHash
				rng.Read(sh[:])
				if i%1000 == 0 {
					sh = steady
					funded++
				}
				tx.funds = append(tx.funds, fundRow{script: sh, value: 1})
			}
			h.add(&blockPlan{txs: []txPlan{tx}})
			done += int64(len(tx.funds))
		}
	}
	got := h.take(funded / 2)
	if len(got) != 1 || got[0] != steady.hashX() {
		t.Fatalf("take(%d) = %d scripts, want the one funded %d times", funded/2, len(got), funded)
	}
}

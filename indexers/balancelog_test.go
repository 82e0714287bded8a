package indexers

import (
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestBalanceLogAppliesOnlyWatchedBlocks checks the balance log's rules: a
// balance moves forward over blocks logged while its script was watched and
// in the reading view's chain, and nowhere else.
func TestBalanceLogAppliesOnlyWatchedBlocks(t *testing.T) {
	db, err := database.Create("ffldb", filepath.Join(t.TempDir(), "db"), wire.SimNet)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hashes := make([]chainhash.Hash, 5)
	for i := range hashes {
		hashes[i][0], hashes[i][1] = 'b', byte(i)
	}
	// The chain the view holds: heights 0-3; hashes[4] is a block of
	// another branch at height 3.
	err = db.Update(func(dbTx database.Tx) error {
		for h := 0; h < 4; h++ {
			if err := dbTx.Metadata().Put(blkKey(int32(h)), blkVal(uint64(h+1), &hashes[h])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var sh, other ScriptHash
	sh[0], other[0] = 1, 2
	hx := sh.hashX()
	plan := func(h int, fund, spend int64) *blockPlan {
		tx := txPlan{}
		if fund != 0 {
			tx.funds = []fundRow{{script: sh, value: fund}, {script: other, value: 1000}}
		}
		if spend != 0 {
			tx.spends = []spendRow{{script: sh, value: spend}}
		}
		return &blockPlan{hash: hashes[h], height: int32(min(h, 3)), txs: []txPlan{tx}}
	}
	tip := func(h int) Tip { return Tip{Hash: hashes[h], Height: int32(min(h, 3))} }

	l := newBalanceLog()
	l.logBlock(plan(1, 5, 0)) // nothing watched: not logged
	l.watchScript(other.hashX())
	l.logBlock(plan(1, 5, 0)) // logged, but sh is not watched yet
	l.watchScript(hx)
	l.logBlock(plan(2, 7, 3))
	l.logBlock(plan(3, 0, 2))
	l.logBlock(plan(4, 50, 0)) // the other branch

	err = db.View(func(dbTx database.Tx) error {
		meta := dbTx.Metadata()
		for _, c := range []struct {
			what     string
			from, to int
			ok       bool
			want     int64
		}{
			{"over a block logged before the script was watched", 0, 2, false, 0},
			{"over watched blocks", 1, 3, true, 100 + 7 - 3 - 2},
			{"one block", 2, 3, true, 100 - 2},
			{"nowhere", 3, 3, false, 0},
			{"from a block the view's chain does not hold", 4, 3, false, 0},
		} {
			got, ok := l.advance(meta, hx, tip(c.from), tip(c.to), 100)
			if ok != c.ok || got != c.want {
				t.Errorf("%s: %d, %v; want %d, %v", c.what, got, ok, c.want, c.ok)
			}
		}
		// A script never watched has no log at all.
		if _, ok := l.advance(meta, ScriptHash{9}.hashX(), tip(2), tip(3), 0); ok {
			t.Error("moved the balance of a script never watched")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The log keeps a bounded number of blocks, and the watched set a
	// bounded number of scripts.
	for i := 0; i < 3*balanceLogBlocks; i++ {
		p := plan(2, 1, 0)
		p.hash[2], p.hash[3] = byte(i), byte(i>>8)
		l.logBlock(p)
	}
	if len(l.blocks) != balanceLogBlocks || len(l.order) != balanceLogBlocks {
		t.Fatalf("log holds %d blocks (%d in order)", len(l.blocks), len(l.order))
	}
	for i := 0; i < 2*maxWatched; i++ {
		var s ScriptHash
		s[0], s[1], s[2] = 3, byte(i), byte(i>>8)
		l.watchScript(s.hashX())
	}
	if len(l.watch) > maxWatched {
		t.Fatalf("%d scripts watched", len(l.watch))
	}
}

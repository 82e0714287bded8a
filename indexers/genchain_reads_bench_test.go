package indexers_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// BenchmarkGenChainReads times uncached reads of the heaviest scripts of a
// generated chain whose datadir holds a caught-up index: READS_DATADIR is the
// chain's directory (cmd/chaingen's output) after the node caught up on it,
// and the scripts are the first READS_SCRIPTS (default 4) of its
// scripts.txt, the longest histories. The Cold runs open the database
// before each read, so leveldb's block cache is empty as on a first request
// after start (the files stay in the page cache).
func BenchmarkGenChainReads(b *testing.B) {
	dir := os.Getenv("READS_DATADIR")
	if dir == "" {
		b.Skip("READS_DATADIR not set")
	}
	n := 4
	if s := os.Getenv("READS_SCRIPTS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(dir, "simnet", "blocks_ffldb")
	shs := readScripts(b, filepath.Join(dir, "scripts.txt"), n)
	open := func(b *testing.B) (database.DB, *indexers.ElectrumIndex) {
		db, err := database.Open("ffldb", path, chaincfg.SimNetParams.Net)
		if err != nil {
			b.Fatal(err)
		}
		idx := indexers.NewElectrumIndex(db, &chaincfg.SimNetParams)
		idx.SetReadCacheBytes(0)
		// An index built into its base reads it too.
		if base := filepath.Join(dir, "simnet", "electrum_base"); dirExists(base) {
			if err := idx.OpenBaseForReads(base); err != nil {
				b.Fatal(err)
			}
		}
		return db, idx
	}
	db, idx := open(b)
	for i, sh := range shs {
		b.Run(fmt.Sprintf("Balance%d", i), func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				if _, _, err := idx.Balance(sh); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("History%d", i), func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				if _, _, err := idx.History(sh, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("Unspent%d", i), func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				if _, _, err := idx.Unspent(sh, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	idx.CloseBase()
	db.Close()
	for i, sh := range shs {
		b.Run(fmt.Sprintf("BalanceCold%d", i), func(b *testing.B) {
			var total time.Duration
			for n := 0; n < b.N; n++ {
				db, idx := open(b)
				start := time.Now()
				if _, _, err := idx.Balance(sh); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				idx.CloseBase()
				db.Close()
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/read")
		})
	}
}

// readScripts returns the first n script hashes of a chain's scripts.txt.
func readScripts(b *testing.B, file string, n int) []indexers.ScriptHash {
	f, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var shs []indexers.ScriptHash
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(shs) < n {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		sh, err := indexers.ParseScriptHash(strings.Fields(line)[0])
		if err != nil {
			b.Fatal(err)
		}
		shs = append(shs, sh)
	}
	return shs
}

// dirExists reports whether dir is a directory.
func dirExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

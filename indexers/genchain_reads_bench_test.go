package indexers_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// BenchmarkGenChainReads times reads of the heaviest scripts of a generated
// chain whose datadir holds a caught-up index: READS_DATADIR is the chain's
// directory (cmd/chaingen's output) after the node caught up on it (the
// index's store in simnet/electrum_index), and the scripts are the first
// READS_SCRIPTS (default 4) of its scripts.txt, the longest histories. The
// Cold runs open the store before each read, so its block cache is empty as
// on a first request after start (the files stay in the page cache); with
// READS_IDLE (a duration) each cold read follows that long asleep, as a first
// request to an idle server does. A store of another schema version is left
// alone (opening it would rebuild it).
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
	store := filepath.Join(dir, "simnet", "electrum_index")
	if !dirExists(store) {
		b.Fatalf("no index store in %s", store)
	}
	ro, err := leveldb.OpenFile(store, &opt.Options{ReadOnly: true, ErrorIfMissing: true})
	if err != nil {
		b.Fatal(err)
	}
	v, err := ro.Get(indexers.VersionKey, nil)
	ro.Close()
	if err != nil || len(v) != 4 || binary.BigEndian.Uint32(v) != indexers.SchemaVersion {
		b.Skipf("the store in %s holds schema version %x (%v), not %d", store, v, err, indexers.SchemaVersion)
	}
	var idle time.Duration
	if s := os.Getenv("READS_IDLE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatal(err)
		}
		idle = d
	}
	shs := readScripts(b, filepath.Join(dir, "scripts.txt"), n)
	open := func(b *testing.B) (database.DB, *indexers.ElectrumIndex) {
		db, err := database.Open("ffldb", path, chaincfg.SimNetParams.Net)
		if err != nil {
			b.Fatal(err)
		}
		idx, err := indexers.NewElectrumIndex(db, indexers.Options{Dir: store})
		if err != nil {
			db.Close()
			b.Fatal(err)
		}
		return db, idx
	}
	db, idx := open(b)
	for i, sh := range shs {
		b.Run(fmt.Sprintf("Balance%d", i), func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				if _, _, _, err := idx.UnspentTotals(sh); err != nil {
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
	idx.Close()
	db.Close()
	cold := []struct {
		name string
		read func(*indexers.ElectrumIndex, indexers.ScriptHash) error
	}{
		{"Balance", func(idx *indexers.ElectrumIndex, sh indexers.ScriptHash) error {
			_, _, _, err := idx.UnspentTotals(sh)
			return err
		}},
		{"History", func(idx *indexers.ElectrumIndex, sh indexers.ScriptHash) error {
			_, _, err := idx.History(sh, 0)
			return err
		}},
		{"Status", func(idx *indexers.ElectrumIndex, sh indexers.ScriptHash) error {
			_, _, err := idx.Status(sh, 0)
			return err
		}},
	}
	for i, sh := range shs {
		for _, r := range cold {
			b.Run(fmt.Sprintf("%sCold%d", r.name, i), func(b *testing.B) {
				var total time.Duration
				for n := 0; n < b.N; n++ {
					db, idx := open(b)
					time.Sleep(idle)
					start := time.Now()
					if err := r.read(idx, sh); err != nil {
						b.Fatal(err)
					}
					total += time.Since(start)
					idx.Close()
					db.Close()
				}
				b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/read")
			})
		}
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

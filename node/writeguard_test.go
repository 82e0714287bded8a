package node

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
)

// failingDB fails the commit of every read-write transaction while fail is
// set: the transaction's work is rolled back and an error returned, as
// ffldb does when its write to leveldb or a block file fails.
type failingDB struct {
	database.DB
	fail bool
}

var errInjected = errors.New("injected write error")

func (f *failingDB) Update(fn func(tx database.Tx) error) error {
	return f.DB.Update(func(tx database.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if f.fail {
			return errInjected
		}
		return nil
	})
}

// A commit that fails after the transaction's work succeeded stops the
// process, once; a transaction whose own work fails, and one on a closed
// database, do not.
func TestFailedCommitStopsTheNode(t *testing.T) {
	db, err := database.Create("ffldb", filepath.Join(t.TempDir(), "db"), chaincfg.RegressionNetParams.Net)
	if err != nil {
		t.Fatal(err)
	}
	exits := 0
	old := exitOnWriteFailure
	exitOnWriteFailure = func() { exits++ }
	defer func() { exitOnWriteFailure = old }()

	inner := &failingDB{DB: db}
	g := guardDB(inner)
	put := func(tx database.Tx) error { return tx.Metadata().Put([]byte("k"), []byte("v")) }
	if err := g.Update(put); err != nil || exits != 0 {
		t.Fatalf("a good commit: %v, %d exits", err, exits)
	}
	if err := g.Update(func(database.Tx) error { return errInjected }); !errors.Is(err, errInjected) || exits != 0 {
		t.Fatalf("a transaction failing its own work: %v, %d exits", err, exits)
	}
	inner.fail = true
	if err := g.Update(put); !errors.Is(err, errInjected) || exits != 1 {
		t.Fatalf("a failed commit: %v, %d exits", err, exits)
	}
	if err := g.Update(put); err == nil || exits != 1 {
		t.Fatalf("a second failed commit: %v, %d exits (the first one stops the process)", err, exits)
	}
	inner.fail = false
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	exits = 0
	g = guardDB(db)
	if err := g.Update(put); err == nil || exits != 0 {
		t.Fatalf("a closed database: %v, %d exits", err, exits)
	}
}

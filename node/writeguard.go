package node

import (
	"os"
	"sync"

	"github.com/btcsuite/btcd/database"
)

// A failed database write leaves btcd's in-memory state ahead of the
// database: btcd applies a block to its UTXO cache before the transaction
// that stores the block's chain state and index rows commits, and never
// undoes it when the commit fails (docs/BTCD.md §1.5). A node that went on
// would serve, and on a clean shutdown flush, a UTXO set the database does
// not match. So the node's database fails fast: when a transaction's work
// succeeded but its commit did not (disk full, write error), the node logs
// why and exits at once, without shutting down, so that nothing more is
// written. What was committed before is intact (ffldb writes a commit to
// leveldb in one atomic batch), and the next start resumes from it: the
// chain and the Electrum index together, without a rebuild.
//
// ffldb itself already exits on ENOSPC when it flushes its cache; the guard
// covers every other failed commit and every commit of the node's own
// transactions.

// exitOnWriteFailure ends the process after a failed commit; tests replace
// it.
var exitOnWriteFailure = func() { os.Exit(1) }

// guardedDB is the node's block database with failed commits fatal.
type guardedDB struct {
	database.DB
	once sync.Once
}

// guardDB wraps db so that a failed commit stops the process.
func guardDB(db database.DB) database.DB { return &guardedDB{DB: db} }

// fail logs a failed commit and stops the process.
func (g *guardedDB) fail(err error) {
	g.once.Do(func() {
		log.Criticalf("Database write failed: %v. Stopping now without writing anything more "+
			"(btcd's in-memory chain state is ahead of the database); free disk space or repair "+
			"the disk, then start the node again: it resumes from its last commit, with its "+
			"Electrum index", err)
		exitOnWriteFailure()
	})
}

// Update runs fn in a read-write transaction and commits it; a commit that
// fails after fn succeeded stops the process. A transaction that never
// started (the database is closed) is no write failure.
func (g *guardedDB) Update(fn func(tx database.Tx) error) error {
	var (
		ran   bool
		fnErr error
	)
	err := g.DB.Update(func(tx database.Tx) error {
		ran = true
		fnErr = fn(tx)
		return fnErr
	})
	if err != nil && ran && fnErr == nil {
		g.fail(err)
	}
	return err
}

// Begin starts a transaction; a read-write one's failed commit stops the
// process.
func (g *guardedDB) Begin(writable bool) (database.Tx, error) {
	tx, err := g.DB.Begin(writable)
	if err != nil || !writable {
		return tx, err
	}
	return &guardedTx{Tx: tx, g: g}, nil
}

// guardedTx is a read-write transaction of a guardedDB.
type guardedTx struct {
	database.Tx
	g *guardedDB
}

// Commit commits the transaction; a failure stops the process.
func (t *guardedTx) Commit() error {
	err := t.Tx.Commit()
	if err != nil {
		t.g.fail(err)
	}
	return err
}

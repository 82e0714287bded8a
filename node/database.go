package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/database"
	_ "github.com/btcsuite/btcd/database/ffldb" // registers the ffldb driver
)

// Block database naming, as btcd: <datadir>/<netname>/blocks_ffldb.
const (
	dbType            = "ffldb"
	blockDbNamePrefix = "blocks"
)

// ElectrumIndexPath returns the directory of the Electrum index's store
// inside netDataDir.
func ElectrumIndexPath(netDataDir string) string {
	return filepath.Join(netDataDir, "electrum_index")
}

// BlockDBPath returns the path of the block database inside
// netDataDir (<datadir>/<netname>).
func BlockDBPath(netDataDir string) string {
	return filepath.Join(netDataDir, blockDbNamePrefix+"_"+dbType)
}

// openBlockDB opens the ffldb block database at path, creating it when it
// does not exist. Unlike btcd's main it never deletes an existing regtest
// database: the chain and the Electrum index are kept across restarts.
func openBlockDB(path string, params *chaincfg.Params) (database.DB, error) {
	db, err := database.Open(dbType, path, params.Net)
	if err == nil {
		log.Infof("Loaded block database from '%s'", path)
		return db, nil
	}
	var dbErr database.Error
	if !errors.As(err, &dbErr) || dbErr.ErrorCode != database.ErrDbDoesNotExist {
		return nil, inUseError("block database", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	log.Infof("Creating block database in '%s'", path)
	db, err = database.Create(dbType, path, params.Net)
	return db, inUseError("block database", path, err)
}

// inUseError returns err, or, when it is the database's lock held by
// another process (leveldb's non-blocking flock), an error that says so
// and names the database: the lock's errno alone ("resource temporarily
// unavailable") tells an operator neither.
func inUseError(what, path string, err error) error {
	cause := err
	var dbErr database.Error
	if errors.As(err, &dbErr) && dbErr.Err != nil {
		cause = dbErr.Err // ffldb's error does not unwrap
	}
	if errors.Is(cause, syscall.EWOULDBLOCK) {
		return fmt.Errorf("the %s %s is in use by another process; stop it first (one process at a time)", what, path)
	}
	return err
}

package indexers

import (
	"os"

	"github.com/btcsuite/btcd/database"
)

// ElectrumIndexInitialized reports whether db holds an Electrum index (its
// tip entry in btcd's index tips bucket).
func ElectrumIndexInitialized(db database.DB) bool {
	var exists bool
	_ = db.View(func(dbTx database.Tx) error {
		tips := dbTx.Metadata().Bucket(indexTipsBucketName)
		exists = tips != nil && tips.Get(electrumIndexKey) != nil
		return nil
	})
	return exists
}

// DropElectrumIndex deletes the Electrum index from db in bounded
// transactions: its rows, its schema version and its tip, so the database is
// as if the index had never been enabled (btcd's --drop*index for the other
// indexes does the same). A later start with --electrumindex builds it anew.
// It is a no-op without an index. basePath is the directory of its base
// (SetBasePath; empty: none), which goes too.
func DropElectrumIndex(db database.DB, basePath string, interrupt <-chan struct{}) error {
	if !ElectrumIndexInitialized(db) {
		// A build stopped before it ended leaves a base alone.
		if basePath != "" {
			if _, err := os.Stat(basePath); err == nil {
				log.Infof("Deleting the base of an Electrum index whose build did not end")
				return os.RemoveAll(basePath)
			}
		}
		log.Infof("Not dropping the Electrum index: it does not exist")
		return nil
	}
	log.Infof("Dropping the Electrum index")
	idx := NewElectrumIndex(db, nil)
	idx.SetBasePath(basePath)
	if err := idx.drop(interrupt); err != nil {
		return err
	}
	err := db.Update(func(dbTx database.Tx) error {
		if err := dbTx.Metadata().Delete(versionKey); err != nil {
			return err
		}
		return dbTx.Metadata().Bucket(indexTipsBucketName).Delete(electrumIndexKey)
	})
	if err == nil {
		log.Infof("Dropped the Electrum index")
	}
	return err
}

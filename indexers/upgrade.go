package indexers

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/btcsuite/btcd/database"
)

// Versions before the index had a store of its own kept its rows in btcd's
// metadata bucket under "Ex", its tip in btcd's index tips bucket, and part
// of its rows in "electrum_base" beside btcd's database. The first start of
// this version deletes all of it and builds the index into its store.

// btcd's bucket of index tips, and the key that named the index's tip there.
var indexTipsBucketName, legacyTipKey = []byte("idxtips"), []byte("electrumidx")

// LegacyBaseDir is the directory name of an older version's base.
const LegacyBaseDir = "electrum_base"

// legacyDeletesPerTx bounds the deletes of one btcd transaction.
const legacyDeletesPerTx = 500000

// removeLegacyRows deletes an older version's rows from btcd's database in
// bounded transactions.
func removeLegacyRows(db database.DB, interrupt <-chan struct{}) (int, error) {
	total := 0
	for {
		if interrupted(interrupt) {
			return total, errInterrupted
		}
		n := 0
		err := db.Update(func(dbTx database.Tx) error {
			meta := dbTx.Metadata()
			var keys [][]byte
			c := meta.Cursor()
			for ok := c.Seek(rowPrefix); ok && len(keys) < legacyDeletesPerTx; ok = c.Next() {
				if !bytes.HasPrefix(c.Key(), rowPrefix) {
					break
				}
				keys = append(keys, bytes.Clone(c.Key()))
			}
			for _, k := range keys {
				if err := meta.Delete(k); err != nil {
					return err
				}
			}
			if tips := meta.Bucket(indexTipsBucketName); tips != nil && tips.Get(legacyTipKey) != nil {
				if err := tips.Delete(legacyTipKey); err != nil {
					return err
				}
				n++
			}
			n += len(keys)
			return nil
		})
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
		if total == 0 {
			log.Infof("Electrum index: removing the rows an older version kept in the block database")
		}
		total += n
	}
	if total > 0 {
		log.Infof("Electrum index: removed %d rows of an older version from the block database", total)
	}
	return total, nil
}

// removeLegacy deletes an older version's rows from btcd's database and its
// base beside the index's store.
func (idx *ElectrumIndex) removeLegacy(interrupt <-chan struct{}) error {
	if _, err := removeLegacyRows(idx.db, interrupt); err != nil {
		return err
	}
	base := filepath.Join(filepath.Dir(idx.opts.Dir), LegacyBaseDir)
	if _, err := os.Stat(base); err != nil {
		return nil
	}
	log.Infof("Electrum index: deleting %s, an older version's part of the index", base)
	return os.RemoveAll(base)
}

// DropElectrumIndex deletes the Electrum index: its store in dir, an older
// version's base beside it, and an older version's rows in db. A later start
// with --electrumindex builds it anew. As btcd's drops, it says so when there
// was no index to drop.
func DropElectrumIndex(db database.DB, dir string, interrupt <-chan struct{}) error {
	base := filepath.Join(filepath.Dir(dir), LegacyBaseDir)
	ents, _ := os.ReadDir(dir) // none: missing, or a linked store a drop emptied
	_, errBase := os.Lstat(base)
	rows, err := removeLegacyRows(db, interrupt)
	switch {
	case err != nil:
		return err
	case rows == 0 && len(ents) == 0 && errors.Is(errBase, fs.ErrNotExist):
		log.Infof("Not dropping the Electrum index because it does not exist")
		return nil
	}
	if err := errors.Join(os.RemoveAll(base), removeStore(dir)); err != nil {
		return err
	}
	log.Infof("Dropped the Electrum index")
	return nil
}

// removeStore deletes the store in dir; one moved to another disk behind a
// symbolic link is emptied there, the link kept for the next build.
func removeStore(dir string) error {
	if fi, err := os.Lstat(dir); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return os.RemoveAll(dir)
	}
	ents, err := os.ReadDir(dir)
	for _, e := range ents {
		err = errors.Join(err, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return err
}

package node

import (
	"errors"
	"fmt"
	"os"

	btcdindexers "github.com/btcsuite/btcd/blockchain/indexers"
	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb/storage"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// DropIndexes deletes the indexes the --drop*index flags name from the
// block database, as btcd does on start before it exits: the address index
// first (it depends on the transaction index, whose drop also drops it), then
// the transaction index, the committed filter index and the Electrum index.
// The binary runs it instead of the node when cfg.DropRequested(). Unlike
// btcd, which honours only the first flag given, every requested index is
// dropped.
func DropIndexes(cfg *Config) error {
	if err := cfg.Normalize(); err != nil {
		return err
	}
	path := BlockDBPath(cfg.netDataDir)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no block database at %s: %w", path, err)
	}
	db, err := database.Open(cfg.DbType, path, cfg.params.Net)
	if err != nil {
		return fmt.Errorf("open block database: %w", inUseError("block database", path, err))
	}
	defer func() {
		if e := db.Close(); e != nil {
			log.Errorf("Close block database: %v", e)
		}
	}()
	var errs []error
	if cfg.DropAddrIndex {
		errs = append(errs, btcdindexers.DropAddrIndex(db, cfg.Interrupt))
	}
	if cfg.DropTxIndex {
		errs = append(errs, btcdindexers.DropTxIndex(db, cfg.Interrupt))
	}
	if cfg.DropCfIndex {
		errs = append(errs, btcdindexers.DropCfIndex(db, cfg.Interrupt))
	}
	if cfg.DropElectrumIndex {
		errs = append(errs, dropElectrumIndex(db, ElectrumIndexPath(cfg.netDataDir), cfg.Interrupt))
	}
	return errors.Join(errs...)
}

// checkIndexesAgainstPruning refuses, as btcd, to start a pruning node on a
// database that holds indexes needing every block (the Electrum index's
// store beside it included), and to build such indexes on a database that
// was pruned.
func checkIndexesAgainstPruning(db database.DB, cfg *Config) error {
	var beenPruned bool
	if err := db.View(func(dbTx database.Tx) error {
		var err error
		beenPruned, err = dbTx.BeenPruned()
		return err
	}); err != nil {
		return err
	}
	switch {
	case beenPruned && cfg.Prune == 0:
		return fmt.Errorf("--prune cannot be disabled as the node has been previously pruned; "+
			"delete the files in the datadir %q and sync from the beginning to disable pruning", cfg.DataDir)
	case beenPruned && !btcdindexers.CfIndexInitialized(db) && !cfg.NoCFilters:
		return errors.New("compact filters cannot be enabled as the node has been previously pruned; " +
			"start with --nocfilters")
	case (beenPruned || cfg.Prune != 0) && btcdindexers.CfIndexInitialized(db) && cfg.NoCFilters:
		return errors.New("--nocfilters was given but the compact filter index exists on this pruned node; " +
			"drop it with --dropcfindex, or start without --nocfilters")
	case cfg.Prune != 0 && btcdindexers.AddrIndexInitialized(db):
		return errors.New("--prune may not be given when the address index has been initialized; " +
			"drop it with --dropaddrindex first")
	case cfg.Prune != 0 && btcdindexers.TxIndexInitialized(db):
		return errors.New("--prune may not be given when the transaction index has been initialized; " +
			"drop it with --droptxindex first")
	case cfg.Prune != 0 && electrumIndexExists(cfg.netDataDir):
		// The index, turned on again, catches up from the blocks it
		// missed, which pruning would have deleted.
		return fmt.Errorf("--prune may not be given when the Electrum index exists (%s); "+
			"drop it with --dropelectrumindex first", ElectrumIndexPath(cfg.netDataDir))
	}
	return nil
}

// electrumIndexExists reports whether netDataDir holds the Electrum index's
// store, whether or not --electrumindex is given.
func electrumIndexExists(netDataDir string) bool {
	// A store behind a symbolic link that a drop emptied is none.
	ents, _ := os.ReadDir(ElectrumIndexPath(netDataDir))
	return len(ents) > 0
}

// dropElectrumIndex drops the Electrum index unless another process holds
// its store (its lock, as a start would find it): deleting the files of a
// store in use would leave that process writing into nothing.
func dropElectrumIndex(db database.DB, dir string, interrupt <-chan struct{}) error {
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		st, err := storage.OpenFile(dir, false)
		if err != nil {
			return inUseError("Electrum index store", dir, err)
		}
		_ = st.Close()
	}
	return indexers.DropElectrumIndex(db, dir, interrupt)
}

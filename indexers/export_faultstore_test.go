package indexers

import (
	"github.com/btcsuite/btcd/database"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// StoreOptions are the options NewElectrumIndex opens its store with.
func StoreOptions() *opt.Options { return storeOptions(0) }

// PrepareStoreOn runs NewElectrumIndex's start check of the store
// (prepareStore) on a store the test opened itself, e.g. over a storage
// whose reads fail for a while. The index is not kept.
func PrepareStoreOn(store *leveldb.DB) error {
	idx := &ElectrumIndex{store: store, statuses: newStatusCache(statusCacheEntries), scanSplit: scanSplitAfter}
	err := idx.prepareStore(nil)
	if p := idx.pub.Swap(nil); p != nil {
		p.unref()
	}
	return err
}

// NewElectrumIndexOn is NewElectrumIndex on a store the test opened itself,
// e.g. over a storage whose reads fail for a while.
func NewElectrumIndexOn(db database.DB, opts Options, store *leveldb.DB) (*ElectrumIndex, error) {
	return newIndexOn(db, opts, store)
}

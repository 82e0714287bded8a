// Package indexers holds the Electrum index for btcd: per output script,
// the confirmed history and unspent outputs, in a goleveldb store of its
// own that one writer goroutine keeps at btcd's main chain (btcd's hooks
// only hand it blocks and wake it), each block indexed by a fund-then-spend
// pass that reads nothing. Readers answer from one snapshot, one tip.
// docs/ARCHITECTURE.md describes the design and the schema.
package indexers

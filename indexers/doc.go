// Package indexers holds the Electrum index for btcd.
//
// The index keeps, per output script, the confirmed history, the unspent
// outputs and what the Electrum status needs, in a goleveldb store of its
// own. One writer goroutine follows btcd's main chain: btcd's index hooks
// (Manager) only hand it each connected block with its spent outputs and wake
// it. Each pass of the writer undoes an index tip that left the main chain,
// then catches up, committing every batch of blocks with their undo records
// and the new tip atomically.
//
// Connecting a block is a fund-then-spend pass that reads nothing: btcd hands
// the index the spent output (script, amount, height) of every input, so
// every key the block writes or deletes is computed from the block and those
// spent outputs.
//
// Readers answer from one snapshot of the store, which holds one tip and the
// rows of that tip. docs/ARCHITECTURE.md describes the design and the schema.
package indexers

// Package indexers holds the Electrum index for btcd.
//
// ElectrumIndex is a btcd indexers.Indexer (with NeedsInputs() == true) that
// keeps, per output script, the confirmed history, the unspent outputs and the
// data needed for the Electrum status hash. It is updated inside btcd's own
// block-connect database transaction, so index rows and the chain state commit
// atomically.
//
// Connecting a block is a fund-then-spend pass that performs no database
// reads: btcd hands the index the spent output (script, amount, height) of
// every input, so every key the block writes or deletes is computed from the
// block and those spent outputs. Disconnecting a block is the exact inverse,
// computed from the same data, for a reorg of any depth.
//
// The schema, with byte layouts, is documented in schema.go and in
// docs/ARCHITECTURE.md.
package indexers

// Package testchain builds real btcd regtest chains in-process for tests and
// benchmarks, and holds a naive reference model of what an Electrum index
// must answer for such a chain.
//
// A Harness owns an ffldb database in a directory and a blockchain.BlockChain
// on top of it, optionally with an index manager. It mines consensus-valid
// blocks without signatures: every output it can spend pays to an
// anyone-can-spend script (P2SH and P2WSH wrapping `<n> OP_DROP OP_TRUE`,
// bare `OP_TRUE`-style scripts, `<n> OP_EQUAL`), and it also pays to scripts it
// never spends (OP_RETURN, P2PKH and P2WPKH without keys, non-standard
// garbage). The harness keeps its own wallet of spendable outpoints, with an
// undo record per block it built, so the wallet can follow the main chain
// through reorganizations, invalidations and reconsiderations.
//
// BuildModel walks the main chain with plain in-memory bookkeeping and
// computes, per script hash, the history, unspent outputs, balance and status
// an Electrum server must report. It is the oracle the index is tested
// against; it never uses the index.
package testchain

// Package esplora serves Esplora's HTTP API (Blockstream's esplora and
// electrs, as mempool.space also serves it) from the Electrum index, btcd's
// chain and btcd's transaction pool, so that wallets speaking either
// protocol use one node and one index.
//
// Answers follow electrs' REST server field for field: the same paths,
// JSON shapes and key order, plain-text errors with its status codes and
// messages, 25 confirmed transactions a page, newest first. What the index
// does not hold is derived from it: a script's funded and spent totals from
// its history and its unspent outputs, an output's spender from the history
// of the output's script (docs/OPERATIONS.md, "Esplora HTTP API", gives
// each derivation and its cost).
package esplora

// Package rpcext is the node's btcd-compatible JSON-RPC server.
//
// It speaks btcd's dialect: HTTP POST (TLS by default, basic auth, JSON-RPC
// 1.0 framing, batches) and a websocket endpoint at /ws with btcd's
// websocket commands (notifyblocks, loadtxfilter, rescanblocks,
// notifynewtransactions, notifyreceived, notifyspent, rescan, session and
// their stop forms) and notifications, enough for btcd's rpcclient, btcctl,
// btcwallet-style clients and the integration/rpctest harness. Commands are parsed with btcjson and answered
// with btcjson's result types.
//
// Beyond btcd it adds getelectruminfo, the operator's Electrum commands
// (admin.go: getelectrumsessions, disconnectelectrumsession,
// getscripthashinfo, reloadelectrumtls; verify.go: verifyelectrumindex)
// and the regtest faucet (faucet.go), registered with btcjson so rpcclient
// and cmd/btcd-electrum-ctl know them. The operator's commands need the
// server's credentials.
//
// The server reads the node through three small interfaces owned here
// (backend.go): Chain (btcd's *blockchain.BlockChain satisfies it), Mempool
// (*mempool.TxPool satisfies it) and Backend (what only the node can do:
// index lookups, relay, mining, peers, stop).
//
// Lifecycle: New, Start, then NotifyBlockConnected/NotifyBlockDisconnected
// from the chain's notification callback (they never block), and
// Shutdown(ctx) to stop.
package rpcext

// Package node assembles btcd's library packages into a full node with the
// Electrum index and serves it over the Electrum protocol and btcd's
// JSON-RPC.
//
// What it wires together, in the order New builds it:
//
//   - btcd's ffldb block database at <datadir>/<netname>/blocks_ffldb,
//     btcd's layout, so a datadir written by btcd v0.26.2 opens as is. Unlike
//     btcd's main, a regtest database is never deleted on start.
//   - blockchain.BlockChain with an index manager (indexers.NewManager)
//     holding the Electrum index (--electrumindex) and btcd's own indexes:
//     TxIndex (--txindex), AddrIndex (--addrindex) and CfIndex (on unless
//     --nocfilters). blockchain.New returns once every index has caught up.
//     The Electrum index holds every confirmed transaction, so with
//     --electrumindex alone blockchain.transaction.get and getrawtransaction
//     serve any confirmed txid.
//   - mempool.TxPool with btcd's policy and defaults, and btcd's fee
//     estimator (saved in the database at shutdown, restored at start).
//   - netsync.SyncManager, btcd's peer package, connmgr and addrmgr: P2P
//     listeners, inbound and outbound peers, --connect/--addpeer permanent
//     peers, DNS seeding, and the message handlers of btcd's server
//     (version/verack, inv, getdata, getblocks, getheaders, headers, block,
//     tx, notfound, mempool, getaddr, addr/addrv2, feefilter, BIP 37's
//     filterload/filteradd/filterclear, BIP 157's getcfilters/getcfheaders/
//     getcfcheckpt), with block and transaction relay.
//   - mining.BlkTmplGenerator and cpuminer for generate on regtest and
//     simnet.
//   - with --metricslisten, first of all (before the chain loads, so an index
//     build can be watched), the Prometheus endpoint (metrics.go).
//   - the Electrum server (package electrum) and the JSON-RPC server
//     (package rpcext), each reading the node through the backend
//     interfaces its package owns (electrum_backend.go, rpc_backend.go);
//     the RPC server's operator commands reach the Electrum server through
//     electrum_admin.go.
//
// Chain notifications are subscribed after netsync.New, so the node's
// callback runs after netsync's. The callback removes a connected block's
// transactions and their double spends from btcd's pool (netsync does so
// only while it considers the chain current) and, for a disconnected block,
// the spenders of its transactions that did not return to the pool; then
// it hands the block on, to the RPC server's own queue and to the node's
// event queue. One more callback, subscribed before netsync.New, holds
// aside the pool descendants of a disconnected block's transactions before
// netsync can remove them; the dispatcher submits them again once the
// reorganization's connects are done (reorgpool.go), and the pool takes
// back those whose inputs exist. The Electrum index's writer queues each commit
// (indexers.Commit: the new tip and the scripts it touched). One dispatcher
// goroutine turns queued commits into Electrum script hash and tip
// notifications and keeps the mempool view (indexers.Mempool) in line with
// btcd's pool, which has no removal hook: accepted transactions
// (AnnounceNewTransactions, called by netsync and by the node's own
// ProcessTx) are added, and after an index commit or a disconnected block,
// or when an accepted transaction replaces one of the view, the view is
// reconciled with TxPool.TxDescs.
//
// Lifecycle: New, Start, Stop. Start ends with one log block naming the
// network, datadir, index state and every listener (startup.go). Stop shuts down the Esplora, Electrum and
// RPC servers, closes the Electrum index, stops listeners and peers, the
// sync manager (which flushes the UTXO cache) and the address manager,
// saves the fee estimator and closes the database. The binary (cmd/btcd-electrum) calls Stop on SIGINT or SIGTERM.
//
// Logging is process-wide, as in btcd's packages: one btclog backend with a
// logger per subsystem (SetLogLevels, SetLogFile, SetLogStdout); the binary
// applies --debuglevel and --logdir, New does not touch it.
//
// Configuration is Config: btcd's option names, meanings and defaults
// (go-flags, also from a config file) plus the Electrum options; LoadConfig
// parses a command line as btcd does, and every value is checked before
// anything is opened (config_errors.go).
package node

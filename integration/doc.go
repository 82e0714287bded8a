// Package integration runs btcd-electrum end to end on regtest, next to real
// btcd v0.26.2 nodes, and is the harness other Go projects import to do the
// same in their own tests.
//
// # Harness
//
//   - StartNode starts a btcd-electrum node on regtest in a temporary
//     datadir with loopback ports, --electrumindex, RPC (plain or TLS) and a
//     mining address, either in-process (node.New, fast, inside the race
//     detector) or as the built binary (NodeBinary, what operators run),
//     in tens of milliseconds (BenchmarkStartNode). NodeConfig adds
//     Electrum TLS, WS and WSS listeners; Start does the same outside a
//     test (an Example, a TestMain).
//   - The Node gives the Electrum addresses, a ready Electrum client
//     (Electrum, version negotiated), an rpcclient.Client, Params, and the
//     helpers a wallet test needs: Mine, MineTo, Fund (the node's regtest
//     faucet, then a block: a confirmed outpoint), Faucet, SendRaw, Reorg
//     (a heavier branch built and submitted by the harness, the replaced
//     blocks' transactions and times kept at their heights, so time locks
//     stay met), ReorgDropping (the same, leaving chosen transactions out,
//     back to the mempool; the Electrum index is not needed) and WaitSynced
//     (until the Electrum server reports the node's tip; Mine, Fund and the
//     reorgs wait for it themselves). Restart reopens the same datadir.
//   - StartBtcd starts a real btcd through btcd's own integration harness
//     (rpctest) with its in-memory wallet; BtcdConfig.Exe = NodeBinary()
//     drives btcd-electrum through the same harness. StartBtcdProcess runs
//     btcd with a datadir of the caller's choosing. BtcdBinary builds btcd
//     once per process in its module directory (see BtcdBinary for the one
//     module that build may fetch).
//   - ElectrumClient is a small Electrum client over TCP, TLS or WebSocket
//     (DialElectrum, DialElectrumTLS, DialElectrumWS): calls matched by id
//     from any goroutine, queued notifications (taken once each, by
//     matches that may call the client), a context on every wait,
//     writes included (a write it cuts short closes the connection);
//     typed helpers for the methods tests use, and Status, ScriptHash and
//     MerkleRoot computed independently of the server.
//   - ChainHistory is the reference history of a script, computed from a
//     node's blocks over RPC.
//   - MiningAddress is a regtest address with a well-known key, so tests
//     can spend what they mine (SpendMined, SpendCoinbaseAt).
//
// Every wait is bounded (StartTimeout, StopTimeout, SyncTimeout, the
// caller's context).
//
// # Use from another module
//
// A module that requires github.com/btcd-electrum/btcd-electrum (and so
// btcd v0.26.2) can write the wallet-style test of the README (it is
// wallet_test.go in this package):
//
//	func TestWallet(t *testing.T) {
//		n := integration.StartNode(t, integration.NodeConfig{})
//		sh := integration.ScriptHash(script) // the wallet's script
//		n.Electrum.SubscribeScriptHash(ctx, sh)
//		op, err := n.Fund(addr, 50_000_000) // notified: confirmed
//		n.ReorgDropping(&op.Hash)           // notified: unconfirmed
//		n.Mine(1)                           // notified: confirmed again
//	}
//
// NodeBinary and BtcdBinary run `go build` (and `go list -m`) in the test's
// working directory, so the go command and the module cache must be
// available; call RemoveBinaries from TestMain to delete what they built.
//
// # Tests
//
// The package's tests check, against real btcd v0.26.2 processes: P2P sync
// and transaction relay both ways seen through Electrum (headers, statuses,
// histories, merkle proofs); a parent and child in the mempool (heights 0
// and -1); reorgs between two btcd nodes and by invalidateblock and
// reconsiderblock; btcd's rpctest harness driving our binary; a restart
// that keeps the index; a regtest datadir created by btcd; a simnet datadir
// passed back and forth between btcd and our node, also across a reorg
// btcd made while our index was away; the kit itself: the wallet flow
// on both modes, reorgs, the four transports, and a Node.js wallet test
// driving the faucet RPC. The whole package runs in about a minute:
// go test -race -count=1 ./integration/
package integration

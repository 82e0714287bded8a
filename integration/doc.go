// Package integration runs btcd-electrum end to end on regtest, next to real
// btcd v0.26.2 nodes, and is the harness other Go projects import to do the
// same in their own tests.
//
// # Harness
//
//   - StartNode starts a btcd-electrum node on regtest in a temporary
//     datadir with loopback ports, --electrumindex, RPC (plain or TLS) and a
//     mining address, either in-process (node.New, fast, inside the race
//     detector) or as the built binary (NodeBinary, what operators run).
//     The Node gives the Electrum address, an rpcclient.Client and the P2P
//     address; Restart reopens the same datadir.
//   - StartBtcd starts a real btcd through btcd's own integration harness
//     (rpctest) with its in-memory wallet; BtcdConfig.Exe = NodeBinary()
//     drives btcd-electrum through the same harness. StartBtcdProcess runs
//     btcd with a datadir of the caller's choosing. BtcdBinary builds btcd
//     once per process from the module cache (offline).
//   - ElectrumClient is a small newline-delimited JSON-RPC client: calls
//     matched by id from any goroutine, queued notifications, a context on
//     every wait; typed helpers for the methods tests use, and Status,
//     ScriptHash and MerkleRoot computed independently of the server.
//   - ChainHistory is the reference history of a script, computed from a
//     node's blocks over RPC.
//   - MiningAddress is a regtest address with a well-known key, so tests
//     can spend what they mine (SpendMined).
//
// Every wait is bounded (StartTimeout, StopTimeout, the caller's context).
//
// # Use from another module
//
// A module that requires github.com/btcd-electrum/btcd-electrum (and so
// btcd v0.26.2) can write:
//
//	func TestWallet(t *testing.T) {
//		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
//		defer cancel()
//		n := integration.StartNode(t, integration.NodeConfig{Binary: true})
//		if _, err := n.RPC.Generate(101); err != nil {
//			t.Fatal(err)
//		}
//		ec := n.DialElectrum(t, ctx)
//		sh := integration.ScriptHash(integration.MiningScript())
//		hist, err := ec.GetHistory(ctx, sh)
//		// ... 101 coinbase transactions
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
// btcd made while our index was away. The whole package runs in about a
// minute: go test -race -count=1 ./integration/
package integration

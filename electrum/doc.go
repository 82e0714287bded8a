// Package electrum is the Electrum protocol server of btcd-electrum.
//
// It speaks protocol versions 1.4 to 1.6 (negotiated as the protocol
// documents: a client asking exactly "1.4" gets "1.4", a range gets the
// highest common version, only the first server.version is accepted, and any
// other first message is answered with an error and a disconnect) over four
// transports: plain TCP and TLS with one JSON-RPC message per line, and WS and
// WSS (gorilla/websocket) with one message per frame. JSON-RPC 1.0 and 2.0,
// batches, notifications (no id, or id null), positional and named parameters
// are accepted; the requests of one session run concurrently (10 at a time)
// and are answered by id, possibly out of order. Answers are always JSON-RPC
// 2.0 objects, as ElectrumX writes them: clients such as @electrum-cash/network
// send 1.0-style requests but take any "error" member, even null, as a
// failure.
//
// Before negotiation, any first message other than server.version (in any
// protocol version, as ElectrumX does and as 1.6 requires) is answered with
// error 1 "use server.version to identify client" and the connection is
// closed; a batch may open with server.version.
//
// # Shape
//
// The server knows the node only through Backend (backend.go): the chain's
// headers, the Electrum index's reads, the mempool overlay and the relay
// policy. IndexBackend (adapter.go) assembles a Backend from the project's
// real parts. The node pushes events with Server.NotifyTip,
// Server.NotifyScriptHashes (indexers.Commit.Touched of each commit of the
// index's writer) and Server.NotifyMempool; they only queue and never block,
// so they are safe to call from the index's commit callback or btcd's chain
// notification callback. One notifier goroutine coalesces what piled up, recomputes each
// changed status once and sends it to every subscribed session whose last
// status differs (notify.go explains the ordering guarantee).
//
// # Files
//
//	backend.go            the Backend interface the node implements
//	config.go             Config and every limit's default
//	server.go             Server: Start, Shutdown, accounting, Notify*
//	transport.go          listeners, TLS (self-signed pair on first start), WS
//	framing.go            newline and WebSocket message framing
//	jsonrpc.go            request decoding, response encoding, error codes
//	session.go            one connection: read loop, dispatch, send queue
//	workers.go            the goroutines requests run on, kept between requests
//	cost.go               ElectrumX-style cost throttling (-101, -102)
//	version.go            protocol version parsing and negotiation
//	methods*.go           the protocol methods
//	status.go, merkle.go  status hashing, merkle branches, cp_height proofs
//	notify.go             subscriptions and notifications
//
// # Limits
//
// Every limit is a Config field with ElectrumX's documented default (Fulcrum's
// where ElectrumX has none): sessions in total (1000, answered -102) and per
// IP (12, answered -101); request size (1,000,000 bytes: over it a line is
// skipped and answered -32600 "request too large", on WebSockets the
// connection is closed with status 1009); response size (8,100,000 bytes:
// -32600 "response too large", and "history too large" (code 1) for
// histories over (MaxSend-100)/99 entries); request timeout (30 s, -102);
// idle timeout (600 s); slow readers (a send backlog over 16,000,000 bytes, or
// a write blocked for 20 s, disconnects); batch size (1000 requests, code 4
// "batch limit exceeded"); subscriptions per session, per IP and in total
// (75,000, 75,000, 10,000,000, code 4 "subscription limit reached"); and
// cost-based throttling (soft limit 1000 delays requests, hard limit 10000
// answers -101 and disconnects). As ElectrumX, cost is also shared across a
// subnet (/24, /48; subnet.go), and a session is throttled on the larger of
// its own and its subnet's. Config.ExemptNets (the node's default: loopback,
// where a reverse proxy or Tor daemon forwards every client from) lifts the
// per-IP limits, the subnet grouping and, unless Config.ThrottleExempt, cost
// throttling.
//
// # Operators
//
// Refused connections and ended sessions are counted by reason (Stats,
// refusals.go), refusals logged at a limited rate. RegisterMetrics adds
// Prometheus metrics (metrics.go) whose request path uses pre-resolved
// children. Sessions, DisconnectSession and ScriptHashInfo (admin.go) serve
// the node's admin RPCs; ReloadTLS (certificate.go) swaps the TLS
// certificate for new connections without touching open sessions.
//
// # Tests and benchmarks
//
// Protocol behaviour is tested against an in-memory chain (fakebackend_test.go)
// where precise control is needed (limits, races, hostile input), and end to
// end against a real btcd regtest chain with the Electrum index, btcd's
// mempool and the mempool overlay (realchain_test.go): every script method is
// compared with the reference model of internal/testchain, and real npm
// clients (testdata/js, installed by make deps) run a subscribe, broadcast
// and mine flow over TCP and WS. Fuzz targets run briefly in make test (make fuzz FUZZTIME=10m for longer). Benchmarks:
//
//	go test -run '^$' -bench . -benchtime 3x ./electrum/
//
// # broadcast_package on btcd
//
// blockchain.transaction.broadcast_package (1.6) has no submitpackage to
// delegate to: btcd's mempool has no package relay. The server checks the
// package's shape as submitpackage does (1 to 25 transactions, no
// duplicates, one transaction or a child last with its parents, none of
// which spends another, no output burning value: submitpackage's default
// maxburnamount is 0) and then IndexBackend.SubmitPackage answers as
// submitpackage: a package over 404,000 weight units or with two members
// spending one output is refused whole (package_msg, each member
// "package-not-validated"), a member over 0.10 BTC/kvB (submitpackage's
// default maxfeerate) is refused, and the others go to the mempool one by
// one, in order. This differs from Bitcoin Core's
// submitpackage:
//
//   - Each member must pay the minimum relay fee on its own: there is no
//     package fee rate, so a zero-fee parent cannot be carried by its child
//     (no CPFP at acceptance), and there is no package RBF.
//   - Acceptance is not atomic: members accepted before a failing member
//     stay in the mempool.
//
// The verbose result is submitpackage's (package_msg, tx-results by wtxid
// with txid, other-wtxid, vsize, fees and error, replaced-transactions);
// the non-verbose one is the protocol's {"success": bool, "errors":
// [{"txid", "error"}]}. A member already in the mempool counts as accepted,
// as a single broadcast of it does (IndexBackend.Broadcast). The Esplora
// API's POST /txs/package submits through the same method.
//
// # Transactions
//
// blockchain.transaction.get with verbose=true answers in Bitcoin Core's
// getrawtransaction shape (btcjson.TxRawResult), built from btcd's data:
// hex, txid, hash, size, vsize, weight, version, locktime, vin, vout and, for
// confirmed transactions, blockhash, confirmations, time and blocktime.
package electrum

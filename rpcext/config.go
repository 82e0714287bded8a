package rpcext

import (
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
)

// Defaults used when the corresponding Config field is zero.
const (
	// DefaultMaxRequestBytes bounds an HTTP request body or websocket
	// message: room for a hex-encoded 4 MB block plus framing.
	DefaultMaxRequestBytes = 10 << 20

	// DefaultMaxConcurrentRequests bounds HTTP requests processed at once
	// (the node passes btcd's --rpcmaxconcurrentreqs, default 20).
	DefaultMaxConcurrentRequests = 10

	// DefaultMaxClients bounds HTTP requests in flight, waiting ones
	// included (btcd's --rpcmaxclients is 10).
	DefaultMaxClients = 10

	// DefaultMaxWebsockets bounds websocket clients (btcd's
	// --rpcmaxwebsockets is 25).
	DefaultMaxWebsockets = 25

	// DefaultMaxWebsocketSubscriptions bounds one websocket client's
	// subscriptions, as the Electrum server bounds a session's
	// (--electrummaxsubspersession).
	DefaultMaxWebsocketSubscriptions = 75000

	// DefaultVersion is the "version" reported by getinfo, in btcd's
	// numbering (major*10000 + minor*100 + patch). rpcclient classes
	// servers at or above 240100 as current btcd.
	DefaultVersion = 260200
)

// Config configures a Server.
type Config struct {
	// Listen holds the host:port addresses to listen on ("127.0.0.1:0"
	// picks a free port; Server.Addrs reports it).
	Listen []string

	// User and Pass are the HTTP basic-auth credentials every request
	// must carry. Both empty disables authentication.
	User string
	Pass string

	// LimitUser and LimitPass are the credentials of btcd's limited user
	// (--rpclimituser, --rpclimitpass), who may call only the methods
	// btcd allows it (limited.go).
	LimitUser string
	LimitPass string

	// DisableTLS serves plain HTTP. Otherwise CertFile and KeyFile are
	// used, and a self-signed pair is written there when both are
	// missing.
	DisableTLS bool
	CertFile   string
	KeyFile    string

	// Params is the network the node runs on.
	Params *chaincfg.Params

	// Chain, Mempool and Backend are the node the handlers answer from.
	Chain   Chain
	Mempool Mempool
	Backend Backend

	// MaxRequestBytes bounds a request body or websocket message.
	MaxRequestBytes int64

	// MaxConcurrentRequests bounds HTTP requests served at once; more
	// wait for a slot.
	MaxConcurrentRequests int

	// MaxClients bounds HTTP requests in flight (authenticated or not,
	// waiting for a slot or served); more are answered 503 at once, as
	// btcd answers clients over --rpcmaxclients. Negative: none served.
	MaxClients int

	// MaxBatchRequests bounds the requests of one batch (default
	// DefaultMaxBatchRequests); a larger batch is refused as a whole.
	MaxBatchRequests int

	// MaxWebsockets bounds websocket clients that have authenticated;
	// more are refused with 503. Those still to authenticate are bounded
	// apart, as many in all and 4 from one address. Negative: none.
	MaxWebsockets int

	// MaxWebsocketSubscriptions bounds the subscriptions of one websocket
	// client: notifyreceived addresses, notifyspent outpoints and the
	// addresses and outpoints of its loadtxfilter filter, the outpoints
	// watched for having paid its addresses included. A request past it
	// is answered -8 (ErrRPCInvalidParameter); a client that payments to
	// its addresses would take past it is disconnected.
	MaxWebsocketSubscriptions int

	// Version is the getinfo "version".
	Version int32

	// RelayFee is the minimum relay fee in BTC/kB reported by getinfo.
	RelayFee float64
	// Proxy is the node's --proxy, which getinfo reports as btcd does.
	Proxy string

	// ElectrumAdmin serves the operator's Electrum commands (admin.go);
	// nil when the node runs no Electrum server.
	ElectrumAdmin ElectrumAdmin

	// Pruned is reported by getblockchaininfo (the node runs --prune).
	Pruned bool

	// writeWait bounds the writing of one HTTP answer or websocket
	// message (wsWriteWait when zero); tests set it short.
	writeWait time.Duration
}

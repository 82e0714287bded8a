package electrum

import (
	"net"
	"runtime"
	"strconv"
	"time"
)

// Defaults for Config. Each limit follows the value ElectrumX (or, where
// ElectrumX has none, Fulcrum) documents.
const (
	DefaultTCPPort = 50001
	DefaultTLSPort = 50002
	DefaultWSPort  = 50003
	DefaultWSSPort = 50004

	DefaultMaxSessions       = 1000
	DefaultMaxSessionsPerIP  = 12
	DefaultMaxRecv           = 1_000_000
	DefaultMaxSend           = 8_100_000
	DefaultRequestTimeout    = 30 * time.Second
	DefaultIdleTimeout       = 600 * time.Second
	DefaultWriteTimeout      = 20 * time.Second
	DefaultMaxSendBacklog    = 16_000_000
	DefaultMaxBatch          = 1000
	DefaultMaxSubsPerSession = 75_000
	DefaultMaxSubsPerIP      = 75_000
	DefaultMaxSubs           = 10_000_000
	DefaultConcurrency       = 10
	DefaultCostSoftLimit     = 1000
	DefaultCostHardLimit     = 10000
	DefaultRequestSleep      = 2500 * time.Millisecond
	DefaultBandwidthUnit     = 5000
	DefaultBanner            = "Welcome to btcd-electrum"
	DefaultServerVersion     = "btcd-electrum 0.1.0"
	DefaultHeadersMax        = 2016
	DefaultAnswerCache       = 64 << 20

	// minMaxSend is the smallest response limit accepted, as ElectrumX.
	minMaxSend = 350_000
)

// Config configures a Server. Every zero value means the documented default;
// a negative limit disables that limit where the field says so.
type Config struct {
	// TCPListen, TLSListen, WSListen and WSSListen are the addresses
	// ("host:port") to serve each transport on. An empty list disables the
	// transport. A Server with no addresses at all listens on
	// ":50001" (TCP) only.
	TCPListen, TLSListen, WSListen, WSSListen []string

	// Listeners, if set, are used instead of opening addresses; each is
	// served with its transport. Tests use it with port 0 listeners.
	Listeners []Listener

	// TLSCertFile and TLSKeyFile name the certificate and key for TLS and
	// WSS. When both are empty a self-signed pair is created in CertDir
	// on first start and reused afterwards.
	TLSCertFile, TLSKeyFile string
	// ShareTLS loads the certificate at Start even without a TLS or WSS
	// listener, for another server's TLS listener that takes it from
	// GetCertificate (and so follows ReloadTLS).
	ShareTLS bool
	// CertDir is where a self-signed pair is kept (default: the current
	// directory).
	CertDir string

	// ServerVersion is the software name returned by server.version.
	ServerVersion string
	// Banner is returned by server.banner.
	Banner string
	// DonationAddress is returned by server.donation_address.
	DonationAddress string
	// Hosts is the "hosts" value of server.features; nil means none.
	Hosts map[string]HostPorts

	// MaxSessions is the number of sessions served at once (default 1000);
	// a connection over it is answered -102 and closed.
	MaxSessions int
	// MaxSessionsPerIP limits sessions from one IP address (default 12;
	// negative disables). Addresses in ExemptNets are not limited.
	MaxSessionsPerIP int
	// ExemptNets are networks exempt from the per-IP session and
	// subscription limits and from per-subnet cost grouping: a reverse
	// proxy or a Tor daemon on loopback, whose clients all arrive from
	// one address. Nil exempts nothing (the node's
	// --electrumexemptnets defaults to loopback).
	ExemptNets []*net.IPNet
	// ThrottleExempt charges sessions from ExemptNets with cost and
	// throttles them like any other (each on its own cost). By default they
	// are not: the operator's own wallets and tools on loopback are never
	// slowed. Set it when a public reverse proxy forwards from an exempt
	// address without passing the client's.
	ThrottleExempt bool

	// MaxRecv is the largest request message in bytes (default 1,000,000).
	MaxRecv int
	// MaxSend is the largest response in bytes (default 8,100,000, at
	// least 350,000); larger results get -32600 "response too large". It
	// also bounds histories: "history too large" above (MaxSend-100)/99
	// entries, as ElectrumX.
	MaxSend int
	// MaxSendBacklog is how many response bytes may wait for a slow
	// reader before it is disconnected (default 16,000,000).
	MaxSendBacklog int
	// WriteTimeout disconnects a client that does not accept a message
	// within it (default 20 s).
	WriteTimeout time.Duration
	// RequestTimeout answers a request not completed within it with -102
	// (default 30 s).
	RequestTimeout time.Duration
	// IdleTimeout disconnects a client that sends nothing within it
	// (default 600 s).
	IdleTimeout time.Duration
	// MaxBatch is the largest batch in requests (default 1000).
	MaxBatch int
	// MaxSubsPerSession, MaxSubsPerIP and MaxSubs limit script hash
	// subscriptions (defaults 75,000, 75,000 and 10,000,000).
	MaxSubsPerSession, MaxSubsPerIP, MaxSubs int
	// Concurrency is how many requests of one session run at once
	// (default 10).
	Concurrency int
	// Workers is how many requests run at once across all sessions
	// (default: one per CPU the Go runtime uses, GOMAXPROCS). Waiting
	// requests run in the order of their sessions' costs, sessions at or
	// above CostSoftLimit hold all places but one, and one spare place
	// takes a request whose session costs less than every running
	// request's (workgate.go).
	Workers int

	// CostSoftLimit and CostHardLimit drive ElectrumX-style throttling:
	// above the soft limit requests are delayed by up to RequestSleep,
	// at the hard limit the session gets -101 and is disconnected
	// (defaults 1000 and 10000; a negative CostHardLimit disables
	// throttling).
	CostSoftLimit, CostHardLimit float64
	// RequestSleep is the delay at the hard limit (default 2.5 s).
	RequestSleep time.Duration
	// BandwidthUnit is the number of bytes that cost 1.0 (default 5000).
	BandwidthUnit int

	// AnswerCache is how many bytes of encoded header chunks and long
	// histories are kept for the clients that ask for them next (default
	// 64 MiB; negative disables). See answercache.go.
	AnswerCache int64

	// Logf, when set, receives one line per notable event.
	Logf func(format string, args ...any)
	// Errorf, when set, receives the lines of failures an operator must
	// see even with notable events quieted: a handler's panic, a failed
	// read of the index, a certificate that did not reload. Logf receives
	// them when it is nil.
	Errorf func(format string, args ...any)
}

// HostPorts is one entry of the server.features "hosts" map.
type HostPorts struct {
	TCPPort *int `json:"tcp_port"`
	SSLPort *int `json:"ssl_port"`
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&c.MaxSessions, DefaultMaxSessions)
	setInt(&c.MaxSessionsPerIP, DefaultMaxSessionsPerIP)
	setInt(&c.MaxRecv, DefaultMaxRecv)
	setInt(&c.MaxSend, DefaultMaxSend)
	if c.MaxSend < minMaxSend {
		c.MaxSend = minMaxSend
	}
	setInt(&c.MaxSendBacklog, DefaultMaxSendBacklog)
	setInt(&c.MaxBatch, DefaultMaxBatch)
	setInt(&c.MaxSubsPerSession, DefaultMaxSubsPerSession)
	setInt(&c.MaxSubsPerIP, DefaultMaxSubsPerIP)
	setInt(&c.MaxSubs, DefaultMaxSubs)
	setInt(&c.Concurrency, DefaultConcurrency)
	setInt(&c.Workers, runtime.GOMAXPROCS(0))
	setInt(&c.BandwidthUnit, DefaultBandwidthUnit)
	if c.AnswerCache == 0 {
		c.AnswerCache = DefaultAnswerCache
	}
	setDur(&c.WriteTimeout, DefaultWriteTimeout)
	setDur(&c.RequestTimeout, DefaultRequestTimeout)
	setDur(&c.IdleTimeout, DefaultIdleTimeout)
	setDur(&c.RequestSleep, DefaultRequestSleep)
	if c.CostSoftLimit == 0 {
		c.CostSoftLimit = DefaultCostSoftLimit
	}
	if c.CostHardLimit == 0 {
		c.CostHardLimit = DefaultCostHardLimit
	}
	if c.ServerVersion == "" {
		c.ServerVersion = DefaultServerVersion
	}
	if c.Banner == "" {
		c.Banner = DefaultBanner
	}
	if len(c.TCPListen)+len(c.TLSListen)+len(c.WSListen)+len(c.WSSListen)+len(c.Listeners) == 0 {
		c.TCPListen = []string{net.JoinHostPort("", strconv.Itoa(DefaultTCPPort))}
	}
	return c
}

// historyLimit is the largest history served within MaxSend, as ElectrumX
// derives it.
func (c *Config) historyLimit() int {
	return (c.MaxSend - 100) / 99
}

// unspentLimit is the largest unspent list served within MaxSend; a
// listunspent entry takes about 120 bytes.
func (c *Config) unspentLimit() int {
	return (c.MaxSend - 100) / 120
}

// maxBacklogTotal is how many answer bytes may wait for all sessions
// together: 4 times MaxSendBacklog (64 MB by default). Over it, a session
// with at least totalBacklogMinOwn bytes of its own waiting is
// disconnected as not reading when more is queued for it (for a pass's
// notifications, queued together, or a batch's answers, counted as they
// are kept, what waited before them); over twice it, a pass's
// notifications and a batch's answers count too, so the total stays under
// twice it plus one message and totalBacklogMinOwn per session. It is no
// hard bound: a session with less than totalBacklogMinOwn waiting is
// always given one message more, of up to MaxSend. MaxSendBacklog
// alone bounds one session, not MaxSessions of them; and the node runs
// under a soft memory limit (--electrumservemem, 512 MiB by default) near
// which the garbage collector stalls every session: 1,000 clients that do
// not read, holding 256 MB between them, stalled a wallet beside them for
// seconds (e2ebench hostile).
func (c *Config) maxBacklogTotal() int64 {
	return 4 * int64(c.MaxSendBacklog)
}

// buildBudget is how many bytes of large answers (histories and unspent
// lists) may be built at once for all sessions together: maxBacklogTotal,
// and at least one answer of MaxSend. An answer is built next to its
// entries and copied once more into its response; 100 sessions asking for
// a 4.7 MB history each at the same moment took the node 200 MB past its
// soft memory limit. A request whose answer finds the budget spent waits
// for it within its own time.
func (c *Config) buildBudget() int64 {
	return max(c.maxBacklogTotal(), 2*int64(c.MaxSend))
}

// lineBudget is how many bytes the buffers of requests being read may take
// past keptBuffer each, for all sessions together: half maxBacklogTotal (32
// MB by default), and at least four requests of MaxRecv, so that one always
// fits. A client may leave a line unfinished until its idle timeout, and
// the buffer it fills stays; without a bound, MaxSessions clients each
// within every per-IP and subnet limit held MaxRecv each, a gigabyte by
// default. A request whose buffer finds the budget spent is skipped to its
// end and answered -102, and the session goes on.
func (c *Config) lineBudget() int64 {
	return max(c.maxBacklogTotal()/2, 4*int64(c.MaxRecv))
}

// buildBudgetMin is the size from which an answer takes from buildBudget.
const buildBudgetMin = 256 << 10

// totalBacklogMinOwn is the backlog of its own a session must have to be
// disconnected for the server's total backlog.
const totalBacklogMinOwn = 64 << 10

// groupDecay is how much cost a subnet group sheds per second: what a
// session without subscriptions sheds.
func (c *Config) groupDecay() float64 {
	return c.CostHardLimit / 10000
}

// throttled reports whether cost-based throttling is on.
func (c *Config) throttled() bool {
	return c.CostHardLimit > 0
}

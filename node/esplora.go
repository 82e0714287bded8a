package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/btcd-electrum/btcd-electrum/esplora"
)

// maxEsploraConnections bounds --esploramaxconnections: Linux's default
// ceiling on one process's descriptors (fs.nr_open).
const maxEsploraConnections = 1 << 20

// defaultEsploraPort is electrs' HTTP port, used for --esploralisten
// addresses without one; defaultEsploraTLSPort is for --esploratlslisten.
const (
	defaultEsploraPort    = "3000"
	defaultEsploraTLSPort = "3443"
)

// EsploraOptions are the options of the Esplora HTTP API, served from the
// Electrum index beside the Electrum protocol.
type EsploraOptions struct {
	EsploraListeners        []string `long:"esploralisten" description:"Add an interface/port for the Esplora HTTP API (off unless given; port 3000 if none given; needs --electrumindex)"`
	EsploraTLSListeners     []string `long:"esploratlslisten" description:"Add an interface/port for the Esplora HTTP API over TLS, with the Electrum certificate (--electrumcert, --electrumkey; a self-signed one is created when missing; port 3443 if none given)"`
	EsploraPath             string   `long:"esplorapath" description:"Serve the Esplora HTTP API under this path, e.g. /api as blockstream.info does (default: at the root)"`
	EsploraMaxUtxos         int      `long:"esploramaxutxos" description:"Largest unspent set the Esplora /utxo endpoint returns; a larger one is refused as electrs' --utxos-limit refuses it (default 50000; Blockstream's public servers use 500)"`
	EsploraMaxHistory       int      `long:"esploramaxhistory" description:"Longest confirmed history the Esplora address and scripthash endpoints read; a longer one is refused with 400 Too many history entries (electrs' text for its own limit; default 1000000)"`
	EsploraMaxRequestsPerIP int      `long:"esploramaxrequestsperip" description:"Esplora requests of one client address answered at once; more are answered 429 (default 16; negative: no bound). Addresses in --electrumexemptnets are not bounded, and a request from them with X-Forwarded-For counts against the forwarded address"`
	EsploraMaxConnections   int      `long:"esploramaxconnections" description:"Esplora connections open at once from all clients not in --electrumexemptnets; one more is closed at once (default 1000; at most 1048576)"`
	EsploraCORS             string   `long:"esploracors" description:"Send Access-Control-Allow-Origin with this value on every Esplora answer, so web pages of that origin may call the API (* for any; default none)"`
}

// normalizeEsplora validates the Esplora options and gives addresses
// without a port the default one.
func (cfg *Config) normalizeEsplora() error {
	o := &cfg.EsploraOptions
	if len(o.EsploraListeners)+len(o.EsploraTLSListeners) > 0 && !cfg.ElectrumIndex && !cfg.DropRequested() {
		return errors.New("--esploralisten and --esploratlslisten serve the Electrum index over HTTP: they need --electrumindex")
	}
	o.EsploraListeners = normalizeAddresses(o.EsploraListeners, defaultEsploraPort)
	o.EsploraTLSListeners = normalizeAddresses(o.EsploraTLSListeners, defaultEsploraTLSPort)
	if p := o.EsploraPath; p != "" {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " ?#") {
			return fmt.Errorf("--esplorapath=%s: want a path such as /api", p)
		}
		o.EsploraPath = strings.TrimRight(p, "/")
	}
	if o.EsploraMaxUtxos < 0 {
		return fmt.Errorf("--esploramaxutxos=%d: must not be negative", o.EsploraMaxUtxos)
	}
	if o.EsploraMaxHistory < 0 {
		return fmt.Errorf("--esploramaxhistory=%d: must not be negative", o.EsploraMaxHistory)
	}
	if o.EsploraMaxConnections < 0 || o.EsploraMaxConnections > maxEsploraConnections {
		return fmt.Errorf("--esploramaxconnections=%d: must be from 0 (the default, %d) to %d",
			o.EsploraMaxConnections, esplora.DefaultMaxConnections, maxEsploraConnections)
	}
	return nil
}

// setupEsplora creates the Esplora server when an Esplora listener is
// given: it reads the index through the same backend as the Electrum
// server, and serves TLS with the Electrum certificate.
func (s *servers) setupEsplora(n *Node) error {
	idx := n.index.electrum
	o := n.cfg.EsploraOptions
	if idx == nil || len(o.EsploraListeners)+len(o.EsploraTLSListeners) == 0 {
		return nil
	}
	ec := esplora.Config{
		Listen:     o.EsploraListeners,
		TLSListen:  o.EsploraTLSListeners,
		PathPrefix: o.EsploraPath,
		MaxUtxos:   o.EsploraMaxUtxos,
		MaxHistory: o.EsploraMaxHistory,
		// The Electrum server's exempt networks: the same proxies
		// and the operator's own tools.
		MaxRequestsPerIP: o.EsploraMaxRequestsPerIP,
		MaxConnections:   o.EsploraMaxConnections,
		ExemptNets:       n.cfg.Electrum.exemptNets,
		// The Electrum server's cost limits, per client address.
		CostSoftLimit:  n.cfg.Electrum.CostSoftLimit,
		CostHardLimit:  n.cfg.Electrum.CostHardLimit,
		RequestSleep:   n.cfg.Electrum.RequestSleep,
		BandwidthUnit:  n.cfg.Electrum.BandwidthUnit,
		ThrottleExempt: n.cfg.Electrum.ThrottleExempt,
		CORS:           o.EsploraCORS,
		Logf:           log.Infof,
	}
	if len(ec.TLSListen) > 0 {
		// The Electrum server's certificate, which it loads for this
		// listener too (ShareTLS): a reload reaches both.
		ec.GetCertificate = s.electrum.GetCertificate
	}
	s.esplora = esplora.New(ec, n.electrumBackend(idx), n.chain)
	if n.metrics != nil {
		if err := s.esplora.RegisterMetrics(n.metrics.reg); err != nil {
			return fmt.Errorf("Esplora metrics: %w", err)
		}
	}
	return nil
}

// startEsplora binds the Esplora listeners.
func (s *servers) startEsplora() error {
	if s.esplora == nil {
		return nil
	}
	return s.esplora.Start()
}

// stopEsplora stops the Esplora server, waiting (bounded by ctx) for the
// requests being answered: they read the index.
func (s *servers) stopEsplora(ctx context.Context) {
	if s.esplora == nil {
		return
	}
	if err := s.esplora.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Warnf("Esplora server shutdown: %v", err)
	}
}

// EsploraAddrs returns the addresses the Esplora HTTP API listens on
// (after Start; nil without --esploralisten).
func (n *Node) EsploraAddrs() []net.Addr {
	if n.srv == nil || n.srv.esplora == nil {
		return nil
	}
	return n.srv.esplora.Addrs()
}

// EsploraPath returns the path the Esplora HTTP API is served under ("" for
// the root).
func (n *Node) EsploraPath() string { return n.cfg.EsploraPath }

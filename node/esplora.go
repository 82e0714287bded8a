package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/btcd-electrum/btcd-electrum/esplora"
)

// defaultEsploraPort is electrs' HTTP port, used for --esploralisten
// addresses without one.
const defaultEsploraPort = "3000"

// EsploraOptions are the options of the Esplora HTTP API, served from the
// Electrum index beside the Electrum protocol.
type EsploraOptions struct {
	EsploraListeners []string `long:"esploralisten" description:"Add an interface/port for the Esplora HTTP API (off unless given; port 3000 if none given; needs --electrumindex)"`
	EsploraPath      string   `long:"esplorapath" description:"Serve the Esplora HTTP API under this path, e.g. /api as blockstream.info does (default: at the root)"`
	EsploraMaxUtxos  int      `long:"esploramaxutxos" description:"Largest unspent set the Esplora /utxo endpoint returns; a larger one is refused as electrs' --utxos-limit refuses it (default 50000; Blockstream's public servers use 500)"`
}

// normalizeEsplora validates the Esplora options and gives addresses
// without a port the default one.
func (cfg *Config) normalizeEsplora() error {
	o := &cfg.EsploraOptions
	if len(o.EsploraListeners) > 0 && !cfg.ElectrumIndex {
		return errors.New("--esploralisten serves the Electrum index over HTTP: it needs --electrumindex")
	}
	o.EsploraListeners = normalizeAddresses(o.EsploraListeners, defaultEsploraPort)
	for _, a := range o.EsploraListeners {
		host, port, err := net.SplitHostPort(a)
		if err == nil {
			_, err = net.LookupPort("tcp", port)
		}
		if err != nil || strings.ContainsAny(host, "/ ") {
			return fmt.Errorf("--esploralisten=%s: want host:port, [ipv6]:port or host (port 3000), e.g. 127.0.0.1:3000", a)
		}
	}
	if p := o.EsploraPath; p != "" {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " ?#") {
			return fmt.Errorf("--esplorapath=%s: want a path such as /api", p)
		}
		o.EsploraPath = strings.TrimRight(p, "/")
	}
	if o.EsploraMaxUtxos < 0 {
		return fmt.Errorf("--esploramaxutxos=%d: must not be negative", o.EsploraMaxUtxos)
	}
	return nil
}

// setupEsplora creates the Esplora server when --esploralisten is given:
// it reads the index through the same backend as the Electrum server.
func (s *servers) setupEsplora(n *Node) {
	idx := n.index.electrum
	o := n.cfg.EsploraOptions
	if idx == nil || len(o.EsploraListeners) == 0 {
		return
	}
	s.esplora = esplora.New(esplora.Config{
		Listen:     o.EsploraListeners,
		PathPrefix: o.EsploraPath,
		MaxUtxos:   o.EsploraMaxUtxos,
		Logf:       log.Infof,
	}, n.electrumBackend(idx), n.chain, n.txMemPool)
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

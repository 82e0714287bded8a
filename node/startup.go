package node

import (
	"fmt"
	"strings"
)

// startupSummary is the block the node logs once it has started: the
// network, the data directory, the state of the index and every listener
// with its transport and address, in one message so that nothing else is
// interleaved with it.
func (n *Node) startupSummary() string {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "\n  %-9s ", label+":")
		fmt.Fprintf(&b, format, args...)
	}
	best := n.chain.BestSnapshot()
	fmt.Fprintf(&b, "Node started on %s", n.params.Name)
	line("datadir", "%s", n.cfg.netDataDir)
	line("chain", "height %d, tip %v", best.Height, best.Hash)
	line("index", "%s", n.indexState(best.Height))

	if n.cfg.DisableListen || len(n.p2pListeners) == 0 {
		line("p2p", "not listening")
	}
	for _, l := range n.p2pListeners {
		line("p2p", "%s", l.Addr())
	}
	switch addrs := n.RPCAddrs(); {
	case n.cfg.DisableRPC:
		line("rpc", "off (no --rpcuser/--rpcpass, or --norpc)")
	default:
		scheme := "https"
		if n.cfg.DisableTLS {
			scheme = "http"
		}
		for _, a := range addrs {
			line("rpc", "%s://%s", scheme, a)
		}
	}
	if n.srv.electrum != nil {
		for _, u := range n.srv.electrumListenURLs() {
			line("electrum", "%s", u)
		}
		if c, ok := n.srv.electrum.Certificate(); ok {
			line("tls cert", "%s, valid until %s, sha256 %s", c.CertFile, c.NotAfter.Format("2006-01-02"), c.SHA256)
		}
	}
	if n.srv.esplora != nil {
		for _, u := range n.srv.esplora.URLs() {
			line("esplora", "%s", u)
		}
	}
	if n.metrics != nil {
		line("metrics", "%s", n.metrics.url())
	}
	return b.String()
}

// indexState describes the Electrum index for the start-up summary.
func (n *Node) indexState(chainHeight int32) string {
	idx := n.index.electrum
	if idx == nil {
		if n.index.txIndex != nil {
			return "Electrum index off (--electrumindex not set); transaction index on"
		}
		return "Electrum index off (--electrumindex not set)"
	}
	tip, err := idx.Tip()
	if err != nil {
		return fmt.Sprintf("Electrum index unreadable: %v", err)
	}
	if p := idx.Progress(); p.Running {
		return fmt.Sprintf("Electrum index building: height %d of %d", tip.Height, chainHeight)
	}
	if tip.Height < chainHeight {
		return fmt.Sprintf("Electrum index following the chain: height %d of %d", tip.Height, chainHeight)
	}
	return fmt.Sprintf("Electrum index caught up at height %d", tip.Height)
}

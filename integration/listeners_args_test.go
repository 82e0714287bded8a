package integration

import (
	"path/filepath"
	"testing"
)

// TestArgsOnlyListenersNotReported: a listener added by Args alone leaves
// EsploraURL and the Electrum TLS, WS and WSS addresses empty, as their
// doc says (they are set by NodeConfig.Esplora, ElectrumTLS, ...), for an
// in-process node as for a binary one.
func TestArgsOnlyListenersNotReported(t *testing.T) {
	for _, binary := range []bool{false, true} {
		addrs, err := freeAddrs(4)
		if err != nil {
			t.Fatal(err)
		}
		certs := t.TempDir() // the node creates its pair there
		n := StartNode(t, NodeConfig{Binary: binary, Args: []string{"--esploralisten=" + addrs[0],
			"--electrumtlslisten=" + addrs[1], "--electrumwslisten=" + addrs[2], "--electrumwsslisten=" + addrs[3],
			"--electrumcert=" + filepath.Join(certs, "electrum.cert"), "--electrumkey=" + filepath.Join(certs, "electrum.key")}})
		if n.EsploraURL != "" || n.ElectrumTLSAddr != "" || n.ElectrumWSAddr != "" || n.ElectrumWSSAddr != "" {
			t.Errorf("binary=%v: NodeConfig asked for no Esplora, TLS, WS or WSS listener, yet EsploraURL=%q, ElectrumTLSAddr=%q, ElectrumWSAddr=%q, ElectrumWSSAddr=%q",
				binary, n.EsploraURL, n.ElectrumTLSAddr, n.ElectrumWSAddr, n.ElectrumWSSAddr)
		}
		if n.ElectrumAddr == "" {
			t.Errorf("binary=%v: no Electrum TCP address", binary)
		}
	}
}

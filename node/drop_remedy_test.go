package node

import (
	"os"
	"path/filepath"
	"testing"
)

// The remedy for an index that fails verification (docs/OPERATIONS.md): a
// run with --dropelectrumindex and electrumindex=1 taken out of the config
// file, whose other lines (the Electrum, Esplora listeners, verification)
// stay for the runs after it. The drop run listens nowhere: it drops.
func TestDropRemedyWithListenersInConfigFile(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir, true))
	generate(t, n, 5)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	storeDir := ElectrumIndexPath(filepath.Join(dir, "data", "regtest"))
	if _, err := os.Stat(storeDir); err != nil {
		t.Fatalf("setup: no index store: %v", err)
	}

	// The operator's config file with electrumindex=1 taken out; the
	// listener lines stay.
	conf := filepath.Join(dir, "btcd-electrum.conf")
	body := "datadir=" + filepath.Join(dir, "data") + "\n" +
		"logdir=" + filepath.Join(dir, "logs") + "\n" +
		"# electrumindex=1  (taken out for the drop, as OPERATIONS.md says)\n" +
		"electrumlisten=127.0.0.1:50001\nesploralisten=127.0.0.1:3000\nelectrumverify=1\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := LoadConfig([]string{"--regtest", "-C", conf, "--dropelectrumindex"})
	if err != nil {
		t.Fatalf("btcd-electrum -C %s --dropelectrumindex refused: %v\n"+
			"(the documented remedy takes only electrumindex=1 out of the config file; a drop run listens nowhere)",
			conf, err)
	}
	if !cfg.DropRequested() {
		t.Fatal("drop not requested")
	}
	if err := DropIndexes(cfg); err != nil {
		t.Fatalf("DropIndexes: %v", err)
	}
	if _, err := os.Stat(storeDir); !os.IsNotExist(err) {
		t.Fatalf("the index's store is still there after the drop: %v", err)
	}
}

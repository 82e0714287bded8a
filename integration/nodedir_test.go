package integration_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/integration"
)

// One NodeConfig serves in both modes: a Dir that does not exist yet (one
// directory a node, filepath.Join(t.TempDir(), "alice")) is made, as the
// node makes its data and log directories.
func TestNodeDirCreatedInBothModes(t *testing.T) {
	for _, binary := range []bool{false, true} {
		name := "in-process"
		if binary {
			name = "binary"
		}
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "alice")
			n := integration.StartNode(t, integration.NodeConfig{Binary: binary, Dir: dir})
			if _, err := n.Mine(1); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "data", "regtest")); err != nil {
				t.Fatalf("the chain is not under NodeConfig.Dir: %v", err)
			}
		})
	}
}

package integration

import (
	"testing"

	"github.com/btcsuite/btclog"

	"github.com/btcd-electrum/btcd-electrum/node"
)

// TestInProcessDebugLevelFlagForms: NodeConfig.Args documents "An
// in-process node applies --debuglevel to the whole process's log". The
// node's flag parser takes the level as "--debuglevel=debug", but also as
// "--debuglevel debug" and "-d debug" (btcd's short flag); the node
// accepts all three, and each reaches the process's loggers.
func TestInProcessDebugLevelFlagForms(t *testing.T) {
	t.Cleanup(func() { _ = node.SetLogLevels("info") })
	for _, args := range [][]string{
		{"--debuglevel=debug"},
		{"--debuglevel", "debug"},
		{"-d", "debug"},
	} {
		if err := node.SetLogLevels("info"); err != nil {
			t.Fatal(err)
		}
		n := StartNode(t, NodeConfig{Args: args})
		if got := node.Logger("NODE").Level(); got != btclog.LevelDebug {
			t.Errorf("in-process node started with Args %q: NODE logs at %v, want debug", args, got)
		}
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}

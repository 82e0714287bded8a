package integration

import (
	"testing"
)

// TestParallelInProcessNodes runs two in-process nodes from parallel tests
// of one test binary, each mining on its own chain. The nodes share no
// mutable state (btcd's blockchain.New points the network parameters'
// deployment clocks at its chain, so each node needs parameters of its
// own), so the race detector reports nothing. Run it as the package
// documents: go test -race -count=1 -run TestParallelInProcessNodes ./integration/
func TestParallelInProcessNodes(t *testing.T) {
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := StartNode(t, NodeConfig{})
			if _, err := n.Mine(3); err != nil {
				t.Fatal(err)
			}
		})
	}
}

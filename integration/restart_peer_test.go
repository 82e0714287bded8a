package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/integration"
)

// TestRestartKeepsPeerConnectable: a node restarted with Node.Restart
// listens where it did, so a second node that follows it with
// --connect=<its P2PAddr> (retried for ever, as btcd retries it) follows it
// again after the restart.
func TestRestartKeepsPeerConnectable(t *testing.T) {
	a := integration.StartNode(t, integration.NodeConfig{})
	b := integration.StartNode(t, integration.NodeConfig{Args: []string{"--connect=" + a.P2PAddr}})
	if _, err := a.Mine(1); err != nil {
		t.Fatal(err)
	}
	waitHeight(t, b, 1)

	before := a.P2PAddr
	a = a.Restart(t)
	if a.P2PAddr != before {
		t.Fatalf("restarted on %s, was %s", a.P2PAddr, before)
	}
	if _, err := a.Mine(1); err != nil {
		t.Fatal(err)
	}
	// Hang guard: btcd retries a --connect peer within seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		_, h, err := b.RPC.GetBestBlock()
		if err == nil && h >= 2 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the node started with --connect=%s never followed the restarted node (now listening on %s): still at height %d",
				before, a.P2PAddr, h)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitHeight waits until the node's chain reaches height.
func waitHeight(t *testing.T, n *integration.Node, height int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	integration.WaitFor(t, ctx, "the follower to sync", func() bool {
		_, h, err := n.RPC.GetBestBlock()
		return err == nil && h >= height
	})
}

package integration

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestRPCStopEndsNode: the RPC stop command (btcd's "btcd stopping.")
// shuts the node down in both modes: its listeners close and its Electrum
// client's connection ends, as they do for the binary.
func TestRPCStopEndsNode(t *testing.T) {
	for _, mode := range []struct {
		name   string
		binary bool
	}{{"binary", true}, {"in-process", false}} {
		t.Run(mode.name, func(t *testing.T) {
			n := StartNode(t, NodeConfig{Binary: mode.binary})
			// A hang guard: the binary is gone within milliseconds.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			reply, err := n.RPC.RawRequest("stop", nil)
			if err != nil {
				t.Fatalf("stop: %v", err)
			}
			select {
			case <-n.Electrum.Done():
			case <-ctx.Done():
				t.Fatalf("stop answered %s, but the node still serves: the Electrum connection is open", reply)
			}
			WaitFor(t, ctx, "the RPC listener to close", func() bool {
				c, err := net.DialTimeout("tcp", n.RPCAddr, time.Second)
				if err != nil {
					return true
				}
				c.Close()
				return false
			})
		})
	}
}

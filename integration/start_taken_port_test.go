package integration

import (
	"errors"
	"net"
	"testing"
)

// TestStartRecognisesTakenPortOfBinaryNode: a binary node that exits at
// start because one of its ports is taken is recognised as such by Start
// (outside a test) as it is by StartNode, so that both start it again on
// other ports. A port held by this test and given as an extra listener
// makes every attempt exit with "address already in use".
func TestStartRecognisesTakenPortOfBinaryNode(t *testing.T) {
	if _, err := NodeBinary(); err != nil {
		t.Fatal(err)
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cfg := NodeConfig{Binary: true, Args: []string{"--electrumlisten=" + held.Addr().String()}}

	// StartNode's path (a test's temporary directory) sees the taken port.
	if _, err := startNodeOnce(t, cfg); !errors.Is(err, errAddrInUse) {
		t.Fatalf("in a test, a taken port is not recognised: %v", err)
	}
	// Start's path (a directory of its own, removed on failure).
	n, err := Start(cfg)
	if err == nil {
		_ = n.Stop()
		t.Fatal("Start succeeded with a taken Electrum port")
	}
	if !errors.Is(err, errAddrInUse) {
		t.Fatalf("Start does not recognise the taken port (so it never starts the node again on other ports): %v", err)
	}
}

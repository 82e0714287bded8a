package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHarnessModes starts one node in-process and one as the binary, both
// with TLS RPC, and connects the binary to the in-process node over P2P:
// blocks mined in-process reach the binary, and both Electrum servers
// serve the same tip and the same history for the mining script, also
// after the in-process node is restarted on its datadir.
func TestHarnessModes(t *testing.T) {
	ctx := testContext(t)
	inproc := StartNode(t, NodeConfig{RPCTLS: true})
	if inproc.InProcess() == nil {
		t.Fatal("the in-process node has no node.Node")
	}
	bin := StartNode(t, NodeConfig{Binary: true, RPCTLS: true, Args: []string{"--connect=" + inproc.P2PAddr}})
	if bin.InProcess() != nil {
		t.Fatal("the binary node reports an in-process node.Node")
	}
	if _, err := inproc.Mine(12); err != nil {
		t.Fatal(err)
	}
	_, height := waitSameTip(t, ctx, inproc.RPC, bin.RPC)
	if height != 12 {
		t.Fatalf("tip at %d, want 12", height)
	}
	sh := ScriptHash(MiningScript())
	var tips []HeaderTip
	var hists [][]HistoryItem
	for _, n := range []*Node{inproc, bin} {
		ec := n.Electrum
		tip, err := ec.SubscribeHeaders(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tip.Height < height {
			if tip, err = ec.NextHeader(ctx, height); err != nil {
				t.Fatal(err)
			}
		}
		tips = append(tips, tip)
		hist, err := ec.GetHistory(ctx, sh)
		if err != nil {
			t.Fatal(err)
		}
		hists = append(hists, hist)
	}
	if tips[0] != tips[1] || tips[0].Hex != headerHex(t, inproc.RPC, height) {
		t.Fatalf("tips %+v and %+v", tips[0], tips[1])
	}
	want, err := ChainHistory(bin.RPC, MiningScript())
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 12 || !equalHistory(hists[0], want) || !equalHistory(hists[1], want) {
		t.Fatalf("histories %+v and %+v, the blocks give %+v", hists[0], hists[1], want)
	}

	// An in-process restart reopens the same datadir.
	again := inproc.Restart(t)
	if again.InProcess() == nil || again.DataDir != inproc.DataDir {
		t.Fatalf("restarted node: in-process %v, datadir %s", again.InProcess() != nil, again.DataDir)
	}
	if _, h, err := again.RPC.GetBestBlock(); err != nil || h != height {
		t.Fatalf("after restart the tip is at %d (%v), want %d", h, err, height)
	}
	hist, err := again.Electrum.GetHistory(ctx, sh)
	if err != nil || !equalHistory(hist, want) {
		t.Fatalf("after restart get_history = %+v (%v), want %+v", hist, err, want)
	}
}

// TestStartFailureSaysWhy: a node that exits at start is reported with
// the end of its output, since the file holding it goes with the test's
// directory; the same for btcd.
func TestStartFailureSaysWhy(t *testing.T) {
	_, err := Start(NodeConfig{Binary: true, Args: []string{"--nosuchflag"}})
	if err == nil || !strings.Contains(err.Error(), "nosuchflag") {
		t.Fatalf("a node with an unknown flag: %v, want its complaint about the flag", err)
	}
}

// TestArgsDataDirReported: a --datadir and --logdir given in Args take
// precedence over the harness's, and the Node reports them: DataDir holds
// the chain, and Log reads the node's log.
func TestArgsDataDirReported(t *testing.T) {
	dir := t.TempDir()
	data, logs := filepath.Join(dir, "mydata"), filepath.Join(dir, "mylogs")
	n := StartNode(t, NodeConfig{Binary: true, Args: []string{"--datadir=" + data, "--logdir=" + logs}})
	if _, err := os.Stat(filepath.Join(data, "regtest")); err != nil {
		t.Fatalf("the node did not use --datadir from Args: %v", err)
	}
	if n.DataDir != data || n.LogDir != logs {
		t.Fatalf("the node runs on --datadir=%s --logdir=%s (Args), but Node.DataDir=%s, Node.LogDir=%s",
			data, logs, n.DataDir, n.LogDir)
	}
	if _, err := n.Log(); err != nil {
		t.Fatalf("Log: %v", err)
	}
}

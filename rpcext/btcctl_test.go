package rpcext

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildBtcctl builds btcd's own btcctl from the module cache.
func buildBtcctl(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "btcctl")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/btcsuite/btcd/cmd/btcctl").CombinedOutput()
	if err != nil {
		t.Fatalf("build btcctl: %v\n%s", err, out)
	}
	return bin
}

// TestBtcctl drives the server with btcd's btcctl over TLS. btcctl only
// sends methods btcjson has registered in its own binary, so the
// getelectruminfo extension is refused by btcctl itself (README.md shows
// rpcclient.RawRequest and curl for it).
func TestBtcctl(t *testing.T) {
	btcctl := buildBtcctl(t)
	node := newTestNode(t)
	if _, err := node.Generate(5, nil); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, node, nil)
	conf := filepath.Join(t.TempDir(), "btcctl.conf")
	run := func(pass string, args ...string) (string, error) {
		base := []string{"-C", conf, "--rpcuser=" + testUser, "--rpcpass=" + pass,
			"--rpcserver=" + ts.addr, "--rpccert=" + ts.certFile}
		out, err := exec.Command(btcctl, append(base, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}

	best := node.chain.BestSnapshot()
	genesis := node.params.GenesisHash.String()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"getblockcount"}, "5"},
		{[]string{"getbestblockhash"}, best.Hash.String()},
		{[]string{"getblockhash", "0"}, genesis},
		{[]string{"getbestblock"}, `"height": 5`},
		{[]string{"getblockheader", genesis}, `"height": 0`},
		{[]string{"getblock", best.Hash.String(), "0"}, "0"},
		{[]string{"getinfo"}, `"blocks": 5`},
		{[]string{"getrawmempool"}, "[]"},
		{[]string{"help", "getblockcount"}, "height of the main-chain tip"},
	} {
		out, err := run(testPass, tc.args...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Fatalf("btcctl %v: %q %v, want %q", tc.args, out, err, tc.want)
		}
	}

	out, err := run(testPass, "getblockhash", "99")
	if err == nil || !strings.Contains(out, "-1") && !strings.Contains(out, "out of range") {
		t.Fatalf("btcctl getblockhash 99: %q %v", out, err)
	}
	out, err = run("wrong", "getblockcount")
	if err == nil || !strings.Contains(out, "401") {
		t.Fatalf("btcctl with a wrong password: %q %v", out, err)
	}
	out, err = run(testPass, GetElectrumInfoMethod)
	if err == nil || !strings.Contains(out, "Unrecognized command") {
		t.Fatalf("btcctl getelectruminfo: %q %v (btcctl now knows the command; update README.md)", out, err)
	}
}

package node

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// searchrawtransactions takes skip and count as any non-negative ints, and
// the limited user may call it. skip=1 and count=4294967295 must not wrap
// in the sum of the two into a 64 GiB allocation, which no recover catches:
// the answer is -5 No information (skipping the only mempool transaction
// leaves nothing). SEARCHRAW_REVERSE=false runs the forward order, whose
// mempool part comes after the confirmed one.
//
// The node runs in a child process so that its crash is reported rather
// than taking the test binary down.
func TestSearchRawTransactionsCountWraps(t *testing.T) {
	if os.Getenv("SEARCHRAW_CHILD") == "1" {
		searchRawChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSearchRawTransactionsCountWraps$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "SEARCHRAW_CHILD=1")
	out, err := cmd.CombinedOutput()
	if m := regexp.MustCompile(`fatal error: [^\n]*`).Find(out); m != nil {
		t.Fatalf("one searchrawtransactions request (skip=1, count=4294967295, reverse=%s) crashed the node process: %s (exit %v)", searchRawReverse(), m, err)
	}
	if i := strings.Index(string(out), "SEARCHRAW_RESULT"); i >= 0 {
		t.Log(strings.SplitN(string(out[i:]), "\n", 2)[0])
	}
	if err != nil {
		t.Fatalf("child failed: %v\n%s", err, out[max(0, len(out)-3000):])
	}
}

func searchRawChild(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), false)
	cfg.AddrIndex = true
	n := startNode(t, cfg)
	generate(t, n, 101)
	c := rpcClient(t, n.RPCAddrs()[0].String())
	script := freshScript(t)
	_, addrs, _, _ := txscript.ExtractPkScriptAddrs(script, &chaincfg.RegressionNetParams)
	payFromCoinbase(t, n, 1, script)

	params := []json.RawMessage{
		json.RawMessage(`"` + addrs[0].EncodeAddress() + `"`), // address
		json.RawMessage(`0`),                // verbose
		json.RawMessage(`1`),                // skip
		json.RawMessage(`4294967295`),       // count
		json.RawMessage(`0`),                // vinextra
		json.RawMessage(searchRawReverse()), // reverse
	}
	_, err := c.RawRequest("searchrawtransactions", params)
	t.Logf("SEARCHRAW_RESULT answer: %v", err)
	if err == nil || !strings.HasPrefix(err.Error(), "-5:") {
		t.Fatalf("searchrawtransactions skip=1 count=4294967295 reverse=%s: %v, want -5 (nothing past the skipped transaction)",
			searchRawReverse(), err)
	}
}

// searchRawReverse is the reverse parameter: true unless SEARCHRAW_REVERSE=false (the
// forward path wraps the same way, in its mempool part after the
// confirmed one).
func searchRawReverse() string {
	if os.Getenv("SEARCHRAW_REVERSE") == "false" {
		return "false"
	}
	return "true"
}

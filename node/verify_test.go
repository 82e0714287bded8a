package node

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/rpcclient"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// verifyRPC calls verifyelectrumindex with action and decodes the answer.
func verifyRPC(t *testing.T, c *rpcclient.Client, action string) rpcext.VerifyIndexInfo {
	t.Helper()
	param, _ := json.Marshal(action)
	raw, err := c.RawRequest(rpcext.VerifyElectrumIndexMethod, []json.RawMessage{param})
	if err != nil {
		t.Fatalf("verifyelectrumindex %s: %v", action, err)
	}
	var info rpcext.VerifyIndexInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatalf("verifyelectrumindex %s: %s: %v", action, raw, err)
	}
	return info
}

// verifyOverRPC starts a verification over RPC and polls its status until it
// has a result.
func verifyOverRPC(t *testing.T, n *Node) *rpcext.VerifyIndexResult {
	t.Helper()
	c, err := rpcclient.New(&rpcclient.ConnConfig{
		Host: n.RPCAddrs()[0].String(), User: "user", Pass: "pass", HTTPPostMode: true, DisableTLS: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	bogus, _ := json.Marshal("bogus")
	if _, err := c.RawRequest(rpcext.VerifyElectrumIndexMethod, []json.RawMessage{bogus}); err == nil ||
		!strings.Contains(err.Error(), "start") {
		t.Fatalf("verifyelectrumindex with an unknown action: %v", err)
	}
	started := verifyRPC(t, c, "start")
	if started.Started == 0 {
		t.Fatalf("start: %+v", started)
	}
	var info rpcext.VerifyIndexInfo
	waitFor(t, "the verification to finish", func() bool {
		info = verifyRPC(t, c, "status")
		return !info.Running && info.Result != nil
	})
	if info.Error != "" || info.Phase != "done" {
		t.Fatalf("verification: %+v", info)
	}
	return info.Result
}

// A node verifies its index at start (--electrumverify) and over RPC while
// it runs; a row deleted from the database while it is stopped makes the
// start-up verification fail New, and the RPC names the row's table and
// height.
func TestVerifyElectrumIndex(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, true)
	n := startNode(t, cfg)
	generate(t, n, 101)
	if _, err := n.ProcessTx(spendCoinbase(t, n, 1, 10_000)); err != nil {
		t.Fatal(err)
	}
	generate(t, n, 1)
	res := verifyOverRPC(t, n)
	if !res.OK || res.Height != 102 || res.Blocks != 103 || res.Rows == 0 || res.Rows != res.ExpectedRows {
		t.Fatalf("verification of a clean index: %+v", res)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	// A clean index passes the start-up verification.
	cfg = testConfig(t, dir, true)
	cfg.ElectrumVerify = true
	n = startNode(t, cfg)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}

	// Delete the history row of the spend (height 102) from the index's
	// store.
	store, err := leveldb.OpenFile(ElectrumIndexPath(cfg.netDataDir), nil)
	if err != nil {
		t.Fatal(err)
	}
	var deleted []byte
	it := store.NewIterator(util.BytesPrefix([]byte("Exh")), nil)
	for it.Next() {
		// A row of block 102 holding the spend, position 1.
		k, v := it.Key(), it.Value()
		if bytes.Equal(k[len(k)-4:], []byte{0, 0, 0, 102}) && len(v) >= 2 && v[len(v)-2] == 0 && v[len(v)-1] == 1 {
			deleted = bytes.Clone(k)
			break
		}
	}
	it.Release()
	if err := it.Error(); err != nil || deleted == nil {
		t.Fatalf("find the history row of the spend: %v", err)
	}
	if err := store.Delete(deleted, nil); err != nil {
		t.Fatalf("delete a history row: %x %v", deleted, err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	cfg = testConfig(t, dir, true)
	cfg.ElectrumVerify = true
	if bad, err := New(cfg); err == nil {
		_ = bad.Stop()
		t.Fatal("New verified a corrupt index")
	} else if !strings.Contains(err.Error(), "differences") {
		t.Fatalf("New: %v", err)
	}

	n = startNode(t, testConfig(t, dir, true))
	res = verifyOverRPC(t, n)
	if res.OK || len(res.Differences) != 1 || res.Rows+1 != res.ExpectedRows {
		t.Fatalf("verification of a corrupt index: %+v", res)
	}
	d := res.Differences[0]
	if d.Table != "history" || d.Kind != "missing" || d.Height != 102 || d.HashX == "" ||
		d.Key != hex.EncodeToString(deleted) || !strings.HasSuffix(d.Expected, "0001") {
		t.Fatalf("difference %+v, want the missing history row at height 102 (key %x)", d, deleted)
	}
}

// --electrumverify without the index it verifies is refused.
func TestElectrumVerifyNeedsTheIndex(t *testing.T) {
	_, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--electrumverify"})
	if err == nil || !strings.Contains(err.Error(), "--electrumindex") {
		t.Fatalf("error %v, want one naming --electrumindex", err)
	}
	if _, _, err := LoadConfig([]string{writeConfigFile(t, ""), "--regtest", "--electrumverify", "--electrumindex"}); err != nil {
		t.Fatal(err)
	}
}

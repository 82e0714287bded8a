package node

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestBtcdChainMethods calls btcd's chain and utility methods through
// btcd's own rpcclient: getblockchaininfo, getcurrentnet, getdifficulty,
// getheaders, gettxout (confirmed, mempool, spent), decoderawtransaction,
// decodescript, validateaddress and version.
func TestBtcdChainMethods(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatal(err)
	}
	c := rpcClient(t, n.RPCAddrs()[0].String())
	tip := n.Chain().BestSnapshot()

	info, err := c.GetBlockChainInfo()
	if err != nil {
		t.Fatal(err)
	}
	if info.Chain != "regtest" || info.Blocks != tip.Height || info.BestBlockHash != tip.Hash.String() ||
		info.SoftForks == nil || info.SoftForks.Bip9SoftForks["segwit"] == nil {
		t.Fatalf("getblockchaininfo %+v", info)
	}
	if net, err := c.GetCurrentNet(); err != nil || net != chaincfg.RegressionNetParams.Net {
		t.Fatalf("getcurrentnet %v %v", net, err)
	}
	if d, err := c.GetDifficulty(); err != nil || d != 1 {
		t.Fatalf("getdifficulty %v %v", d, err)
	}
	genesis := *chaincfg.RegressionNetParams.GenesisHash
	headers, err := c.GetHeaders([]chainhash.Hash{genesis}, &chainhash.Hash{})
	if err != nil || len(headers) != int(tip.Height) || headers[len(headers)-1].BlockHash() != tip.Hash {
		t.Fatalf("getheaders: %d headers, %v", len(headers), err)
	}
	if v, err := c.Version(); err != nil || v["btcdjsonrpcapi"].VersionString != "1.3.0" {
		t.Fatalf("version %v %v", v, err)
	}

	// gettxout: the coinbase of block 1 unspent, then spent (in the
	// mempool, so only without the mempool view), and the spend's output.
	cb := mustBlock(t, n, 1).Transactions()[0]
	out, err := c.GetTxOut(cb.Hash(), 0, true)
	if err != nil || out == nil || out.Confirmations != int64(tip.Height) || !out.Coinbase || out.Value != 50 {
		t.Fatalf("gettxout of a coinbase: %+v %v", out, err)
	}
	spend := spendCoinbase(t, n, 1, 10_000)
	if _, err := n.ProcessTx(spend); err != nil {
		t.Fatal(err)
	}
	if out, err := c.GetTxOut(spend.Hash(), 0, true); err != nil || out == nil || out.Confirmations != 0 {
		t.Fatalf("gettxout of a mempool output: %+v %v", out, err)
	}
	if out, err := c.GetTxOut(spend.Hash(), 0, false); err != nil || out != nil {
		t.Fatalf("gettxout of a mempool output without the mempool: %+v %v", out, err)
	}
	if _, err := n.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	if out, err := c.GetTxOut(cb.Hash(), 0, true); err != nil || out != nil {
		t.Fatalf("gettxout of a spent output: %+v %v", out, err)
	}

	var raw bytes.Buffer
	_ = spend.MsgTx().Serialize(&raw)
	dec, err := c.DecodeRawTransaction(raw.Bytes())
	if err != nil || dec.Txid != spend.Hash().String() || len(dec.Vout) != 1 ||
		dec.Vout[0].ScriptPubKey.Address != testMiningAddr(t).EncodeAddress() {
		t.Fatalf("decoderawtransaction %+v %v", dec, err)
	}
	script, _ := txscript.PayToAddrScript(testMiningAddr(t))
	ds, err := c.DecodeScript(script)
	if err != nil || ds.Type != "pubkeyhash" || ds.Address != testMiningAddr(t).EncodeAddress() || ds.P2sh == "" {
		t.Fatalf("decodescript %+v %v", ds, err)
	}
	va, err := c.RawRequest("validateaddress", rawParams(t, testMiningAddr(t).EncodeAddress()))
	if err != nil || !strings.Contains(string(va), `"isvalid":true`) || !strings.Contains(string(va), `"isscript":false`) {
		t.Fatalf("validateaddress %s %v", va, err)
	}
	va, err = c.RawRequest("validateaddress", rawParams(t, "not-an-address"))
	if err != nil || !strings.Contains(string(va), `"isvalid":false`) {
		t.Fatalf("validateaddress of garbage %s %v", va, err)
	}
}

// TestLimitedRPCUser configures --rpclimituser: the limited user reads the
// chain and submits transactions, but stop, peer control, mining, the faucet
// and the Electrum extensions answer btcd's "limited user not authorized",
// over HTTP and websockets; the full user reaches everything.
func TestLimitedRPCUser(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), true)
	cfg.RPCLimitUser, cfg.RPCLimitPass = "limited", "lpass"
	n := startNode(t, cfg)
	addr := n.RPCAddrs()[0].String()
	limited, err := rpcclient.New(&rpcclient.ConnConfig{Host: addr, User: "limited", Pass: "lpass",
		HTTPPostMode: true, DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer limited.Shutdown()
	if _, err := limited.GetBlockCount(); err != nil {
		t.Fatalf("limited getblockcount: %v", err)
	}
	if _, err := limited.GetBestBlockHash(); err != nil {
		t.Fatalf("limited getbestblockhash: %v", err)
	}
	for _, method := range []string{"stop", "addnode", "generate", "getpeerinfo", "faucet", "getelectruminfo"} {
		var params []string
		switch method {
		case "addnode":
			params = []string{"127.0.0.1:1", "onetry"}
		case "generate":
			params = []string{"1"}
		case "faucet":
			params = []string{testMiningAddr(t).EncodeAddress(), "1"}
		}
		_, err := limited.RawRequest(method, rawParams(t, params...))
		rerr, ok := err.(*btcjson.RPCError)
		if !ok || !strings.Contains(rerr.Message, "limited user not authorized") {
			t.Fatalf("limited %s: %v", method, err)
		}
	}
	// Over websockets too.
	ws, err := rpcclient.New(&rpcclient.ConnConfig{Host: addr, Endpoint: "ws", User: "limited", Pass: "lpass",
		DisableTLS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Shutdown()
	if err := ws.NotifyBlocks(); err != nil {
		t.Fatalf("limited notifyblocks over websocket: %v", err)
	}
	if _, err := ws.RawRequest("getelectruminfo", nil); err == nil ||
		!strings.Contains(err.Error(), "limited user not authorized") {
		t.Fatalf("limited getelectruminfo over websocket: %v", err)
	}
	// The full user reaches the administrative methods; a wrong password
	// reaches nothing.
	full := rpcClient(t, addr)
	if _, err := full.RawRequest("getelectruminfo", nil); err != nil {
		t.Fatalf("full getelectruminfo: %v", err)
	}
	bad, _ := rpcclient.New(&rpcclient.ConnConfig{Host: addr, User: "limited", Pass: "wrong",
		HTTPPostMode: true, DisableTLS: true}, nil)
	defer bad.Shutdown()
	if _, err := bad.GetBlockCount(); err == nil {
		t.Fatal("a wrong password was accepted")
	}
}

// rawParams encodes string parameters for RawRequest; those that are JSON
// numbers stay numbers.
func rawParams(t *testing.T, params ...string) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(params))
	for i, p := range params {
		if _, err := strconv.ParseFloat(p, 64); err == nil {
			out[i] = json.RawMessage(p)
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestBtcdUtilMethods signs and verifies a message, builds a raw
// transaction, and tests a transaction for the mempool before and after it
// is accepted (testmempoolaccept, gettxspendingprevout), through btcd's
// rpcclient.
func TestBtcdUtilMethods(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatal(err)
	}
	c := rpcClient(t, n.RPCAddrs()[0].String())

	wif, err := btcutil.NewWIF(testKey, &chaincfg.RegressionNetParams, true)
	if err != nil {
		t.Fatal(err)
	}
	var sig string
	raw, err := c.RawRequest("signmessagewithprivkey", rawParams(t, wif.String(), "hello"))
	if err != nil || json.Unmarshal(raw, &sig) != nil {
		t.Fatalf("signmessagewithprivkey %s %v", raw, err)
	}
	if ok, err := c.VerifyMessage(testMiningAddr(t), sig, "hello"); err != nil || !ok {
		t.Fatalf("verifymessage of the signed message: %v %v", ok, err)
	}
	if ok, err := c.VerifyMessage(testMiningAddr(t), sig, "hello!"); err != nil || ok {
		t.Fatalf("verifymessage of another message: %v %v", ok, err)
	}

	cb := mustBlock(t, n, 1).Transactions()[0]
	lock := int64(0)
	mtx, err := c.CreateRawTransaction([]btcjson.TransactionInput{{Txid: cb.Hash().String(), Vout: 0}},
		map[address.Address]btcutil.Amount{testMiningAddr(t): 49 * btcutil.SatoshiPerBitcoin}, &lock)
	if err != nil || len(mtx.TxIn) != 1 || mtx.TxIn[0].PreviousOutPoint.Hash != *cb.Hash() ||
		len(mtx.TxOut) != 1 || mtx.TxOut[0].Value != 49*btcutil.SatoshiPerBitcoin {
		t.Fatalf("createrawtransaction %v %v", mtx, err)
	}

	spend := spendCoinbase(t, n, 1, 10_000)
	res, err := c.TestMempoolAccept([]*wire.MsgTx{spend.MsgTx()}, 0)
	if err != nil || len(res) != 1 || !res[0].Allowed || res[0].Txid != spend.Hash().String() {
		t.Fatalf("testmempoolaccept %+v %v", res, err)
	}
	if n.TxPool().HaveTransaction(spend.Hash()) {
		t.Fatal("testmempoolaccept added the transaction")
	}
	op := wire.OutPoint{Hash: *cb.Hash(), Index: 0}
	if sp, err := c.GetTxSpendingPrevOut([]wire.OutPoint{op}); err != nil || sp[0].SpendingTxid != "" {
		t.Fatalf("gettxspendingprevout before: %+v %v", sp, err)
	}
	if _, err := n.ProcessTx(spend); err != nil {
		t.Fatal(err)
	}
	if sp, err := c.GetTxSpendingPrevOut([]wire.OutPoint{op}); err != nil || sp[0].SpendingTxid != spend.Hash().String() {
		t.Fatalf("gettxspendingprevout after: %+v %v", sp, err)
	}
	double := spendCoinbase(t, n, 1, 20_000)
	if res, err := c.TestMempoolAccept([]*wire.MsgTx{double.MsgTx()}, 0); err != nil || res[0].Allowed || res[0].RejectReason == "" {
		t.Fatalf("testmempoolaccept of a double spend %+v %v", res, err)
	}
}

// TestBtcdAdminMethods drives btcd's network, mining and debugging methods
// through btcd's rpcclient on two connected nodes.
func TestBtcdAdminMethods(t *testing.T) {
	a := startNode(t, testConfig(t, t.TempDir(), false))
	b := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := a.Generate(10, nil); err != nil {
		t.Fatal(err)
	}
	c := rpcClient(t, a.RPCAddrs()[0].String())
	bAddr := b.P2PAddrs()[0].String()
	if err := c.AddNode(bAddr, rpcclient.ANAdd); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the added peer", func() bool { return a.ConnectedCount() == 1 })

	if added, err := c.GetAddedNodeInfoNoDNS(bAddr); err != nil || len(added) != 1 || added[0] != bAddr {
		t.Fatalf("getaddednodeinfo %v %v", added, err)
	}
	info, err := c.GetAddedNodeInfo(bAddr)
	if err != nil || len(info) != 1 || info[0].Connected == nil || !*info[0].Connected {
		t.Fatalf("getaddednodeinfo dns %+v %v", info, err)
	}
	totals, err := c.GetNetTotals()
	if err != nil || totals.TotalBytesRecv == 0 || totals.TotalBytesSent == 0 {
		t.Fatalf("getnettotals %+v %v", totals, err)
	}
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a ping round trip", func() bool {
		peers, err := c.GetPeerInfo()
		return err == nil && len(peers) == 1 && peers[0].PingTime > 0
	})
	if _, err := c.GetNodeAddresses(nil); err != nil {
		t.Fatalf("getnodeaddresses: %v", err)
	}
	// node disconnect refuses a permanent peer; node remove by id drops it.
	if _, err := c.RawRequest("node", rawParams(t, "disconnect", bAddr)); err == nil ||
		!strings.Contains(err.Error(), "use remove") {
		t.Fatalf("node disconnect of a permanent peer: %v", err)
	}
	id := a.Peers()[0].ID()
	if err := c.Node(btcjson.NRemove, strconv.Itoa(int(id)), nil); err != nil {
		t.Fatalf("node remove: %v", err)
	}
	waitFor(t, "the removed peer to go", func() bool { return a.ConnectedCount() == 0 })

	if err := c.SetGenerate(true, 1); err != nil {
		t.Fatal(err)
	}
	if on, err := c.GetGenerate(); err != nil || !on {
		t.Fatalf("getgenerate after setgenerate true: %v %v", on, err)
	}
	if err := c.SetGenerate(false, 0); err != nil {
		t.Fatal(err)
	}
	if on, err := c.GetGenerate(); err != nil || on {
		t.Fatalf("getgenerate after setgenerate false: %v %v", on, err)
	}
	if _, err := c.GetHashesPerSec(); err != nil {
		t.Fatal(err)
	}
	mi, err := c.GetMiningInfo()
	if err != nil || mi.Blocks < 10 || mi.NetworkHashPS <= 0 {
		t.Fatalf("getmininginfo %+v %v", mi, err)
	}
	if ok, err := c.VerifyChainLevel(3); err != nil || !ok {
		t.Fatalf("verifychain %v %v", ok, err)
	}
	if out, err := c.RawRequest("debuglevel", rawParams(t, "show")); err != nil || !strings.Contains(string(out), "SRVR") {
		t.Fatalf("debuglevel show %s %v", out, err)
	}
	if out, err := c.RawRequest("debuglevel", rawParams(t, "SRVR=debug")); err != nil || string(out) != `"Done."` {
		t.Fatalf("debuglevel %s %v", out, err)
	}
	if _, err := c.RawRequest("debuglevel", rawParams(t, "nonsense=1")); err == nil {
		t.Fatal("debuglevel accepted a bad spec")
	}
	_ = SetLogLevels(os.Getenv("NODE_TEST_LOG"))
}

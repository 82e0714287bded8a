package rpcext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/integration/rpctest"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// matureNode returns a node whose first coinbase (height 1) is spendable.
func matureNode(t *testing.T) *testNode {
	t.Helper()
	node := newTestNode(t)
	if _, err := node.Generate(uint32(node.params.CoinbaseMaturity)+1, nil); err != nil {
		t.Fatal(err)
	}
	return node
}

// newAddress returns a fresh P2PKH address and its key.
func newAddress(t *testing.T, node *testNode) (*address.AddressPubKeyHash, *btcec.PrivateKey) {
	t.Helper()
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	a, err := address.NewAddressPubKeyHash(address.Hash160(key.PubKey().SerializeCompressed()), node.params)
	if err != nil {
		t.Fatal(err)
	}
	return a, key
}

// spend builds a signed transaction moving output op (paying pkScript,
// worth value, owned by key) to payTo, less a fee.
func spend(t *testing.T, op wire.OutPoint, pkScript []byte, value int64, key *btcec.PrivateKey,
	payTo address.Address) *wire.MsgTx {
	t.Helper()
	script, err := txscript.PayToAddrScript(payTo)
	if err != nil {
		t.Fatal(err)
	}
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&op, nil, nil))
	tx.AddTxOut(wire.NewTxOut(value-10000, script))
	sig, err := txscript.SignatureScript(tx, 0, pkScript, txscript.SigHashAll, key, true)
	if err != nil {
		t.Fatal(err)
	}
	tx.TxIn[0].SignatureScript = sig
	return tx
}

// spendCoinbase spends the coinbase of the main-chain block at height.
func spendCoinbase(t *testing.T, node *testNode, height int32, payTo address.Address) *wire.MsgTx {
	t.Helper()
	hash, err := node.chain.BlockHashByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	block, err := node.chain.BlockByHash(hash)
	if err != nil {
		t.Fatal(err)
	}
	cb := block.Transactions()[0]
	out := cb.MsgTx().TxOut[0]
	return spend(t, wire.OutPoint{Hash: *cb.Hash(), Index: 0}, out.PkScript, out.Value, node.key, payTo)
}

func TestChainMethods(t *testing.T) {
	node := matureNode(t)
	ts := startServer(t, node, nil)
	c := ts.httpClient(t, testUser, testPass)
	best := node.chain.BestSnapshot()

	n, err := c.GetBlockCount()
	if err != nil || n != int64(best.Height) {
		t.Fatalf("getblockcount %d %v, want %d", n, err, best.Height)
	}
	h, err := c.GetBestBlockHash()
	if err != nil || *h != best.Hash {
		t.Fatalf("getbestblockhash %v %v", h, err)
	}
	h, height, err := c.GetBestBlock()
	if err != nil || *h != best.Hash || height != best.Height {
		t.Fatalf("getbestblock %v %d %v", h, height, err)
	}
	for _, ht := range []int64{0, 50, int64(best.Height)} {
		h, err := c.GetBlockHash(ht)
		want, _ := node.chain.BlockHashByHeight(int32(ht))
		if err != nil || *h != *want {
			t.Fatalf("getblockhash %d: %v %v, want %v", ht, h, err, want)
		}
	}
	for _, ht := range []int64{-1, int64(best.Height) + 1, 1 << 40} {
		if _, err := c.GetBlockHash(ht); rpcCode(t, err) != btcjson.ErrRPCOutOfRange {
			t.Fatalf("getblockhash %d: %v", ht, err)
		}
	}

	// getblock at each verbosity, compared with the chain's own block.
	mid, _ := node.chain.BlockHashByHeight(50)
	want, _ := node.chain.BlockByHash(mid)
	raw, err := c.GetBlock(mid)
	if err != nil {
		t.Fatal(err)
	}
	var got, exp bytes.Buffer
	raw.Serialize(&got)
	want.MsgBlock().Serialize(&exp)
	if !bytes.Equal(got.Bytes(), exp.Bytes()) {
		t.Fatal("getblock verbosity 0 differs from the chain's block")
	}
	v1, err := c.GetBlockVerbose(mid)
	if err != nil {
		t.Fatal(err)
	}
	next, _ := node.chain.BlockHashByHeight(51)
	if v1.Height != 50 || v1.Confirmations != int64(best.Height-50+1) || v1.NextHash != next.String() ||
		v1.PreviousHash != want.MsgBlock().Header.PrevBlock.String() || len(v1.Tx) != 1 ||
		v1.Tx[0] != want.Transactions()[0].Hash().String() || v1.Size != int32(exp.Len()) ||
		v1.Weight != int32(blockchain.GetBlockWeight(want)) || v1.Difficulty != 1 {
		t.Fatalf("getblock verbosity 1: %+v", v1)
	}
	v2, err := c.GetBlockVerboseTx(mid)
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Tx) != 1 || v2.Tx[0].Txid != want.Transactions()[0].Hash().String() ||
		v2.Tx[0].Vin[0].Coinbase == "" || v2.Tx[0].BlockHash != mid.String() ||
		v2.Tx[0].Vout[0].ScriptPubKey.Address != node.minerTo.EncodeAddress() {
		t.Fatalf("getblock verbosity 2: %+v", v2.Tx)
	}
	// btcd's own shape lists them under "rawtx" as well.
	if len(v2.RawTx) != 1 || v2.RawTx[0].Txid != v2.Tx[0].Txid {
		t.Fatalf("getblock verbosity 2 rawtx: %+v", v2.RawTx)
	}
	tipV, err := c.GetBlockVerbose(&best.Hash)
	if err != nil || tipV.NextHash != "" || tipV.Confirmations != 1 {
		t.Fatalf("tip getblock: %+v %v", tipV, err)
	}

	// getblockheader, verbose and not.
	hdr, err := c.GetBlockHeader(mid)
	if err != nil || hdr.BlockHash() != *mid {
		t.Fatalf("getblockheader: %v %v", hdr, err)
	}
	hv, err := c.GetBlockHeaderVerbose(mid)
	if err != nil || hv.Height != 50 || hv.NextHash != next.String() || hv.MerkleRoot != want.MsgBlock().Header.MerkleRoot.String() {
		t.Fatalf("getblockheader verbose: %+v %v", hv, err)
	}

	// Bad parameters.
	unknown := chainhash.Hash{1}
	if _, err := c.GetBlock(&unknown); rpcCode(t, err) != btcjson.ErrRPCBlockNotFound {
		t.Fatalf("unknown block: %v", err)
	}
	if _, err := c.GetBlockHeader(&unknown); rpcCode(t, err) != btcjson.ErrRPCBlockNotFound {
		t.Fatalf("unknown header: %v", err)
	}
	for _, body := range []string{
		`{"method":"getblock","params":["zz"],"id":1}`,
		`{"method":"getblockheader","params":["nothex"],"id":1}`,
		`{"method":"invalidateblock","params":["12"],"id":1}`,
	} {
		r := ts.call(t, body)
		if r.Error == nil || (r.Error.Code != btcjson.ErrRPCInvalidParameter && r.Error.Code != btcjson.ErrRPCDecodeHexString) {
			t.Fatalf("%s: %+v", body, r.Error)
		}
	}
}

func TestInvalidateReconsiderAndChainTips(t *testing.T) {
	node := matureNode(t)
	ts := startServer(t, node, nil)
	c := ts.httpClient(t, testUser, testPass)
	best := node.chain.BestSnapshot()
	parent, _ := node.chain.BlockHashByHeight(best.Height - 1)

	if err := c.InvalidateBlock(&best.Hash); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.GetBlockCount(); n != int64(best.Height-1) {
		t.Fatalf("after invalidateblock height %d, want %d", n, best.Height-1)
	}
	tips, err := c.GetChainTips()
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]string{}
	for _, tip := range tips {
		statuses[tip.Hash] = tip.Status
	}
	if statuses[best.Hash.String()] != "invalid" || statuses[parent.String()] != "active" {
		t.Fatalf("chain tips %v", statuses)
	}
	// The invalidated block's header is still described, off the main
	// chain; btcd's chain serves only main-chain blocks.
	v, err := c.GetBlockHeaderVerbose(&best.Hash)
	if err != nil || v.Confirmations != -1 || v.Height != best.Height || v.NextHash != "" {
		t.Fatalf("getblockheader of an invalid block: %+v %v", v, err)
	}
	if _, err := c.GetBlock(&best.Hash); rpcCode(t, err) != btcjson.ErrRPCBlockNotFound {
		t.Fatalf("getblock of an invalid block: %v", err)
	}

	if err := c.ReconsiderBlock(&best.Hash); err != nil {
		t.Fatal(err)
	}
	if h, _ := c.GetBestBlockHash(); *h != best.Hash {
		t.Fatalf("after reconsiderblock tip %v, want %v", h, best.Hash)
	}
	unknown := chainhash.Hash{2}
	if err := c.InvalidateBlock(&unknown); rpcCode(t, err) != btcjson.ErrRPCBlockNotFound {
		t.Fatalf("invalidate unknown: %v", err)
	}
}

func TestTransactionMethods(t *testing.T) {
	node := matureNode(t)
	ts := startServer(t, node, nil)
	c := ts.httpClient(t, testUser, testPass)
	to, _ := newAddress(t, node)

	// sendrawtransaction with the bool form (rpcclient may send either);
	// then the max-fee-rate number form through a raw request.
	tx1 := spendCoinbase(t, node, 1, to)
	id, err := c.SendRawTransaction(tx1, true)
	if err != nil || *id != tx1.TxHash() {
		t.Fatalf("sendrawtransaction: %v %v", id, err)
	}
	tx2 := spendCoinbase(t, node, 2, to)
	hex2, _ := txHex(tx2)
	r := ts.call(t, `{"method":"sendrawtransaction","params":["`+hex2+`",0.1],"id":1}`)
	if r.Error != nil || string(r.Result) != `"`+tx2.TxHash().String()+`"` {
		t.Fatalf("sendrawtransaction with maxfeerate: %s %+v", r.Result, r.Error)
	}
	r = ts.call(t, `{"method":"sendrawtransaction","params":["`+hex2+`",false],"id":1}`)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCTxRejected {
		t.Fatalf("duplicate: %+v", r.Error)
	}

	// Bad transactions.
	for body, code := range map[string]btcjson.RPCErrorCode{
		`{"method":"sendrawtransaction","params":["zz"],"id":1}`:    btcjson.ErrRPCDecodeHexString,
		`{"method":"sendrawtransaction","params":["0100"],"id":1}`:  btcjson.ErrRPCDeserialization,
		`{"method":"sendrawtransaction","params":["00",{}],"id":1}`: btcjson.ErrRPCInvalidParams.Code,
		`{"method":"getrawtransaction","params":["abc"],"id":1}`:    btcjson.ErrRPCDecodeHexString,
		`{"method":"getrawtransaction","params":[1],"id":1}`:        btcjson.ErrRPCInvalidParams.Code,
	} {
		if r := ts.call(t, body); r.Error == nil || r.Error.Code != code {
			t.Fatalf("%s: %+v, want %d", body, r.Error, code)
		}
	}
	// A double spend of tx1's input is a rule rejection.
	other, _ := newAddress(t, node)
	dbl := spendCoinbase(t, node, 1, other)
	if _, err := c.SendRawTransaction(dbl, false); rpcCode(t, err) != btcjson.ErrRPCTxRejected {
		t.Fatalf("double spend: %v", err)
	}

	// Mempool views agree with btcd's mempool.
	pool, err := c.GetRawMempool()
	if err != nil || len(pool) != 2 {
		t.Fatalf("getrawmempool %v %v", pool, err)
	}
	verbose, err := c.GetRawMempoolVerbose()
	if err != nil || len(verbose) != 2 || verbose[tx1.TxHash().String()].Size != int32(tx1.SerializeSize()) {
		t.Fatalf("getrawmempool verbose %+v %v", verbose, err)
	}
	infoRaw, err := c.RawRequest("getmempoolinfo", nil)
	var info btcjson.GetMempoolInfoResult
	if err != nil || json.Unmarshal(infoRaw, &info) != nil || info.Size != 2 ||
		info.Bytes != int64(tx1.SerializeSize()+tx2.SerializeSize()) {
		t.Fatalf("getmempoolinfo %s %v", infoRaw, err)
	}

	// getrawtransaction from the mempool.
	tx1Hash, tx2Hash := tx1.TxHash(), tx2.TxHash()
	got, err := c.GetRawTransaction(&tx1Hash)
	if err != nil || got.MsgTx().TxHash() != tx1.TxHash() {
		t.Fatalf("getrawtransaction mempool: %v", err)
	}
	gv, err := c.GetRawTransactionVerbose(&tx1Hash)
	if err != nil || gv.Confirmations != 0 || gv.BlockHash != "" || gv.Vout[0].ScriptPubKey.Address != to.EncodeAddress() ||
		gv.Vin[0].Txid == "" || gv.Vout[0].Value != btcutil.Amount(tx1.TxOut[0].Value).ToBTC() {
		t.Fatalf("getrawtransaction verbose mempool: %+v %v", gv, err)
	}

	// generate confirms both; getrawtransaction then finds them through
	// the backend's index lookup.
	hashes, err := c.Generate(1)
	if err != nil || len(hashes) != 1 {
		t.Fatalf("generate: %v %v", hashes, err)
	}
	if pool, _ := c.GetRawMempool(); len(pool) != 0 {
		t.Fatalf("mempool after mining: %v", pool)
	}
	gv, err = c.GetRawTransactionVerbose(&tx1Hash)
	if err != nil || gv.BlockHash != hashes[0].String() || gv.Confirmations != 1 || gv.Hex == "" {
		t.Fatalf("getrawtransaction verbose confirmed: %+v %v", gv, err)
	}
	got, err = c.GetRawTransaction(&tx2Hash)
	if err != nil || got.MsgTx().TxHash() != tx2.TxHash() {
		t.Fatalf("getrawtransaction confirmed: %v", err)
	}
	unknown := chainhash.Hash{3}
	if _, err := c.GetRawTransaction(&unknown); rpcCode(t, err) != btcjson.ErrRPCNoTxInfo {
		t.Fatalf("unknown tx: %v", err)
	}
}

func TestMiningMethods(t *testing.T) {
	node := newTestNode(t)
	ts := startServer(t, node, nil)
	c := ts.httpClient(t, testUser, testPass)

	hashes, err := c.Generate(3)
	if err != nil || len(hashes) != 3 {
		t.Fatalf("generate: %v %v", hashes, err)
	}
	if best := node.chain.BestSnapshot(); best.Height != 3 || best.Hash != *hashes[2] {
		t.Fatalf("tip %v/%d after generate", best.Hash, best.Height)
	}
	if _, err := c.Generate(0); rpcCode(t, err) != btcjson.ErrRPCInternal.Code {
		t.Fatalf("generate 0: %v", err)
	}

	to, _ := newAddress(t, node)
	hashes, err = c.GenerateToAddress(2, to, nil)
	if err != nil || len(hashes) != 2 {
		t.Fatalf("generatetoaddress: %v %v", hashes, err)
	}
	blk, _ := node.chain.BlockByHash(hashes[1])
	_, addrs, _, _ := txscript.ExtractPkScriptAddrs(blk.Transactions()[0].MsgTx().TxOut[0].PkScript, node.params)
	if len(addrs) != 1 || addrs[0].EncodeAddress() != to.EncodeAddress() {
		t.Fatalf("generatetoaddress paid %v, want %v", addrs, to)
	}
	mainnetAddr, _ := address.NewAddressPubKeyHash(make([]byte, 20), &chaincfg.MainNetParams)
	if _, err := c.GenerateToAddress(1, mainnetAddr, nil); rpcCode(t, err) != btcjson.ErrRPCInvalidAddressOrKey {
		t.Fatalf("generatetoaddress with another network's address: %v", err)
	}

	// submitblock: null on success (rpcclient turns any string into an
	// error), "rejected: ..." for a duplicate.
	tip, _ := node.tipBlock()
	block, err := rpctest.CreateBlock(tip, nil, 4, tip.MsgBlock().Header.Timestamp.Add(1e9), to, nil, node.params)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SubmitBlock(block, nil); err != nil {
		t.Fatalf("submitblock: %v", err)
	}
	if node.chain.BestSnapshot().Hash != *block.Hash() {
		t.Fatal("submitted block is not the tip")
	}
	err = c.SubmitBlock(block, nil)
	if err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("duplicate submitblock: %v", err)
	}
	r := ts.call(t, `{"method":"submitblock","params":["00"],"id":1}`)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCDeserialization {
		t.Fatalf("undecodable block: %+v", r.Error)
	}
}

func TestNetworkAndStatusMethods(t *testing.T) {
	node := matureNode(t)
	ts := startServer(t, node, nil)
	c := ts.httpClient(t, testUser, testPass)

	if err := c.AddNode("127.0.0.1", rpcclient.ANAdd); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNode("127.0.0.1:18444", rpcclient.ANAdd); rpcCode(t, err) != btcjson.ErrRPCInvalidParameter {
		t.Fatalf("adding the same peer twice (default port applied): %v", err)
	}
	if err := c.AddNode("10.0.0.1:1234", rpcclient.ANOneTry); err != nil {
		t.Fatal(err)
	}
	peers, err := c.GetPeerInfo()
	if err != nil || len(peers) != 2 {
		t.Fatalf("getpeerinfo %+v %v", peers, err)
	}
	if n, err := c.GetConnectionCount(); err != nil || n != 2 {
		t.Fatalf("getconnectioncount %d %v", n, err)
	}
	if err := c.AddNode("10.0.0.1:1234", rpcclient.ANRemove); err != nil {
		t.Fatal(err)
	}
	if err := c.AddNode("10.0.0.1:1234", rpcclient.ANRemove); rpcCode(t, err) != btcjson.ErrRPCInvalidParameter {
		t.Fatalf("removing an unknown peer: %v", err)
	}
	if err := c.AddNode("10.0.0.1", "bogus"); rpcCode(t, err) != btcjson.ErrRPCInvalidParameter {
		t.Fatalf("bad subcommand: %v", err)
	}

	info, err := c.GetInfo()
	best := node.chain.BestSnapshot()
	if err != nil || info.Version != DefaultVersion || info.Blocks != best.Height || info.Connections != 1 ||
		info.TestNet || info.RelayFee != 0.00001 || info.Difficulty != 1 {
		t.Fatalf("getinfo %+v %v", info, err)
	}

	want, wantErr := node.fees.EstimateFee(1)
	fee, err := c.EstimateFee(1)
	if wantErr != nil || err != nil || fee != float64(want) {
		t.Fatalf("estimatefee %v %v, estimator says %v %v", fee, err, want, wantErr)
	}
	if _, err := c.EstimateFee(0); rpcCode(t, err) != btcjson.ErrRPCInvalidParameter {
		t.Fatalf("estimatefee 0: %v", err)
	}

	up, err := c.RawRequest("uptime", nil)
	if n, convErr := json.Number(up).Int64(); err != nil || convErr != nil || n < 0 {
		t.Fatalf("uptime %s %v", up, err)
	}

	help, err := c.RawRequest("help", nil)
	var helpText string
	if err != nil || json.Unmarshal(help, &helpText) != nil || !strings.Contains(helpText, "getelectruminfo") ||
		!strings.Contains(helpText, "getblock \"hash\"") {
		t.Fatalf("help: %s %v", help, err)
	}
	help, err = c.RawRequest("help", []json.RawMessage{json.RawMessage(`"getblockcount"`)})
	if err != nil || !strings.Contains(string(help), "height of the main-chain tip") {
		t.Fatalf("help getblockcount: %s %v", help, err)
	}
	if _, err := c.RawRequest("help", []json.RawMessage{json.RawMessage(`"nosuch"`)}); rpcCode(t, err) != btcjson.ErrRPCInvalidParameter {
		t.Fatalf("help nosuch: %v", err)
	}

	ei, err := c.RawRequest(GetElectrumInfoMethod, nil)
	var got ElectrumInfo
	if err != nil || json.Unmarshal(ei, &got) != nil || got.IndexHeight != best.Height ||
		got.IndexHash != best.Hash.String() || got.Sessions != 2 || got.Subscriptions != 3 ||
		got.IndexSizeBytes != 4096 || len(got.Listeners) != 1 {
		t.Fatalf("getelectruminfo %s %v", ei, err)
	}
	if _, err := c.RawRequest(GetElectrumInfoMethod, []json.RawMessage{json.RawMessage(`1`)}); rpcCode(t, err) != btcjson.ErrRPCInvalidParams.Code {
		t.Fatalf("getelectruminfo with a parameter: %v", err)
	}

	stop, err := c.RawRequest("stop", nil)
	if err != nil || !strings.Contains(string(stop), "stopping") {
		t.Fatalf("stop %s %v", stop, err)
	}
	select {
	case <-node.stopped:
	default:
		t.Fatal("stop did not reach the backend")
	}
}

// TestElectrumInfoIsRegistered pins that btcjson knows the extension, so
// btcjson.NewCmd and rpcclient's SendCmd can build it.
func TestElectrumInfoIsRegistered(t *testing.T) {
	cmd, err := btcjson.NewCmd(GetElectrumInfoMethod)
	if err != nil {
		t.Fatal(err)
	}
	b, err := btcjson.MarshalCmd(btcjson.RpcVersion1, 1, cmd)
	if err != nil || !bytes.Contains(b, []byte(`"method":"getelectruminfo"`)) {
		t.Fatalf("%s %v", b, err)
	}
}

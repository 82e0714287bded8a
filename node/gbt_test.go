package node

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// blockFromTemplate assembles and solves (regtest proof of work) the block
// a miner builds from a coinbasetxn template.
func blockFromTemplate(t *testing.T, tmpl *btcjson.GetBlockTemplateResult) *wire.MsgBlock {
	t.Helper()
	decode := func(h string) *wire.MsgTx {
		raw, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		var tx wire.MsgTx
		if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
			t.Fatal(err)
		}
		return &tx
	}
	if tmpl.CoinbaseTxn == nil {
		t.Fatal("no coinbase transaction in the template")
	}
	txs := []*wire.MsgTx{decode(tmpl.CoinbaseTxn.Data)}
	for _, tx := range tmpl.Transactions {
		txs = append(txs, decode(tx.Data))
	}
	prev, err := chainhash.NewHashFromStr(tmpl.PreviousHash)
	if err != nil {
		t.Fatal(err)
	}
	bits, err := strconv.ParseUint(tmpl.Bits, 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	utxs := make([]*btcutil.Tx, len(txs))
	for i, tx := range txs {
		utxs[i] = btcutil.NewTx(tx)
	}
	block := &wire.MsgBlock{Header: wire.BlockHeader{
		Version: tmpl.Version, PrevBlock: *prev, MerkleRoot: blockchain.CalcMerkleRoot(utxs, false),
		Timestamp: time.Unix(tmpl.CurTime, 0), Bits: uint32(bits),
	}, Transactions: txs}
	target := blockchain.CompactToBig(block.Header.Bits)
	for blockchain.HashToBig(ptr(block.Header.BlockHash())).Cmp(target) > 0 {
		block.Header.Nonce++
	}
	return block
}

// ptr returns a pointer to h.
func ptr(h chainhash.Hash) *chainhash.Hash { return &h }

// TestGetBlockTemplate mines with getblocktemplate as a pool server does:
// the template on the tip holds the mempool's transaction and a coinbase
// paying the mining address; the block built from it passes proposal mode
// and submitblock; a long poll with the template's id returns when a block
// is found elsewhere, with a template on the new tip; a coinbasevalue client
// gets the value instead of a coinbase.
func TestGetBlockTemplate(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir(), false))
	if _, err := n.Generate(101, nil); err != nil {
		t.Fatal(err)
	}
	spend := spendCoinbase(t, n, 1, 10_000)
	if _, err := n.ProcessTx(spend); err != nil {
		t.Fatal(err)
	}
	c := rpcClient(t, n.RPCAddrs()[0].String())
	tip := n.Chain().BestSnapshot()

	req := &btcjson.TemplateRequest{Capabilities: []string{"coinbasetxn", "longpoll"}, Rules: []string{"segwit"}}
	tmpl, err := c.GetBlockTemplate(req)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Height != int64(tip.Height)+1 || tmpl.PreviousHash != tip.Hash.String() ||
		len(tmpl.Transactions) != 1 || tmpl.Transactions[0].TxID != spend.Hash().String() ||
		tmpl.Transactions[0].Fee != 10_000 || tmpl.CoinbaseValue != nil || tmpl.LongPollID == "" {
		t.Fatalf("template %+v", tmpl)
	}
	block := blockFromTemplate(t, tmpl)
	var buf bytes.Buffer
	if err := block.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	propose := func(data string) json.RawMessage {
		t.Helper()
		p, _ := json.Marshal(map[string]string{"mode": "proposal", "data": data})
		r, err := c.RawRequest("getblocktemplate", []json.RawMessage{p})
		if err != nil {
			t.Fatalf("proposal: %v", err)
		}
		return r
	}
	if r := propose(hex.EncodeToString(buf.Bytes())); string(r) != "null" {
		t.Fatalf("proposal of the template's block: %s", r)
	}
	bad := *block
	bad.Header.PrevBlock = chainhash.Hash{1}
	var badBuf bytes.Buffer
	_ = bad.Serialize(&badBuf)
	if r := propose(hex.EncodeToString(badBuf.Bytes())); string(r) != `"bad-prevblk"` {
		t.Fatalf("proposal on another parent: %s", r)
	}
	if err := c.SubmitBlock(btcutil.NewBlock(block), nil); err != nil {
		t.Fatalf("submitblock: %v", err)
	}
	if best := n.Chain().BestSnapshot(); best.Hash != block.BlockHash() {
		t.Fatalf("tip %v after submitting %v", best.Hash, block.BlockHash())
	}

	// Long poll: the answer comes when the tip moves.
	tmpl, err = c.GetBlockTemplate(req)
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan *btcjson.GetBlockTemplateResult, 1)
	pollErr := make(chan error, 1)
	go func() {
		r, err := c.GetBlockTemplate(&btcjson.TemplateRequest{Capabilities: req.Capabilities,
			Rules: req.Rules, LongPollID: tmpl.LongPollID})
		if err != nil {
			pollErr <- err
			return
		}
		polled <- r
	}()
	waitFor(t, "the long poll to wait", func() bool { return n.srv.rpc.LongPolls() == 1 })
	hashes, err := n.Generate(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-polled:
		if r.PreviousHash != hashes[0].String() || r.SubmitOld == nil || *r.SubmitOld {
			t.Fatalf("long poll answered %+v", r)
		}
	case err := <-pollErr:
		t.Fatalf("long poll: %v", err)
	case <-time.After(testWait):
		t.Fatal("the long poll did not return after a block")
	}

	// A coinbasevalue client.
	v, err := c.GetBlockTemplate(&btcjson.TemplateRequest{Capabilities: []string{"coinbasevalue"}})
	if err != nil || v.CoinbaseValue == nil || *v.CoinbaseValue != 50*btcutil.SatoshiPerBitcoin || v.CoinbaseTxn != nil {
		t.Fatalf("coinbasevalue template %+v %v", v, err)
	}
}

package electrum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"github.com/btcsuite/btcd/chainhash/v2"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestProofsInReorgWindow: while btcd has reorganized and the index has
// yet to undo its tip, every proof and header a wallet gets is of the
// index's chain, one consistent chain; after the undo, of the new chain.
func TestProofsInReorgWindow(t *testing.T) {
	n := newRealNode(t, 0, proofUnthrottled)
	c := dial(t, n.addr)
	c.negotiate([]string{"1.4", "1.6"})
	if _, err := n.h.MineEmpty(200); err != nil {
		t.Fatal(err)
	}
	var txs []*wire.MsgTx
	for i := 0; i < 4; i++ {
		coin := n.coin()
		txs = append(txs, testchain.SpendTx([]testchain.Coin{coin}, wire.NewTxOut(coin.Value-10_000, p2wpkh(byte(0x40+i)))))
	}
	parent := n.mine(nil)
	n.hold()
	a := n.process(parent, time.Second, txs...)
	<-n.held
	b1 := n.process(parent, 2*time.Second)
	n.process(b1, time.Second)

	check := func(label string) {
		t.Helper()
		hashes := chainHashesOfServer(t, c)
		tip := len(hashes) - 1
		for _, cp := range []int{tip, tip - 1} {
			for _, h := range []int{0, cp - 1, cp} {
				checkHeaderProof(t, c, hashes, h, cp)
			}
		}
		checkHeaderAnswers(t, c, hashes, tip-150, 151, tip)
		checkHeaderAnswers(t, c, hashes, tip-150, 151, 0)
	}
	check("window")
	checkBlockProofs(t, c, a, a.Height())
	n.release()
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	check("after")
	for _, tx := range txs {
		if _, rerr := c.call("blockchain.transaction.get_merkle", tx.TxHash().String(), a.Height()); rerr == nil {
			t.Fatalf("tx %s of the replaced block still proved at %d", tx.TxHash(), a.Height())
		}
		var v map[string]json.RawMessage
		c.must(&v, "blockchain.transaction.get", tx.TxHash().String(), true)
		if _, ok := v["blockhash"]; ok {
			t.Fatalf("tx %s of the replaced block still confirmed: %s", tx.TxHash(), v["blockhash"])
		}
	}
}

// chainHashesOfServer reads the server's chain through block.headers
// (the chain a wallet sees), checking that each header links to the one
// before.
func chainHashesOfServer(t *testing.T, c *testClient) []chainhashHash {
	t.Helper()
	var out []chainhashHash
	for start := 0; ; start += 2016 {
		var res struct {
			Count   int      `json:"count"`
			Headers []string `json:"headers"`
		}
		c.must(&res, "blockchain.block.headers", start, 2016)
		for _, h := range res.Headers {
			var hdr wire.BlockHeader
			raw := mustHex(t, h)
			if err := hdr.Deserialize(bytesReader(raw)); err != nil {
				t.Fatal(err)
			}
			if len(out) > 0 && hdr.PrevBlock != out[len(out)-1] {
				t.Fatalf("header %d does not link", len(out))
			}
			out = append(out, hdr.BlockHash())
		}
		if res.Count < 2016 {
			return out
		}
	}
}

type chainhashHash = chainhash.Hash

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

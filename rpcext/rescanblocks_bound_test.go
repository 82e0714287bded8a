package rpcext

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/gorilla/websocket"
)

// fetchCountingChain counts the blocks read from the chain.
type fetchCountingChain struct {
	*blockchain.BlockChain
	fetched atomic.Int32
}

func (c *fetchCountingChain) BlockByHash(h *chainhash.Hash) (*btcutil.Block, error) {
	c.fetched.Add(1)
	return c.BlockChain.BlockByHash(h)
}

// rescanblocks gathers the matches of up to 10,000 blocks into one answer:
// it counts their bytes as it gathers them and answers an error once past
// the bound on an answer, rather than building an answer of any size first
// (and, over the bound, losing it). 60 blocks of 0.9 MB paying the
// filter's address would make a 108 MB answer; the blocks read before the
// error hold no more than the bound and one block's matches.
func TestRescanBlocksAnswerBounded(t *testing.T) {
	node := newTestNode(t)
	const blocks = 60
	if _, err := node.Generate(uint32(node.params.CoinbaseMaturity)+blocks, nil); err != nil {
		t.Fatal(err)
	}
	watched, _ := newAddress(t, node)
	hashes := mineBig(t, node, blocks, watched)
	chain := &fetchCountingChain{BlockChain: node.chain}
	ts := startServer(t, node, func(c *Config) { c.DisableTLS = true; c.Chain = chain })

	h := http.Header{}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(testUser, testPass)
	h.Set("Authorization", req.Header.Get("Authorization"))
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+ts.addr+"/ws", h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	call := func(body string) reply {
		t.Helper()
		if err := conn.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(2 * time.Minute)) // a hang guard
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("no answer to %.80s...: %v", body, err)
			}
			var r reply
			if json.Unmarshal(msg, &r) == nil && len(r.ID) > 0 && string(r.ID) != "null" {
				return r
			}
		}
	}
	if r := call(fmt.Sprintf(`{"jsonrpc":"1.0","method":"loadtxfilter","params":[true,["%s"],[]],"id":1}`,
		watched.EncodeAddress())); r.Error != nil {
		t.Fatalf("loadtxfilter: %+v", r.Error)
	}
	quoted := make([]string, len(hashes))
	for i, hsh := range hashes {
		quoted[i] = `"` + hsh.String() + `"`
	}
	chain.fetched.Store(0)
	r := call(`{"jsonrpc":"1.0","method":"rescanblocks","params":[[` + strings.Join(quoted, ",") + `]],"id":2}`)
	fetched := int(chain.fetched.Load())
	t.Logf("rescanblocks of %d blocks: %d read before the answer", len(hashes), fetched)
	if r.Error == nil || r.Error.Code != btcjson.ErrRPCInvalidRequest.Code ||
		!strings.Contains(r.Error.Message, "response too large") {
		t.Fatalf("rescanblocks of %d blocks of 0.9 MB: error %+v (result of %d bytes), want -32600 response too large",
			len(hashes), r.Error, len(r.Result))
	}
	// Each block matches one transaction of more than 2*bigTxBytes in hex.
	if most := maxAnswerBytes/(2*bigTxBytes) + 1; fetched > most {
		t.Fatalf("rescanblocks read %d blocks, with %d MB of matches, before its error; want at most %d "+
			"(the %d-byte bound and one block)", fetched, fetched*2*bigTxBytes/1_000_000, most, maxAnswerBytes)
	}
	// The client is still served.
	if r := call(`{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":3}`); r.Error != nil {
		t.Fatalf("getblockcount after the refused rescanblocks: %+v", r.Error)
	}
}

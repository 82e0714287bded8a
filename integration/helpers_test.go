package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"

	"github.com/btcd-electrum/btcd-electrum/node"
)

// testWait bounds each test's waits (a hang guard, not a timing
// assertion).
const testWait = 2 * time.Minute

func TestMain(m *testing.M) {
	// In-process nodes copy their log to stdout only when NODE_TEST_LOG
	// asks for it (and at its level).
	if lvl := os.Getenv("NODE_TEST_LOG"); lvl != "" {
		_ = node.SetLogLevels(lvl)
		LogStdout = true
	}
	code := m.Run()
	RemoveBinaries()
	os.Exit(code)
}

// testContext returns a context that ends after testWait or with the test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}

// headerHex returns the serialized header of the block at height on c's
// main chain.
func headerHex(t *testing.T, c *rpcclient.Client, height int32) string {
	t.Helper()
	hash, err := c.GetBlockHash(int64(height))
	if err != nil {
		t.Fatalf("getblockhash %d: %v", height, err)
	}
	h, err := c.GetBlockHeader(hash)
	if err != nil {
		t.Fatalf("getblockheader %v: %v", hash, err)
	}
	var buf bytes.Buffer
	if err := h.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(buf.Bytes())
}

// waitSameTip waits until every client reports the same best block as
// want and returns its hash and height.
func waitSameTip(t *testing.T, ctx context.Context, want *rpcclient.Client, others ...*rpcclient.Client) (*chainhash.Hash, int32) {
	t.Helper()
	var hash *chainhash.Hash
	var height int32
	WaitFor(t, ctx, "the nodes to reach the same tip", func() bool {
		var err error
		hash, height, err = want.GetBestBlock()
		if err != nil {
			return false
		}
		for _, c := range others {
			h, _, err := c.GetBestBlock()
			if err != nil || *h != *hash {
				return false
			}
		}
		return true
	})
	return hash, height
}

// checkHeaders checks that blockchain.block.header at every height up to
// tip equals the serialized header the reference node returns.
func checkHeaders(t *testing.T, ctx context.Context, ec *ElectrumClient, ref *rpcclient.Client, tip int32) {
	t.Helper()
	for h := int32(0); h <= tip; h++ {
		got, err := ec.BlockHeader(ctx, h)
		if err != nil {
			t.Fatalf("blockchain.block.header %d: %v", h, err)
		}
		if want := headerHex(t, ref, h); got != want {
			t.Fatalf("blockchain.block.header %d = %s, btcd has %s", h, got, want)
		}
	}
}

// checkStatus checks that a notified (or subscribed) status equals the one
// computed from the server's own get_history, and returns that history.
func checkStatus(t *testing.T, ctx context.Context, ec *ElectrumClient, sh string, status *string) []HistoryItem {
	t.Helper()
	hist, err := ec.GetHistory(ctx, sh)
	if err != nil {
		t.Fatalf("get_history %s: %v", sh, err)
	}
	if want := Status(hist); !reflect.DeepEqual(status, want) {
		t.Fatalf("status of %s is %v, get_history %+v gives %v", sh, str(status), hist, str(want))
	}
	return hist
}

// str prints an optional status.
func str(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// withoutFees drops the fee fields so histories compare by txid and height.
func withoutFees(h []HistoryItem) []HistoryItem {
	out := make([]HistoryItem, len(h))
	for i, it := range h {
		out[i] = HistoryItem{TxHash: it.TxHash, Height: it.Height}
	}
	return out
}

// checkMerkle checks get_merkle of a confirmed transaction against the
// merkle root of the header Electrum serves at its height and the header
// the reference node has there.
func checkMerkle(t *testing.T, ctx context.Context, ec *ElectrumClient, ref *rpcclient.Client, txid string, height int32) {
	t.Helper()
	m, err := ec.GetMerkle(ctx, txid, height)
	if err != nil {
		t.Fatalf("get_merkle %s: %v", txid, err)
	}
	if m.BlockHeight != height {
		t.Fatalf("get_merkle block_height %d, want %d", m.BlockHeight, height)
	}
	root, err := MerkleRoot(txid, m.Merkle, m.Pos)
	if err != nil {
		t.Fatal(err)
	}
	hexHeader, err := ec.BlockHeader(ctx, height)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := DecodeHeader(hexHeader)
	if err != nil {
		t.Fatal(err)
	}
	if root != hdr.MerkleRoot {
		t.Fatalf("get_merkle proves root %v, the header at %d has %v", root, height, hdr.MerkleRoot)
	}
	if want := headerHex(t, ref, height); want != hexHeader {
		t.Fatalf("header at %d differs from btcd's", height)
	}
}

package electrum

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// proofStallNode is a real node serving through hashStall (the node's real
// backend, whose first read of one height waits for the test), with a
// chain of 2,050 blocks (tip 2049).
func proofStallNode(t *testing.T) (*realNode, *hashStall, *testClient) {
	t.Helper()
	var sb *hashStall
	n := newRealNodeServing(t, 0, proofUnthrottled, func(b *IndexBackend) Backend {
		sb = &hashStall{IndexBackend: b, stalled: make(chan struct{}, 1), resume: make(chan struct{})}
		return sb
	})
	t.Cleanup(func() {
		select {
		case <-sb.resume:
		default:
			close(sb.resume)
		}
	})
	_, tip := n.h.Tip()
	if _, err := n.h.MineEmpty(2049 - int(tip)); err != nil {
		t.Fatal(err)
	}
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, n.addr)
	c.negotiate([]string{"1.4", "1.6"})
	return n, sb, c
}

// reorgDuringProof sends method(params) with the first read of height
// 2048 stalled (a read only the cp_height proof makes), reorganizes the
// chain 5 blocks deep (2045..2049 replaced, 2050 added) while it waits,
// and returns the answer.
func reorgDuringProof(t *testing.T, n *realNode, sb *hashStall, c *testClient, method string, params ...any) rpcResponse {
	t.Helper()
	sb.mu.Lock()
	sb.at, sb.armed = 2048, true
	sb.mu.Unlock()
	ch := c.start(method, params...)
	select {
	case <-sb.stalled:
	case <-time.After(60 * time.Second):
		t.Fatal("the proof never read height 2048")
	}
	if _, err := n.h.Reorg(newRand(11), 5, testchain.BlockSpec{}); err != nil {
		t.Fatal(err)
	}
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	close(sb.resume)
	r := c.await(ch)
	if r.Error != nil {
		t.Fatalf("%s: %v", method, r.Error)
	}
	return r
}

// answerProves reports whether the branch and root of an answer prove the
// header (hex) at height, as an Electrum client checks a cp_height answer
// (the protocol's point of cp_height, PROTOCOL.md §4.5: the header's hash
// folded with the branch must give the root).
func answerProves(t *testing.T, headerHex string, height int, branch []string, root string) (chainhash.Hash, bool) {
	t.Helper()
	var hdr wire.BlockHeader
	if err := hdr.Deserialize(bytesReader(mustHex(t, headerHex))); err != nil {
		t.Fatal(err)
	}
	got := foldBranch(t, hdr.BlockHash(), branch, height)
	return got, got.String() == root
}

// TestHeaderProofMatchesHeader: blockchain.block.header with cp_height
// reads the header, then the proof. A reorganization between the two is
// caught inside the proof (linkedHashes: read again, on the new chain),
// but the header already read, of the old chain, is still sent with that
// proof: the answer's own branch and root do not prove its header, and a
// client checking it against its checkpoint (the point of cp_height)
// rejects the server. The proof
// and the header of one answer must be of one chain (the commit's rule:
// "the hashes of one proof must link, else it is read again").
func TestHeaderProofMatchesHeader(t *testing.T) {
	n, sb, c := proofStallNode(t)
	r := reorgDuringProof(t, n, sb, c, "blockchain.block.header", 2047, 2049)
	var p proofResult
	if err := json.Unmarshal(r.Result, &p); err != nil {
		t.Fatal(err)
	}
	if got, ok := answerProves(t, p.Header, 2047, p.Branch, p.Root); !ok {
		t.Errorf("block.header(2047, 2049) racing a reorganization: the branch folds the header's hash to %s, "+
			"not the answer's root %s: header and proof are of two chains", got, p.Root)
	}
}

// TestHeadersProofMatchesLastHeader: the same for blockchain.block.headers
// with cp_height, whose proof is of the range's last header (PROTOCOL.md:
// "the branch and root ... of the last header in the range").
func TestHeadersProofMatchesLastHeader(t *testing.T) {
	n, sb, c := proofStallNode(t)
	r := reorgDuringProof(t, n, sb, c, "blockchain.block.headers", 2040, 8, 2049)
	var res struct {
		Count   int      `json:"count"`
		Headers []string `json:"headers"`
		Branch  []string `json:"branch"`
		Root    string   `json:"root"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.Count != 8 || len(res.Headers) != 8 {
		t.Fatalf("count %d, %d headers", res.Count, len(res.Headers))
	}
	if got, ok := answerProves(t, res.Headers[7], 2047, res.Branch, res.Root); !ok {
		t.Errorf("block.headers(2040, 8, 2049) racing a reorganization: the branch folds the last header's hash to %s, "+
			"not the answer's root %s: headers and proof are of two chains", got, res.Root)
	}
}

package electrum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/bits"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/internal/testchain"
	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// foldBranch folds a branch (display-hex siblings, deepest first) onto leaf
// at index as an Electrum client does (electrum/verifier.py
// hash_merkle_root): computed here, not with the server's code.
func foldBranch(t *testing.T, leaf chainhash.Hash, branch []string, index int) chainhash.Hash {
	t.Helper()
	h := leaf
	for _, s := range branch {
		sib, err := chainhash.NewHashFromStr(s)
		if err != nil || len(s) != 64 {
			t.Fatalf("branch element %q: %v", s, err)
		}
		var buf [64]byte
		if index&1 == 1 {
			copy(buf[:32], sib[:])
			copy(buf[32:], h[:])
		} else {
			copy(buf[:32], h[:])
			copy(buf[32:], sib[:])
		}
		h = chainhash.DoubleHashH(buf[:])
		index >>= 1
	}
	if index != 0 {
		t.Fatalf("branch of %d hashes too short for the index", len(branch))
	}
	return h
}

// branchFromStore reads the branch of leaf pos out of btcd's merkle tree
// store (blockchain.BuildMerkleTreeStore): the expected answer exactly,
// display hex, deepest first.
func branchFromStore(store []*chainhash.Hash, n, pos int) []string {
	width := 1 << bits.Len(uint(n-1))
	if n == 1 {
		return []string{}
	}
	var out []string
	offset := 0
	for w := width; w > 1; w /= 2 {
		sib := store[offset+(pos^1)]
		if sib == nil { // btcd leaves the missing right sibling nil: itself
			sib = store[offset+pos]
		}
		out = append(out, sib.String())
		offset += w
		pos >>= 1
	}
	return out
}

// exBranchAndRoot is ElectrumX's lib/merkle.py Merkle.branch_and_root
// transcribed: the header proof a cp_height answer must equal.
func exBranchAndRoot(hashes []chainhash.Hash, index int) ([]string, string) {
	hs := append([]chainhash.Hash(nil), hashes...)
	length := bits.Len(uint(len(hs) - 1)) // ceil(log2(n))
	branch := []string{}
	for i := 0; i < length; i++ {
		if len(hs)&1 == 1 {
			hs = append(hs, hs[len(hs)-1])
		}
		branch = append(branch, hs[index^1].String())
		index >>= 1
		next := make([]chainhash.Hash, len(hs)/2)
		for j := range next {
			var buf [64]byte
			copy(buf[:32], hs[2*j][:])
			copy(buf[32:], hs[2*j+1][:])
			next[j] = chainhash.DoubleHashH(buf[:])
		}
		hs = next
	}
	return branch, hs[0].String()
}

// proofUnthrottled turns cost throttling off: the tests ask many questions.
func proofUnthrottled(c *Config) { c.CostHardLimit = -1 }

func sameHashes(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// mineExact mines a block of exactly k transactions (coinbase included)
// on the tip with the harness wallet and waits for the index.
func mineExact(t *testing.T, n *realNode, rng interface{ Intn(int) int }, k int) *btcutil.Block {
	t.Helper()
	spec := testchain.BlockSpec{Txs: k - 1, MaxInputs: 1, MaxOutputs: 3, SameBlockSpend: 0.5, MaxFee: 200}
	b, err := n.h.Mine(newRand(int64(k)), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := len(b.Transactions()); got != k {
		t.Fatalf("mined %d transactions, want %d", got, k)
	}
	return b
}

// TestMerkleProofsEveryPosition checks get_merkle and id_from_pos for
// every position of blocks of many sizes against btcd's own merkle tree
// and each block's header merkle root.
func TestMerkleProofsEveryPosition(t *testing.T) {
	n := newRealNode(t, 0, proofUnthrottled)
	c := dial(t, n.addr)
	c.negotiate([]string{"1.4", "1.6"})
	for _, k := range []int{1, 2, 3, 5, 7, 8, 9, 31, 32, 33, 63, 64, 65, 97, 300, 1500} {
		b := mineExact(t, n, nil, k)
		height := b.Height()
		store := blockchain.BuildMerkleTreeStore(b.Transactions(), false)
		if *store[len(store)-1] != b.MsgBlock().Header.MerkleRoot {
			t.Fatal("btcd's tree does not give the header's root")
		}
		// The header the server serves for the height.
		var hdrHex string
		c.must(&hdrHex, "blockchain.block.header", height)
		raw, _ := hex.DecodeString(hdrHex)
		if len(raw) != 80 || chainhash.DoubleHashH(raw) != *b.Hash() {
			t.Fatalf("k=%d: header at %d is not the block's", k, height)
		}
		root := b.MsgBlock().Header.MerkleRoot
		for pos, tx := range b.Transactions() {
			want := branchFromStore(store, k, pos)
			var m struct {
				BlockHeight *int32    `json:"block_height"`
				Merkle      *[]string `json:"merkle"`
				Pos         *int      `json:"pos"`
			}
			c.must(&m, "blockchain.transaction.get_merkle", tx.Hash().String(), height)
			if m.BlockHeight == nil || *m.BlockHeight != height || m.Pos == nil || *m.Pos != pos || m.Merkle == nil {
				t.Fatalf("k=%d pos=%d: answer %+v", k, pos, m)
			}
			if !sameHashes(*m.Merkle, want) {
				t.Fatalf("k=%d pos=%d: merkle %v, btcd's tree %v", k, pos, *m.Merkle, want)
			}
			if foldBranch(t, *tx.Hash(), *m.Merkle, pos) != root {
				t.Fatalf("k=%d pos=%d: branch does not fold to the header's root", k, pos)
			}
			var id string
			c.must(&id, "blockchain.transaction.id_from_pos", height, pos)
			if id != tx.Hash().String() {
				t.Fatalf("k=%d pos=%d: id_from_pos %s", k, pos, id)
			}
			var rawTx string
			c.must(&rawTx, "blockchain.transaction.get", id)
			var txb bytes.Buffer
			tx.MsgTx().Serialize(&txb)
			if rawTx != hex.EncodeToString(txb.Bytes()) {
				t.Fatalf("k=%d pos=%d: transaction.get bytes differ", k, pos)
			}
			var idm map[string]json.RawMessage
			c.must(&idm, "blockchain.transaction.id_from_pos", height, pos, true)
			var txh string
			var br []string
			json.Unmarshal(idm["tx_hash"], &txh)
			json.Unmarshal(idm["merkle"], &br)
			if len(idm) != 2 || txh != tx.Hash().String() || !sameHashes(br, want) {
				t.Fatalf("k=%d pos=%d: id_from_pos merkle %v", k, pos, idm)
			}
		}
		// Past the last position, and a wrong height.
		if _, rerr := c.call("blockchain.transaction.id_from_pos", height, k); rerr == nil || rerr.Code != codeBadRequest {
			t.Fatalf("k=%d: id_from_pos past the end: %v", k, rerr)
		}
		if _, rerr := c.call("blockchain.transaction.get_merkle", b.Transactions()[k-1].Hash().String(), height-1); rerr == nil || rerr.Code != codeBadRequest {
			t.Fatalf("k=%d: get_merkle at a wrong height: %v", k, rerr)
		}
	}
}

// chainHashes returns the main chain's block hashes, heights 0..tip, read
// from btcd's chain.
func chainHashes(t *testing.T, n *realNode) []chainhash.Hash {
	t.Helper()
	_, tip := n.h.Tip()
	out := make([]chainhash.Hash, 0, tip+1)
	for h := int32(0); h <= tip; h++ {
		bh, err := n.h.Chain.BlockHashByHeight(h)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *bh)
	}
	return out
}

// checkHeaderProof asks block.header(height, cp) and compares it with
// ElectrumX's branch_and_root over the chain's block hashes.
func checkHeaderProof(t *testing.T, c *testClient, hashes []chainhash.Hash, height, cp int) {
	t.Helper()
	var p struct {
		Branch *[]string `json:"branch"`
		Header string    `json:"header"`
		Root   string    `json:"root"`
	}
	c.must(&p, "blockchain.block.header", height, cp)
	raw, _ := hex.DecodeString(p.Header)
	wantBr, wantRoot := exBranchAndRoot(hashes[:cp+1], height)
	if len(raw) != 80 || chainhash.DoubleHashH(raw) != hashes[height] {
		t.Fatalf("block.header(%d, %d): header is not the chain's", height, cp)
	}
	if p.Branch == nil || !sameHashes(*p.Branch, wantBr) || p.Root != wantRoot {
		t.Fatalf("block.header(%d, %d): branch %v root %s, ElectrumX %v %s", height, cp, p.Branch, p.Root, wantBr, wantRoot)
	}
}

// checkHeaderAnswers asks block.headers(start, count, cp) at protocol 1.6 and
// checks count, headers, max and the proof of the last header.
func checkHeaderAnswers(t *testing.T, c *testClient, hashes []chainhash.Hash, start, count, cp int) {
	t.Helper()
	tip := len(hashes) - 1
	want := count
	if want > 2016 {
		want = 2016
	}
	if start > tip {
		want = 0
	} else if start+want-1 > tip {
		want = tip - start + 1
	}
	var res map[string]json.RawMessage
	c.must(&res, "blockchain.block.headers", start, count, cp)
	var gotCount, gotMax int
	var hs []string
	json.Unmarshal(res["count"], &gotCount)
	json.Unmarshal(res["max"], &gotMax)
	json.Unmarshal(res["headers"], &hs)
	if gotCount != want || len(hs) != want || gotMax != 2016 {
		t.Fatalf("block.headers(%d, %d, %d): count %d, %d headers, max %d; want %d", start, count, cp, gotCount, len(hs), gotMax, want)
	}
	for i, h := range hs {
		raw, _ := hex.DecodeString(h)
		if len(raw) != 80 || chainhash.DoubleHashH(raw) != hashes[start+i] {
			t.Fatalf("block.headers(%d, %d, %d): header %d is not the chain's", start, count, cp, start+i)
		}
	}
	_, hasBranch := res["branch"]
	_, hasRoot := res["root"]
	if want == 0 || cp == 0 {
		if hasBranch || hasRoot {
			t.Fatalf("block.headers(%d, %d, %d): proof without headers", start, count, cp)
		}
		return
	}
	var br []string
	var root string
	json.Unmarshal(res["branch"], &br)
	json.Unmarshal(res["root"], &root)
	wantBr, wantRoot := exBranchAndRoot(hashes[:cp+1], start+want-1)
	if !sameHashes(br, wantBr) || root != wantRoot {
		t.Fatalf("block.headers(%d, %d, %d): proof differs from ElectrumX's", start, count, cp)
	}
}

// TestHeaderProofs checks cp_height proofs of block.header and
// block.headers on a chain past two 1,024-block chunks, before and after
// a reorganization.
func TestHeaderProofs(t *testing.T) {
	n := newRealNode(t, 0, proofUnthrottled)
	if _, err := n.h.MineEmpty(2100 - int(n.srv.backend.(*IndexBackend).mustTip(t))); err != nil {
		t.Fatal(err)
	}
	if err := n.idx.Sync(); err != nil {
		t.Fatal(err)
	}
	c := dial(t, n.addr)
	c.negotiate([]string{"1.4", "1.6"})
	check := func() {
		hashes := chainHashes(t, n)
		tip := len(hashes) - 1
		for _, cp := range []int{1, 2, 3, 1022, 1023, 1024, 1025, 2046, 2047, 2048, 2049, tip - 1, tip} {
			for _, h := range []int{0, 1, cp - 1, cp, cp / 2, 1023, 1024, 1025, 2047, 2048, tip - 3} {
				if h < 0 || h > cp {
					continue
				}
				checkHeaderProof(t, c, hashes, h, cp)
			}
		}
		for _, q := range [][3]int{
			{0, 1, 1}, {0, 2016, 2047}, {0, 3000, tip}, {50, 2016, 2080}, {100, 2016, tip}, {tip - 5, 10, tip},
			{tip - 5, 3, tip - 1}, {1020, 10, 1100}, {tip + 1, 5, tip}, {tip, 1, tip}, {2000, 200, tip},
			{tip - 200, 150, tip}, {tip - 200, 300, tip},
		} {
			checkHeaderAnswers(t, c, hashes, q[0], q[1], q[2])
		}
		// Errors: a checkpoint below the last header, or past the tip.
		for _, q := range [][3]int{{tip - 5, 10, tip - 1}, {0, 10, tip + 1}} {
			if _, rerr := c.call("blockchain.block.headers", q[0], q[1], q[2]); rerr == nil || rerr.Code != codeBadRequest {
				t.Fatalf("block.headers%v: %v, want bad request", q, rerr)
			}
		}
		if _, rerr := c.call("blockchain.block.header", tip+1, 0); rerr == nil || rerr.Code != codeBadRequest {
			t.Fatalf("block.header past the tip: %v", rerr)
		}
		if _, rerr := c.call("blockchain.block.header", 5, tip+1); rerr == nil || rerr.Code != codeBadRequest {
			t.Fatalf("block.header cp past the tip: %v", rerr)
		}
	}
	check()
	// Protocol 1.4: the concatenated hex form, with a proof and cached.
	c14 := dial(t, n.addr)
	c14.negotiate("1.4")
	for _, q := range [][3]int{{1900, 150, 2100}, {1900, 150, 2100}, {1900, 150, 0}} {
		hashes := chainHashes(t, n)
		var res struct {
			Count  int      `json:"count"`
			Hex    string   `json:"hex"`
			Max    int      `json:"max"`
			Branch []string `json:"branch"`
			Root   string   `json:"root"`
		}
		c14.must(&res, "blockchain.block.headers", q[0], q[1], q[2])
		raw, _ := hex.DecodeString(res.Hex)
		if res.Count != q[1] || len(raw) != 80*q[1] || res.Max != 2016 {
			t.Fatalf("1.4 headers%v: count %d, %d bytes", q, res.Count, len(raw))
		}
		for i := 0; i < q[1]; i++ {
			if chainhash.DoubleHashH(raw[80*i:80*i+80]) != hashes[q[0]+i] {
				t.Fatalf("1.4 headers%v: header %d differs", q, i)
			}
		}
		if q[2] > 0 {
			wb, wr := exBranchAndRoot(hashes[:q[2]+1], q[0]+q[1]-1)
			if !sameHashes(res.Branch, wb) || res.Root != wr {
				t.Fatalf("1.4 headers%v: proof differs", q)
			}
		}
	}
	// A reorganization replacing the last blocks, the checkpoint chunk's
	// last block among them.
	for _, depth := range []int{3, 60} {
		if _, err := n.h.Reorg(newRand(int64(depth)), depth, testchain.BlockSpec{}); err != nil {
			t.Fatal(err)
		}
		if err := n.idx.Sync(); err != nil {
			t.Fatal(err)
		}
		check()
	}
}

func (b *IndexBackend) mustTip(t *testing.T) int32 {
	t.Helper()
	tip, err := b.ChainTip()
	if err != nil {
		t.Fatal(err)
	}
	return tip.Height
}

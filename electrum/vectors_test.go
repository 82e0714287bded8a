package electrum

import (
	"encoding/hex"
	"fmt"
	"math/rand"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// mustHash parses a display-hex hash.
func mustHash(t testing.TB, s string) chainhash.Hash {
	t.Helper()
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		t.Fatal(err)
	}
	return *h
}

// TestStatusSpecExample pins the status example of the protocol docs
// (docs/PROTOCOL.md §4.2): confirmed entries in chain order, then mempool entries
// in canonical order, single SHA-256, not reversed.
func TestStatusSpecExample(t *testing.T) {
	confirmed := []struct {
		txid   string
		height int32
	}{
		{"a6c9c361bd0bc536d6a22648efbf8f9b200e425ef6c3a7a9669dc444c532a347", 2472},
		{"9c42f84b2fcdaff676ba25d9d4941741cc0d1a01cce0c23fdc4c0b2afa38431c", 2473},
		{"770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30", 2473},
	}
	// Deliberately out of order: sortMempool must restore (-height, txid).
	mempool := []MempoolEntry{
		{TxHash: mustHash(t, "bb4c8ab438c13b89ca80d1d5bee25b0b6b7f55673f4d801998ba97db161d9e85"), Height: -1, Fee: 200},
		{TxHash: mustHash(t, "e02a1dadfa83b996b24175df807b271ea5d02937ef5b35c195fac1e1bdc3198f"), Height: 0, Fee: 300},
		{TxHash: mustHash(t, "80b19848aed792565ab7c5a79b7c2a00fbf985741579396ebe0ab6098e607311"), Height: 0, Fee: 200},
	}
	sortMempool(mempool)
	wantOrder := []string{"80b19848", "e02a1dad", "bb4c8ab4"}
	for i, e := range mempool {
		if got := e.TxHash.String()[:8]; got != wantOrder[i] {
			t.Fatalf("mempool order[%d] = %s, want %s", i, got, wantOrder[i])
		}
	}
	d := indexers.NewStatusHasher()
	for _, c := range confirmed {
		d.Add(mustHash(t, c.txid), c.height)
	}
	for _, e := range mempool {
		d.Add(e.TxHash, e.Height)
	}
	if got := *statusHex(d.Sum()); got != "78e96c6562cafa71c115503b9411fdfdc595a45031e2ab76ff75162fe1b0590d" {
		t.Fatalf("status = %s", got)
	}
	if statusHex(indexers.NewStatusHasher().Sum()) != nil {
		t.Fatal("empty history must have a null status")
	}
}

// TestScriptHashVector pins the script hash rule (docs/PROTOCOL.md §4.1).
func TestScriptHashVector(t *testing.T) {
	spk, _ := hex.DecodeString("76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac")
	if got := indexers.ScriptHashFromScript(spk).String(); got != "8b01df4e368ea28f8dc0423bcf7a4923e3a12d307c875e47a0cfbf90b5c39161" {
		t.Fatalf("scripthash = %s", got)
	}
	spk, _ = hex.DecodeString("00149f9aa3795e57c535d2f7b160ff023804c60fca6e")
	if got := indexers.ScriptHashFromScript(spk).String(); got != "f04bf26fc16a27abaa2f10540da7a24e369e6ec408f2d901202a7c0cd4a6112d" {
		t.Fatalf("scripthash = %s", got)
	}
}

// TestMerkleRootsElectrumX pins the roots of ElectrumX's test_merkle.py
// (docs/PROTOCOL.md §4.4): leaves dsha256(bytes([x])).
func TestMerkleRootsElectrumX(t *testing.T) {
	want := []string{
		"1406e05881e299367766d313e26c05564ec91bf721d31726bd6e46e60689539a",
		"4bbe83bc38ebe2bcc7520d234139df1c0eb9ffa51f83eab1c5129b5b906b7655",
		"e129dfe02f567fc612d126596d43406144f40a771810ac7143421d2df3e5c1d0",
		"e32f5701a0115a2b4dc72f526af1614c592c19ee95cfcb0535961e0767baf78e",
		"f4113849d628f7c3bc91cc0ff785a6aee3ee236c1c912b28cc09c44f9f97b748",
		"fb5bb7e4825922eae8c2baec960c8f5233845222134a6a3d840e3c1201af75ed",
		"7de65c7d57cdc72971c9beab94af6ad4e99f233fb6ccebd2b4b19f13697ca54d",
		"6f97282ab347a265ae3383e1569e62da8c19a68cfa670d2b617a7fed4744bbfe",
	}
	var leaves []chainhash.Hash
	for x := 0; x < 8; x++ {
		leaves = append(leaves, chainhash.DoubleHashH([]byte{byte(x)}))
		root := merkleRoot(leaves)
		if got := hex.EncodeToString(root[:]); got != want[x] {
			t.Fatalf("root of %d leaves = %s, want %s", x+1, got, want[x])
		}
		for i := range leaves {
			branch, r := merkleBranch(leaves, i, -1)
			if r != root || rootFromBranch(leaves[i], branch, i) != root {
				t.Fatalf("branch for leaf %d of %d does not fold to the root", i, x+1)
			}
		}
	}
}

// TestMerkleBranchSpecBlock2473 pins the get_merkle example of the
// protocol docs (docs/PROTOCOL.md §4.4), including the odd-count self-pairing.
func TestMerkleBranchSpecBlock2473(t *testing.T) {
	ids := []chainhash.Hash{
		mustHash(t, "9b977e4cc0b2eb44cb5ea2adb30bf6eae892c9a838111031cb49c97d8ad57309"),
		mustHash(t, "9c42f84b2fcdaff676ba25d9d4941741cc0d1a01cce0c23fdc4c0b2afa38431c"),
		mustHash(t, "770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30"),
	}
	cases := []struct {
		pos  int
		want []string
	}{
		{1, []string{"9b977e4cc0b2eb44cb5ea2adb30bf6eae892c9a838111031cb49c97d8ad57309", "e7a2891bd8f96488681a596f619de4d88a22d3b08a8aee3b44bbdd913e3e3562"}},
		{2, []string{"770f2d4371b3fabb902dd9a103e2dd005fcd3971181078fca4a2a1d6ff127b30", "ee43317b1b79a9a6b101df711a26d12a88b1419f63db15161a9fdb587fabae63"}},
	}
	for _, c := range cases {
		branch, root := merkleBranch(ids, c.pos, -1)
		got := hashesHex(branch)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Fatalf("pos %d branch = %v, want %v", c.pos, got, c.want)
		}
		if root.String() != "132994b613a584d0a435ce23196e391c064333f94b537d38b8cf8da2e614a67a" {
			t.Fatalf("root = %s", root)
		}
	}
}

// TestHeaderProofSpecExample pins the cp_height example of the protocol
// docs (docs/PROTOCOL.md §4.5): header 5 proven against cp_height 8.
func TestHeaderProofSpecExample(t *testing.T) {
	hdr, _ := hex.DecodeString("0100000085144a84488ea88d221c8bd6c059da090e88f8a2c99690ee55dbba4e00000000e11c48fecdd9e72510ca84f023370c9a38bf91ac5cae88019bee94d24528526344c36649ffff001d1d03e477")
	leaf := chainhash.DoubleHashH(hdr)
	if leaf.String() != "000000009b7262315dbf071787ad3656097b892abffd1f95a1a022f896f533fc" {
		t.Fatalf("header 5 hash = %s", leaf)
	}
	branch := []chainhash.Hash{
		mustHash(t, "000000004ebadb55ee9096c9a2f8880e09da59c0d68b1c228da88e48844a1485"),
		mustHash(t, "96cbbc84783888e4cc971ae8acf86dd3c1a419370336bb3c634c97695a8c5ac9"),
		mustHash(t, "965ac94082cebbcffe458075651e9cc33ce703ab0115c72d9e8b1a9906b2b636"),
		mustHash(t, "89e5daa6950b895190716dd26054432b564ccdc2868188ba1da76de8e1dc7591"),
	}
	if got := rootFromBranch(leaf, branch, 5); got.String() != "e347b1c43fd9b5415bf0d92708db8284b78daf4d0e24f9c3405f45feb85e25db" {
		t.Fatalf("root = %s", got)
	}
	// The server's proof of it, from mainnet's first nine block hashes.
	mainnet := []string{
		"000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f",
		"00000000839a8e6886ab5951d76f411475428afc90947ee320161bbf18eb6048",
		"000000006a625f06636b8bb6ac7b960a8d03705d1ace08b1a19da3fdcc99ddbd",
		"0000000082b5015589a3fdf2d4baff403e6f0be035a5d9742c1cae6295464449",
		"000000004ebadb55ee9096c9a2f8880e09da59c0d68b1c228da88e48844a1485",
		"000000009b7262315dbf071787ad3656097b892abffd1f95a1a022f896f533fc",
		"000000003031a0e73735690c5a1ff2a4be82553b2a12b776fbd3a215dc8f778d",
		"0000000071966c2b1d065fd446b1e485b2c9d9594acd2007ccbd5441cfc89444",
		"00000000408c48f847aa786c2268fc3e6ec2af68e8468a34a28c61b7f1de0dc6",
	}
	proof, root, err := newHeaderMerkle().proof(5, 8, func(h int32) (chainhash.Hash, error) {
		return mustHash(t, mainnet[h]), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(hashesHex(proof)) != fmt.Sprint(hashesHex(branch)) || root.String() != "e347b1c43fd9b5415bf0d92708db8284b78daf4d0e24f9c3405f45feb85e25db" {
		t.Fatalf("server's proof %v root %s, want %v root e347b1c4…", hashesHex(proof), root, hashesHex(branch))
	}
}

// TestHeaderMerkleChunksMatchPlainTree checks that the chunk-cached proof
// equals the plain Bitcoin merkle proof for every size and index, including
// partial last chunks, and stays right after a "reorg" replaces hashes.
func TestHeaderMerkleChunksMatchPlainTree(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	hashes := make([]chainhash.Hash, 70)
	for i := range hashes {
		rng.Read(hashes[i][:])
	}
	m := newHeaderMerkle()
	m.depth = 2
	at := func(h int32) (chainhash.Hash, error) { return hashes[h], nil }
	check := func() {
		for n := 1; n <= len(hashes); n++ {
			for i := 0; i < n; i++ {
				wantB, wantR := merkleBranch(hashes[:n], i, -1)
				gotB, gotR, err := m.proof(int32(i), int32(n-1), at)
				if err != nil {
					t.Fatal(err)
				}
				if gotR != wantR || fmt.Sprint(gotB) != fmt.Sprint(wantB) {
					t.Fatalf("n=%d i=%d: chunked proof differs from the plain tree", n, i)
				}
			}
		}
	}
	check()
	// A reorg from height 30 on: new hashes chain to new last-leaf keys.
	for i := 30; i < len(hashes); i++ {
		rng.Read(hashes[i][:])
	}
	check()
}

package electrum

import (
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// hashPair returns the double SHA-256 of left || right (internal order).
func hashPair(left, right *chainhash.Hash) chainhash.Hash {
	var buf [64]byte
	copy(buf[:32], left[:])
	copy(buf[32:], right[:])
	return chainhash.DoubleHashH(buf[:])
}

// merkleBranch returns the sibling hashes (deepest first) proving leaves[index]
// and the root. depth < 0 reduces until one hash is left (a Bitcoin merkle
// tree, the last hash of an odd level paired with itself); depth >= 0 reduces
// exactly depth levels, pairing a lone hash with itself, which yields the
// node of a larger tree that covers these leaves.
func merkleBranch(leaves []chainhash.Hash, index int, depth int) ([]chainhash.Hash, chainhash.Hash) {
	if len(leaves) == 0 {
		return nil, chainhash.Hash{}
	}
	level := append([]chainhash.Hash(nil), leaves...)
	var branch []chainhash.Hash
	for d := 0; depth < 0 && len(level) > 1 || d < depth; d++ {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		if index >= 0 {
			branch = append(branch, level[index^1])
			index >>= 1
		}
		next := level[:len(level)/2]
		for i := range next {
			next[i] = hashPair(&level[2*i], &level[2*i+1])
		}
		level = next
	}
	return branch, level[0]
}

// merkleRoot returns the Bitcoin merkle root of leaves.
func merkleRoot(leaves []chainhash.Hash) chainhash.Hash {
	_, root := merkleBranch(leaves, -1, -1)
	return root
}

// rootFromBranch folds a branch onto leaf at index: the check a client does.
func rootFromBranch(leaf chainhash.Hash, branch []chainhash.Hash, index int) chainhash.Hash {
	h := leaf
	for i := range branch {
		if index&1 == 1 {
			h = hashPair(&branch[i], &h)
		} else {
			h = hashPair(&h, &branch[i])
		}
		index >>= 1
	}
	return h
}

// headerChunkDepth is the depth of the cached header subtrees: each covers
// 1024 consecutive block hashes.
const headerChunkDepth = 10

// headerMerkle computes cp_height proofs: a merkle tree over the block
// hashes of heights 0..cp_height. Roots of full 1024-block chunks are cached
// under the hash of their last block; since block hashes chain, the same last
// hash means the same chunk, so a reorg needs no invalidation. That holds
// for a chunk read from one chain: hashAt fails a read that does not link
// to the height before it (linkedHashes), and a chunk it failed is not kept.
type headerMerkle struct {
	mu     sync.Mutex
	chunks map[chainhash.Hash]chainhash.Hash
	depth  int
}

// newHeaderMerkle returns an empty proof cache.
func newHeaderMerkle() *headerMerkle {
	return &headerMerkle{chunks: make(map[chainhash.Hash]chainhash.Hash), depth: headerChunkDepth}
}

// proof returns the branch and root proving the block hash at height into
// the tree of heights 0..cpHeight. hashAt reads main-chain block hashes.
func (m *headerMerkle) proof(height, cpHeight int32, hashAt func(int32) (chainhash.Hash, error)) ([]chainhash.Hash, chainhash.Hash, error) {
	n := int(cpHeight) + 1
	size := 1 << m.depth
	fetch := func(from, to int) ([]chainhash.Hash, error) {
		hs := make([]chainhash.Hash, 0, to-from)
		for h := from; h < to; h++ {
			bh, err := hashAt(int32(h))
			if err != nil {
				return nil, err
			}
			hs = append(hs, bh)
		}
		return hs, nil
	}
	if n <= size {
		leaves, err := fetch(0, n)
		if err != nil {
			return nil, chainhash.Hash{}, err
		}
		b, r := merkleBranch(leaves, int(height), -1)
		return b, r, nil
	}
	nChunks := (n + size - 1) / size
	roots := make([]chainhash.Hash, nChunks)
	var lower []chainhash.Hash
	target := int(height) / size
	for c := 0; c < nChunks; c++ {
		from, to := c*size, (c+1)*size
		if to > n {
			to = n
		}
		full := to-from == size
		if full && c != target {
			last, err := hashAt(int32(to - 1))
			if err != nil {
				return nil, chainhash.Hash{}, err
			}
			m.mu.Lock()
			r, ok := m.chunks[last]
			m.mu.Unlock()
			if ok {
				roots[c] = r
				continue
			}
		}
		leaves, err := fetch(from, to)
		if err != nil {
			return nil, chainhash.Hash{}, err
		}
		idx := -1
		if c == target {
			idx = int(height) - from
		}
		b, r := merkleBranch(leaves, idx, m.depth)
		if c == target {
			lower = b
		}
		roots[c] = r
		if full {
			m.mu.Lock()
			m.chunks[leaves[len(leaves)-1]] = r
			m.mu.Unlock()
		}
	}
	upper, root := merkleBranch(roots, target, -1)
	return append(lower, upper...), root, nil
}

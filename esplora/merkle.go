package esplora

import (
	"bytes"
	"encoding/hex"
	"errors"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

var errNotConfirmed = notFound("Transaction not found or is unconfirmed")

// merkleParent is the hash of two merkle tree nodes.
func merkleParent(a, b chainhash.Hash) chainhash.Hash {
	var buf [2 * chainhash.HashSize]byte
	copy(buf[:], a[:])
	copy(buf[chainhash.HashSize:], b[:])
	return chainhash.DoubleHashH(buf[:])
}

// merkleBranch returns the hashes from the leaf at pos up to the root's
// children, the last node of an odd level paired with itself.
func merkleBranch(leaves []chainhash.Hash, pos int) []chainhash.Hash {
	var branch []chainhash.Hash
	level := append([]chainhash.Hash(nil), leaves...)
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		branch = append(branch, level[pos^1])
		next := make([]chainhash.Hash, len(level)/2)
		for i := range next {
			next[i] = merkleParent(level[2*i], level[2*i+1])
		}
		level, pos = next, pos/2
	}
	return branch
}

// partialTree builds the BIP 37 partial merkle tree of leaves proving the
// leaf at pos: the hashes and flag bits of a merkleblock message.
type partialTree struct {
	leaves []chainhash.Hash
	match  int
	hashes []*chainhash.Hash
	bits   []bool
}

func (t *partialTree) width(height uint) int {
	return (len(t.leaves) + (1 << height) - 1) >> height
}

func (t *partialTree) hash(height uint, pos int) chainhash.Hash {
	if height == 0 {
		return t.leaves[pos]
	}
	left := t.hash(height-1, 2*pos)
	right := left
	if 2*pos+1 < t.width(height-1) {
		right = t.hash(height-1, 2*pos+1)
	}
	return merkleParent(left, right)
}

func (t *partialTree) traverse(height uint, pos int) {
	holdsMatch := t.match>>height == pos
	t.bits = append(t.bits, holdsMatch)
	if height == 0 || !holdsMatch {
		h := t.hash(height, pos)
		t.hashes = append(t.hashes, &h)
		return
	}
	t.traverse(height-1, 2*pos)
	if 2*pos+1 < t.width(height-1) {
		t.traverse(height-1, 2*pos+1)
	}
}

// merkleBlock returns the merkleblock message proving the leaf at pos.
func merkleBlock(header wire.BlockHeader, leaves []chainhash.Hash, pos int) *wire.MsgMerkleBlock {
	t := &partialTree{leaves: leaves, match: pos}
	var height uint
	for t.width(height) > 1 {
		height++
	}
	t.traverse(height, 0)
	flags := make([]byte, (len(t.bits)+7)/8)
	for i, b := range t.bits {
		if b {
			flags[i/8] |= 1 << (i % 8)
		}
	}
	return &wire.MsgMerkleBlock{Header: header, Transactions: uint32(len(leaves)), Hashes: t.hashes, Flags: flags}
}

// confirmedTxids returns where a confirmed transaction is and the txids of
// its block, both from the index.
func (s *Server) confirmedTxids(txidStr string) (chainhash.Hash, indexers.TxLocation, []chainhash.Hash, error) {
	txid, err := parseTxid(txidStr)
	if err != nil {
		return txid, indexers.TxLocation{}, nil, err
	}
	for attempt := 0; attempt < tipRetries; attempt++ {
		loc, err := s.index.TxLocation(txid)
		if errors.Is(err, indexers.ErrNotFound) {
			return txid, loc, nil, errNotConfirmed
		}
		if err != nil {
			return txid, loc, nil, err
		}
		txids, err := s.index.BlockTxIDs(loc.Height)
		if err != nil && !errors.Is(err, indexers.ErrNotFound) {
			return txid, loc, nil, err
		}
		// A block that replaced the transaction's between the two reads
		// does not hold it at its place: read again.
		if err == nil && int(loc.Pos) < len(txids) && txids[loc.Pos] == txid {
			return txid, loc, txids, nil
		}
	}
	return txid, indexers.TxLocation{}, nil, errNotConfirmed
}

type merkleProofValue struct {
	BlockHeight int32    `json:"block_height"`
	Merkle      []string `json:"merkle"`
	Pos         uint32   `json:"pos"`
}

// GET /tx/:txid/merkle-proof: blockchain.transaction.get_merkle's answer.
func (s *Server) merkleProof(txidStr string) (*reply, error) {
	_, loc, txids, err := s.confirmedTxids(txidStr)
	if err != nil {
		return nil, err
	}
	branch := merkleBranch(txids, int(loc.Pos))
	v := merkleProofValue{BlockHeight: loc.Height, Merkle: make([]string, len(branch)), Pos: loc.Pos}
	for i, h := range branch {
		v.Merkle[i] = h.String()
	}
	return jsonReply(v, ttlByDepth(loc.Height, s.tipHeightNow(), true))
}

// GET /tx/:txid/merkleblock-proof: bitcoind's merkleblock, in hex.
func (s *Server) merkleBlockProof(txidStr string) (*reply, error) {
	_, loc, txids, err := s.confirmedTxids(txidStr)
	if err != nil {
		return nil, err
	}
	header, err := s.chain.HeaderByHash(&loc.BlockHash)
	if err != nil {
		return nil, errNotConfirmed
	}
	var buf bytes.Buffer
	if err := merkleBlock(header, txids, int(loc.Pos)).BtcEncode(&buf, wire.ProtocolVersion, wire.BaseEncoding); err != nil {
		return nil, err
	}
	return textReply(hex.EncodeToString(buf.Bytes()), ttlByDepth(loc.Height, s.tipHeightNow(), true)), nil
}

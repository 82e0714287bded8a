package esplora

import (
	"bytes"
	"encoding/hex"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// medianTimeBlocks is the number of blocks whose timestamps' median is a
// block's median time past.
const medianTimeBlocks = 11

// blockValue is Esplora's block format, in electrs' field order.
type blockValue struct {
	ID                string    `json:"id"`
	Height            int32     `json:"height"`
	Version           uint32    `json:"version"`
	Timestamp         int64     `json:"timestamp"`
	TxCount           int       `json:"tx_count"`
	Size              int       `json:"size"`
	Weight            int64     `json:"weight"`
	MerkleRoot        string    `json:"merkle_root"`
	PreviousBlockHash *string   `json:"previousblockhash"`
	MedianTime        int64     `json:"mediantime"`
	Nonce             uint32    `json:"nonce"`
	Bits              uint32    `json:"bits"`
	Difficulty        jsonFloat `json:"difficulty"`
}

// blockStatus is Esplora's block status.
type blockStatus struct {
	InBestChain bool    `json:"in_best_chain"`
	Height      *int32  `json:"height"`
	NextBest    *string `json:"next_best"`
}

// parseBlockHash parses a block hash as displayed.
func parseBlockHash(s string) (chainhash.Hash, error) { return parseTxid(s) }

// indexChain returns the chain of the index tip (tipChain): the blocks
// every answer describes, the tip's and the transactions' statuses too.
func (s *Server) indexChain() (*tipChain, error) {
	tip, err := s.index.ChainTip()
	if err != nil {
		return nil, err
	}
	return s.tipChain(tip)
}

// mainHeight returns the height of a block of the index tip's chain, and
// that chain; errBlockNotFound for any other block.
func (s *Server) mainHeight(hash *chainhash.Hash) (int32, *tipChain, error) {
	at, err := s.indexChain()
	if err != nil {
		return 0, nil, err
	}
	height, ok := at.height(hash)
	if !ok {
		return 0, at, errBlockNotFound
	}
	return height, at, nil
}

// mainBlock reads a block of the index tip's chain, with its height and
// the tip's.
func (s *Server) mainBlock(hashStr string) (block *btcutil.Block, height, top int32, err error) {
	hash, err := parseBlockHash(hashStr)
	if err != nil {
		return nil, 0, 0, err
	}
	height, at, err := s.mainHeight(&hash)
	if err != nil {
		return nil, 0, 0, err
	}
	if block, err = at.block(&hash, height); err != nil {
		return nil, 0, 0, errBlockNotFound
	}
	return block, height, at.top(), nil
}

// medianTime returns the median timestamp of the block and the ten before
// it.
func (s *Server) medianTime(header wire.BlockHeader) (int64, error) {
	times := []int64{header.Timestamp.Unix()}
	for len(times) < medianTimeBlocks && header.PrevBlock != (chainhash.Hash{}) {
		prev, err := s.chain.HeaderByHash(&header.PrevBlock)
		if err != nil {
			return 0, err
		}
		header = prev
		times = append(times, header.Timestamp.Unix())
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[len(times)/2], nil
}

// difficulty is Bitcoin Core's GetDifficulty: the ratio of the lowest
// difficulty target to the block's, from its compact bits.
func difficulty(bits uint32) float64 {
	shift := (bits >> 24) & 0xff
	d := float64(0x0000ffff) / float64(bits&0x00ffffff)
	for ; shift < 29; shift++ {
		d *= 256
	}
	for ; shift > 29; shift-- {
		d /= 256
	}
	return d
}

func (s *Server) blockJSON(block *btcutil.Block, height int32) (*blockValue, error) {
	h := block.MsgBlock().Header
	mtp, err := s.medianTime(h)
	if err != nil {
		return nil, err
	}
	v := &blockValue{
		ID:         block.Hash().String(),
		Height:     height,
		Version:    uint32(h.Version),
		Timestamp:  h.Timestamp.Unix(),
		TxCount:    len(block.MsgBlock().Transactions),
		Size:       block.MsgBlock().SerializeSize(),
		Weight:     blockchain.GetBlockWeight(block),
		MerkleRoot: h.MerkleRoot.String(),
		MedianTime: mtp,
		Nonce:      h.Nonce,
		Bits:       h.Bits,
		Difficulty: jsonFloat(difficulty(h.Bits)),
	}
	if h.PrevBlock != (chainhash.Hash{}) {
		p := h.PrevBlock.String()
		v.PreviousBlockHash = &p
	}
	return v, nil
}

// GET /blocks/tip/hash
func (s *Server) tipHash() (*reply, error) {
	tip, err := s.index.ChainTip()
	if err != nil {
		return nil, err
	}
	return textReply(tip.Hash.String(), ttlShort), nil
}

// GET /blocks/tip/height
func (s *Server) tipHeight() (*reply, error) {
	tip, err := s.index.ChainTip()
	if err != nil {
		return nil, err
	}
	return textReply(strconv.Itoa(int(tip.Height)), ttlShort), nil
}

// parseHeight parses a height as electrs does (a usize); a number past any
// height there can be is math.MaxInt32, beyond every tip.
func parseHeight(s string) (int32, bool) {
	n, err := parseUint(s, 64)
	if err != nil {
		return 0, false
	}
	return int32(min(n, math.MaxInt32)), true
}

// parseUint parses an unsigned number of the given bits as Rust's FromStr
// does for electrs' path numbers: digits after an optional '+'.
func parseUint(s string, bits int) (uint64, error) {
	return strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, bits)
}

// GET /blocks[/:start_height]: ten blocks down from start_height (a start
// that is not a number means the tip, as in electrs).
func (s *Server) blocks(q *request, start string) (*reply, error) {
	at, err := s.indexChain()
	if err != nil {
		return nil, err
	}
	height := at.top()
	if h, ok := parseHeight(start); ok && start != "" {
		if h > at.top() {
			return nil, errBlockNotFound
		}
		height = h
	}
	out := []*blockValue{}
	for ; height >= 0 && len(out) < blockLimit; height-- {
		if q.ctx.Err() != nil {
			return nil, q.ctx.Err()
		}
		hash, ok := at.hash(height)
		if !ok {
			return nil, errBlockNotFound
		}
		block, err := at.block(&hash, height)
		if err != nil {
			return nil, errBlockNotFound
		}
		v, err := s.blockJSON(block, height)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return jsonReply(out, ttlShort)
}

// GET /block-height/:height
func (s *Server) blockHeight(hs string) (*reply, error) {
	height, ok := parseHeight(hs)
	if !ok {
		return nil, errInvalidNumber
	}
	at, err := s.indexChain()
	if err != nil {
		return nil, err
	}
	hash, ok := at.hash(height)
	if height > at.top() || !ok {
		return nil, errBlockNotFound
	}
	return textReply(hash.String(), ttlByDepth(height, at.top(), true)), nil
}

// GET /block/:hash
func (s *Server) block(hs string) (*reply, error) {
	block, height, _, err := s.mainBlock(hs)
	if err != nil {
		return nil, err
	}
	v, err := s.blockJSON(block, height)
	if err != nil {
		return nil, err
	}
	return jsonReply(v, ttlLong)
}

// GET /block/:hash/status: never an error for a well-formed hash; a block
// outside the main chain (or unknown) is not in the best chain.
func (s *Server) blockStatus(hs string) (*reply, error) {
	hash, err := parseBlockHash(hs)
	if err != nil {
		return nil, err
	}
	height, at, err := s.mainHeight(&hash)
	if err != nil {
		if err == errBlockNotFound {
			return jsonReply(blockStatus{}, ttlShort)
		}
		return nil, err
	}
	st := blockStatus{InBestChain: true, Height: &height}
	if next, ok := at.hash(height + 1); ok && height < at.top() {
		n := next.String()
		st.NextBest = &n
	}
	return jsonReply(st, ttlByDepth(height, at.top(), true))
}

// GET /block/:hash/header
func (s *Server) blockHeader(hs string) (*reply, error) {
	hash, err := parseBlockHash(hs)
	if err != nil {
		return nil, err
	}
	if _, _, err := s.mainHeight(&hash); err != nil {
		return nil, err
	}
	header, err := s.chain.HeaderByHash(&hash)
	if err != nil {
		return nil, errBlockNotFound
	}
	var buf bytes.Buffer
	if err := header.Serialize(&buf); err != nil {
		return nil, err
	}
	return textReply(hex.EncodeToString(buf.Bytes()), ttlLong), nil
}

// GET /block/:hash/raw
func (s *Server) blockRaw(hs string) (*reply, error) {
	block, _, _, err := s.mainBlock(hs)
	if err != nil {
		return nil, err
	}
	raw, err := block.Bytes()
	if err != nil {
		return nil, err
	}
	return &reply{"application/octet-stream", raw, ttlLong}, nil
}

func blockTxids(block *btcutil.Block) []string {
	txs := block.Transactions()
	out := make([]string, len(txs))
	for i, tx := range txs {
		out[i] = tx.Hash().String()
	}
	return out
}

// GET /block/:hash/txids
func (s *Server) blockTxids(hs string) (*reply, error) {
	block, _, _, err := s.mainBlock(hs)
	if err != nil {
		return nil, err
	}
	return jsonReply(blockTxids(block), ttlLong)
}

// GET /block/:hash/txid/:index
func (s *Server) blockTxid(hs, is string) (*reply, error) {
	hash, err := parseBlockHash(hs)
	if err != nil {
		return nil, err
	}
	index, err := parseUint(is, 64)
	if err != nil {
		return nil, errInvalidNumber
	}
	block, _, _, err := s.mainBlock(hash.String())
	if err != nil {
		return nil, err
	}
	txs := block.Transactions()
	if index >= uint64(len(txs)) {
		return nil, notFound("tx index out of range")
	}
	return textReply(txs[index].Hash().String(), ttlLong), nil
}

// GET /block/:hash/txs[/:start_index]: 25 transactions from start_index
// (a start that is not a number means 0, as in electrs).
func (s *Server) blockTxs(q *request, hs, startStr string) (*reply, error) {
	block, height, top, err := s.mainBlock(hs)
	if err != nil {
		return nil, err
	}
	start := uint64(0)
	if n, err := parseUint(startStr, 32); err == nil {
		start = n
	}
	txs := block.Transactions()
	// electrs' checks, in its order and words.
	if start >= uint64(len(txs)) {
		return nil, notFound("start index out of range")
	}
	if start%chainTxsPerPage != 0 {
		return nil, badRequest("start index must be a multipication of " + strconv.Itoa(chainTxsPerPage))
	}
	end := min(int(start)+chainTxsPerPage, len(txs))
	loc := indexers.TxLocation{Height: height, BlockHash: *block.Hash()}
	// The block's own transactions are at hand for the prevouts of those
	// spending outputs of the same block.
	for i, tx := range txs {
		l := loc
		l.Pos = uint32(i)
		q.txs[*tx.Hash()] = &cachedTx{tx: tx.MsgTx(), confirmed: true, loc: l}
	}
	out := make([]*txValue, 0, end-int(start))
	for _, tx := range txs[start:end] {
		if q.ctx.Err() != nil {
			return nil, q.ctx.Err()
		}
		v, err := s.txJSON(q, q.txs[*tx.Hash()])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return jsonReply(out, ttlByDepth(height, top, true))
}

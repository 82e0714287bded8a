package rpcext

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// maxSideChainWalk bounds the header walk that finds the height of a block
// outside the main chain.
const maxSideChainWalk = 10000

// errBlockNotFound is btcd's answer for an unknown block.
var errBlockNotFound = &btcjson.RPCError{Code: btcjson.ErrRPCBlockNotFound, Message: "Block not found"}

// parseHash parses a hex hash parameter.
func parseHash(s string) (*chainhash.Hash, error) {
	if len(s) != chainhash.MaxHashStringSize {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCDecodeHexString,
			fmt.Sprintf("Argument must be a %d-character hexadecimal hash (not %q)",
				chainhash.MaxHashStringSize, truncate(s)))
	}
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCDecodeHexString,
			fmt.Sprintf("Argument must be hexadecimal string (not %q)", truncate(s)))
	}
	return h, nil
}

// truncate shortens a client-supplied string for an error message.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// difficultyRatio is the proof-of-work difficulty as a multiple of the
// network's minimum, as btcd reports it.
func difficultyRatio(bits uint32, params *chaincfg.Params) float64 {
	limit := blockchain.CompactToBig(params.PowLimitBits)
	target := blockchain.CompactToBig(bits)
	if target.Sign() <= 0 {
		return 0
	}
	ratio := new(big.Rat).SetFrac(limit, target)
	f, err := strconv.ParseFloat(ratio.FloatString(8), 64)
	if err != nil {
		return 0
	}
	return f
}

// blockPosition is where a block sits relative to the main chain.
type blockPosition struct {
	height        int32
	confirmations int64
	nextHash      string
}

// positionOf finds a block's height, confirmations and main-chain
// successor. Blocks outside the main chain get -1 confirmations (as in
// Bitcoin Core) and a height found by walking back to the main chain.
func (s *Server) positionOf(hash *chainhash.Hash, header *wire.BlockHeader) (blockPosition, error) {
	best := s.cfg.Chain.BestSnapshot()
	if height, err := s.cfg.Chain.BlockHeightByHash(hash); err == nil {
		pos := blockPosition{height: height, confirmations: int64(1 + best.Height - height)}
		if height < best.Height {
			next, err := s.cfg.Chain.BlockHashByHeight(height + 1)
			if err != nil {
				return pos, err
			}
			pos.nextHash = next.String()
		}
		return pos, nil
	}
	prev := header.PrevBlock
	for steps := int32(1); steps <= maxSideChainWalk; steps++ {
		if height, err := s.cfg.Chain.BlockHeightByHash(&prev); err == nil {
			return blockPosition{height: height + steps, confirmations: -1}, nil
		}
		h, err := s.cfg.Chain.HeaderByHash(&prev)
		if err != nil {
			return blockPosition{}, fmt.Errorf("block %v: ancestor %v unknown: %w", hash, prev, err)
		}
		prev = h.PrevBlock
	}
	return blockPosition{}, fmt.Errorf("block %v is more than %d blocks off the main chain", hash, maxSideChainWalk)
}

// handleGetBestBlock answers getbestblock.
func handleGetBestBlock(s *Server, _ interface{}) (interface{}, error) {
	best := s.cfg.Chain.BestSnapshot()
	return &btcjson.GetBestBlockResult{Hash: best.Hash.String(), Height: best.Height}, nil
}

// handleGetBestBlockHash answers getbestblockhash.
func handleGetBestBlockHash(s *Server, _ interface{}) (interface{}, error) {
	return s.cfg.Chain.BestSnapshot().Hash.String(), nil
}

// handleGetBlockCount answers getblockcount.
func handleGetBlockCount(s *Server, _ interface{}) (interface{}, error) {
	return int64(s.cfg.Chain.BestSnapshot().Height), nil
}

// handleGetBlockHash answers getblockhash.
func handleGetBlockHash(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetBlockHashCmd)
	if c.Index < 0 || c.Index > int64(s.cfg.Chain.BestSnapshot().Height) {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCOutOfRange, "Block number out of range")
	}
	hash, err := s.cfg.Chain.BlockHashByHeight(int32(c.Index))
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCOutOfRange, "Block number out of range")
	}
	return hash.String(), nil
}

// handleGetBlock answers getblock at verbosity 0 (hex), 1 (txids) or 2
// (decoded transactions).
func handleGetBlock(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetBlockCmd)
	verbosity := 1
	if c.Verbosity != nil {
		verbosity = *c.Verbosity
	}
	if verbosity != 0 && verbosity != 1 {
		// As btcd: any other verbosity is 2.
		verbosity = 2
	}
	hash, err := parseHash(c.Hash)
	if err != nil {
		return nil, err
	}
	block, err := s.cfg.Chain.BlockByHash(hash)
	if err != nil {
		return nil, errBlockNotFound
	}
	raw, err := block.Bytes()
	if err != nil {
		return nil, err
	}
	if verbosity == 0 {
		return hex.EncodeToString(raw), nil
	}

	header := &block.MsgBlock().Header
	pos, err := s.positionOf(hash, header)
	if err != nil {
		return nil, err
	}
	reply := btcjson.GetBlockVerboseResult{
		Hash:          hash.String(),
		Confirmations: pos.confirmations,
		StrippedSize:  int32(block.MsgBlock().SerializeSizeStripped()),
		Size:          int32(len(raw)),
		Weight:        int32(blockchain.GetBlockWeight(block)),
		Height:        int64(pos.height),
		Version:       header.Version,
		VersionHex:    fmt.Sprintf("%08x", header.Version),
		MerkleRoot:    header.MerkleRoot.String(),
		Time:          header.Timestamp.Unix(),
		Nonce:         header.Nonce,
		Bits:          strconv.FormatInt(int64(header.Bits), 16),
		Difficulty:    difficultyRatio(header.Bits, s.cfg.Params),
		PreviousHash:  header.PrevBlock.String(),
		NextHash:      pos.nextHash,
	}
	if verbosity == 1 {
		reply.Tx = make([]string, len(block.Transactions()))
		for i, tx := range block.Transactions() {
			reply.Tx[i] = tx.Hash().String()
		}
		return reply, nil
	}

	// Verbosity 2 lists the decoded transactions under "tx" (Bitcoin
	// Core's shape, which rpcclient's GetBlockVerboseTx decodes) and under
	// "rawtx" (where btcd puts them).
	txs := make([]btcjson.TxRawResult, len(block.Transactions()))
	for i, tx := range block.Transactions() {
		r, err := txRawResult(s.cfg.Params, tx.MsgTx(), &txBlockInfo{
			header: header, hash: hash, height: pos.height, confirmations: pos.confirmations,
		})
		if err != nil {
			return nil, err
		}
		txs[i] = *r
	}
	return btcjson.GetBlockVerboseTxResult{
		Hash:          reply.Hash,
		Confirmations: reply.Confirmations,
		StrippedSize:  reply.StrippedSize,
		Size:          reply.Size,
		Weight:        reply.Weight,
		Height:        reply.Height,
		Version:       reply.Version,
		VersionHex:    reply.VersionHex,
		MerkleRoot:    reply.MerkleRoot,
		Tx:            txs,
		RawTx:         txs,
		Time:          reply.Time,
		Nonce:         reply.Nonce,
		Bits:          reply.Bits,
		Difficulty:    reply.Difficulty,
		PreviousHash:  reply.PreviousHash,
		NextHash:      reply.NextHash,
	}, nil
}

// handleGetBlockHeader answers getblockheader, verbose (default) or hex.
func handleGetBlockHeader(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetBlockHeaderCmd)
	hash, err := parseHash(c.Hash)
	if err != nil {
		return nil, err
	}
	header, err := s.cfg.Chain.HeaderByHash(hash)
	if err != nil {
		return nil, errBlockNotFound
	}
	if c.Verbose != nil && !*c.Verbose {
		var buf bytes.Buffer
		if err := header.Serialize(&buf); err != nil {
			return nil, err
		}
		return hex.EncodeToString(buf.Bytes()), nil
	}
	pos, err := s.positionOf(hash, &header)
	if err != nil {
		return nil, err
	}
	return btcjson.GetBlockHeaderVerboseResult{
		Hash:          hash.String(),
		Confirmations: pos.confirmations,
		Height:        pos.height,
		Version:       header.Version,
		VersionHex:    fmt.Sprintf("%08x", header.Version),
		MerkleRoot:    header.MerkleRoot.String(),
		Time:          header.Timestamp.Unix(),
		Nonce:         uint64(header.Nonce),
		Bits:          strconv.FormatInt(int64(header.Bits), 16),
		Difficulty:    difficultyRatio(header.Bits, s.cfg.Params),
		PreviousHash:  header.PrevBlock.String(),
		NextHash:      pos.nextHash,
	}, nil
}

// handleGetChainTips answers getchaintips.
func handleGetChainTips(s *Server, _ interface{}) (interface{}, error) {
	tips := s.cfg.Chain.ChainTips()
	out := make([]btcjson.GetChainTipsResult, len(tips))
	for i, t := range tips {
		out[i].Height = t.Height
		out[i].Hash = t.BlockHash.String()
		out[i].BranchLen = t.BranchLen
		out[i].Status = t.Status.String()
	}
	return out, nil
}

// handleInvalidateBlock answers invalidateblock.
func handleInvalidateBlock(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.InvalidateBlockCmd)
	hash, err := parseHash(c.BlockHash)
	if err != nil {
		return nil, err
	}
	if _, err := s.cfg.Chain.HeaderByHash(hash); err != nil {
		return nil, errBlockNotFound
	}
	return nil, s.cfg.Chain.InvalidateBlock(hash)
}

// handleReconsiderBlock answers reconsiderblock.
func handleReconsiderBlock(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.ReconsiderBlockCmd)
	hash, err := parseHash(c.BlockHash)
	if err != nil {
		return nil, err
	}
	if _, err := s.cfg.Chain.HeaderByHash(hash); err != nil {
		return nil, errBlockNotFound
	}
	return nil, s.cfg.Chain.ReconsiderBlock(hash)
}

// blockWithHeight returns block with its height set, looking it up when
// the caller left it unknown. A disconnected block's height is its
// parent's plus one.
func (s *Server) blockWithHeight(block *btcutil.Block) int32 {
	if h := block.Height(); h != btcutil.BlockHeightUnknown {
		return h
	}
	if h, err := s.cfg.Chain.BlockHeightByHash(block.Hash()); err == nil {
		return h
	}
	prev := block.MsgBlock().Header.PrevBlock
	if h, err := s.cfg.Chain.BlockHeightByHash(&prev); err == nil {
		return h + 1
	}
	return btcutil.BlockHeightUnknown
}

package rpcext

import (
	"fmt"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// maxGenerateBlocks bounds one generate call.
const maxGenerateBlocks = 10000

// checkGenerate refuses mining where btcd does: networks where the CPU
// cannot find blocks, and a zero or excessive count.
func (s *Server) checkGenerate(n int64) error {
	if !s.cfg.Params.GenerateSupported {
		return btcjson.NewRPCError(btcjson.ErrRPCDifficulty,
			fmt.Sprintf("No support for `generate` on the current network, %s, as it's "+
				"unlikely to be possible to mine a block with the CPU.", s.cfg.Params.Net))
	}
	if n <= 0 {
		return btcjson.NewRPCError(btcjson.ErrRPCInternal.Code,
			"Please request a nonzero number of blocks to generate.")
	}
	if n > maxGenerateBlocks {
		return btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter,
			fmt.Sprintf("Cannot generate more than %d blocks in one call", maxGenerateBlocks))
	}
	return nil
}

// hashStrings formats block hashes for a generate reply.
func hashStrings(hashes []*chainhash.Hash) []string {
	out := make([]string, len(hashes))
	for i, h := range hashes {
		out[i] = h.String()
	}
	return out
}

// handleGenerate answers generate.
func handleGenerate(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GenerateCmd)
	if err := s.checkGenerate(int64(c.NumBlocks)); err != nil {
		return nil, err
	}
	hashes, err := s.cfg.Backend.Generate(c.NumBlocks, nil)
	if err != nil {
		return nil, toRPCError(err)
	}
	return hashStrings(hashes), nil
}

// handleGenerateToAddress answers generatetoaddress.
func handleGenerateToAddress(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GenerateToAddressCmd)
	if err := s.checkGenerate(c.NumBlocks); err != nil {
		return nil, err
	}
	addr, err := address.DecodeAddress(c.Address, s.cfg.Params)
	if err != nil || !addr.IsForNet(s.cfg.Params) {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidAddressOrKey,
			fmt.Sprintf("Invalid address %q for %s", truncate(c.Address), s.cfg.Params.Name))
	}
	hashes, err := s.cfg.Backend.Generate(uint32(c.NumBlocks), addr)
	if err != nil {
		return nil, toRPCError(err)
	}
	return hashStrings(hashes), nil
}

// handleSubmitBlock answers submitblock: null when the block is accepted,
// "rejected: <reason>" otherwise, as btcd does.
func handleSubmitBlock(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.SubmitBlockCmd)
	raw, err := decodeHexParam(c.HexBlock)
	if err != nil {
		return nil, err
	}
	block, err := btcutil.NewBlockFromBytes(raw)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCDeserialization, "Block decode failed: "+err.Error())
	}
	if err := s.cfg.Backend.SubmitBlock(block); err != nil {
		return "rejected: " + err.Error(), nil
	}
	log.Infof("Accepted block %v via submitblock", block.Hash())
	return nil, nil
}

package rpcext

import (
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// handleGetInfo answers getinfo. rpcclient reads "version" to recognise a
// current btcd.
func handleGetInfo(s *Server, _ interface{}) (interface{}, error) {
	best := s.cfg.Chain.BestSnapshot()
	res := &btcjson.InfoChainResult{
		Version:         s.cfg.Version,
		ProtocolVersion: int32(peer.MaxProtocolVersion),
		Blocks:          best.Height,
		Connections:     s.cfg.Backend.ConnectedCount(),
		Difficulty:      difficultyRatio(best.Bits, s.cfg.Params),
		TestNet:         isTestNet(s.cfg.Params),
		RelayFee:        s.cfg.RelayFee,
		Proxy:           s.cfg.Proxy,
	}
	if ts, ok := s.cfg.Backend.(TimeSource); ok {
		res.TimeOffset = int64(ts.TimeOffset().Seconds())
	}
	return res, nil
}

// TimeSource is implemented by a Backend that knows the offset of the
// peers' median time from the clock, which getinfo reports as btcd does.
type TimeSource interface {
	// TimeOffset is btcd's MedianTimeSource.Offset.
	TimeOffset() time.Duration
}

// isTestNet reports whether params are one of the public test networks.
func isTestNet(params *chaincfg.Params) bool {
	return params.Net == wire.TestNet3 || params.Net == wire.TestNet4
}

// handleUptime answers uptime in seconds.
func handleUptime(s *Server, _ interface{}) (interface{}, error) {
	return int64(time.Since(s.started) / time.Second), nil
}

// handleStop answers stop and asks the node to shut down.
func handleStop(s *Server, _ interface{}) (interface{}, error) {
	s.cfg.Backend.RequestStop()
	return "btcd-electrum stopping.", nil
}

// handleEstimateFee answers estimatefee in BTC/kB.
func handleEstimateFee(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.EstimateFeeCmd)
	if c.NumBlocks <= 0 || c.NumBlocks > 1<<20 {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "Parameter NumBlocks must be positive")
	}
	rate, err := s.cfg.Backend.EstimateFee(uint32(c.NumBlocks))
	if err != nil {
		return nil, toRPCError(err)
	}
	return rate, nil
}

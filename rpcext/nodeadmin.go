package rpcext

import (
	"errors"
	"math/big"
	"net"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/wire/v2"
)

// NodeAdmin is implemented by a Backend that runs a peer server, a CPU miner
// and logging: btcd's network, mining and debugging methods. A Backend
// without it answers them with an error.
type NodeAdmin interface {
	// NetTotals returns the bytes received from and sent to peers since
	// the node started.
	NetTotals() (recv, sent uint64)

	// PingPeers queues a ping to every peer.
	PingPeers()

	// AddedNodes describes the permanent peers (addnode add, --addpeer,
	// --connect).
	AddedNodes() []AddedNode

	// KnownAddresses returns the peer addresses the node knows.
	KnownAddresses() []*wire.NetAddressV2

	// DisconnectNode disconnects the temporary peers at the address target
	// (a permanent peer is removed with RemoveNode).
	DisconnectNode(target string) error

	// DisconnectNodeID disconnects the temporary peer with the id;
	// ErrPermanentPeer for a permanent one.
	DisconnectNodeID(id int32) error

	// PeerAddr returns the address of the peer with the id, and whether it
	// is a permanent one, for node's subcommands given an id.
	PeerAddr(id int32) (addr string, permanent, ok bool)

	// SetGenerate starts the CPU miner with workers goroutines (-1: one
	// per core) or stops it.
	SetGenerate(on bool, workers int) error

	// Mining reports whether the CPU miner runs, its workers and hash rate.
	Mining() (on bool, workers int32, hashesPerSec float64)

	// SetDebugLevel applies a --debuglevel spec; "show" lists the
	// subsystems.
	SetDebugLevel(spec string) (string, error)
}

// AddedNode is a permanent peer.
type AddedNode struct {
	Addr      string
	Connected bool
	Inbound   bool
}

// nodeAdminMethods are btcd's network, mining and debugging methods; methods.go
// adds them to the method table.
var nodeAdminMethods = map[string]method{
	"debuglevel":       {handleDebugLevel, "Sets the log level of all or some subsystems, or lists them (show)."},
	"getaddednodeinfo": {handleGetAddedNodeInfo, "Describes the permanently added peers."},
	"getblocktemplate": {nil, "Returns a block template to mine on (BIP 22: long polling with longpollid; BIP 23: proposal mode)."},
	"getgenerate":      {handleGetGenerate, "Returns whether the CPU miner runs."},
	"gethashespersec":  {handleGetHashesPerSec, "Returns the CPU miner's hashes per second."},
	"getmininginfo":    {handleGetMiningInfo, "Returns mining state."},
	"getnettotals":     {handleGetNetTotals, "Returns the bytes received and sent over the peer connections."},
	"getnetworkhashps": {handleGetNetworkHashPS, "Estimates the network's hashes per second over the last blocks."},
	"getnodeaddresses": {handleGetNodeAddresses, "Returns known peer addresses."},
	"node":             {handleNode, "Connects (perm or temp), removes or disconnects a peer."},
	"ping":             {handlePing, "Pings every peer (see pingtime in getpeerinfo)."},
	"setgenerate":      {handleSetGenerate, "Starts or stops the CPU miner."},
	"verifychain":      {handleVerifyChain, "Checks the sanity of the most recent blocks."},
}

// admin returns the backend's NodeAdmin or an error.
func (s *Server) admin() (NodeAdmin, error) {
	a, ok := s.cfg.Backend.(NodeAdmin)
	if !ok {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "the node does not support this method")
	}
	return a, nil
}

func handleDebugLevel(s *Server, cmd interface{}) (interface{}, error) {
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	out, err := a.SetDebugLevel(cmd.(*btcjson.DebugLevelCmd).LevelSpec)
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParams.Code, err.Error())
	}
	return out, nil
}

func handleGetAddedNodeInfo(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetAddedNodeInfoCmd)
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	nodes := a.AddedNodes()
	if c.Node != nil {
		var found []AddedNode
		for _, n := range nodes {
			if n.Addr == *c.Node {
				found = append(found, n)
			}
		}
		if len(found) == 0 {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCClientNodeNotAdded, "Node has not been added")
		}
		nodes = found
	}
	if !c.DNS {
		out := make([]string, len(nodes))
		for i, n := range nodes {
			out[i] = n.Addr
		}
		return out, nil
	}
	out := make([]*btcjson.GetAddedNodeInfoResult, 0, len(nodes))
	for _, n := range nodes {
		host, _, err := net.SplitHostPort(n.Addr)
		if err != nil {
			host = n.Addr
		}
		conn := "false"
		if n.Connected {
			conn = "outbound"
			if n.Inbound {
				conn = "inbound"
			}
		}
		// As btcd with an IP or .onion host; names are not resolved
		// here (the node connected to what they resolved to).
		addrs := []btcjson.GetAddedNodeInfoResultAddr{{Address: host, Connected: conn}}
		out = append(out, &btcjson.GetAddedNodeInfoResult{AddedNode: n.Addr,
			Connected: btcjson.Bool(n.Connected), Addresses: &addrs})
	}
	return out, nil
}

func handleGetGenerate(s *Server, _ interface{}) (interface{}, error) {
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	on, _, _ := a.Mining()
	return on, nil
}

func handleGetHashesPerSec(s *Server, _ interface{}) (interface{}, error) {
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	_, _, hps := a.Mining()
	return int64(hps), nil
}

func handleSetGenerate(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.SetGenerateCmd)
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	workers := -1
	if c.GenProcLimit != nil {
		workers = *c.GenProcLimit
	}
	on := c.Generate && workers != 0
	if err := a.SetGenerate(on, workers); err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, err.Error())
	}
	return nil, nil
}

func handleGetMiningInfo(s *Server, _ interface{}) (interface{}, error) {
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	hps, err := handleGetNetworkHashPS(s, btcjson.NewGetNetworkHashPSCmd(nil, nil))
	if err != nil {
		return nil, err
	}
	best := s.cfg.Chain.BestSnapshot()
	on, workers, rate := a.Mining()
	return &btcjson.GetMiningInfoResult{
		Blocks:             int64(best.Height),
		CurrentBlockSize:   best.BlockSize,
		CurrentBlockWeight: best.BlockWeight,
		CurrentBlockTx:     best.NumTxns,
		Difficulty:         difficultyRatio(best.Bits, s.cfg.Params),
		Generate:           on,
		GenProcLimit:       workers,
		HashesPerSec:       rate,
		NetworkHashPS:      hps.(float64),
		PooledTx:           uint64(len(s.cfg.Mempool.TxDescs())),
		TestNet:            isTestNet(s.cfg.Params),
	}, nil
}

func handleGetNetTotals(s *Server, _ interface{}) (interface{}, error) {
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	recv, sent := a.NetTotals()
	return &btcjson.GetNetTotalsResult{TotalBytesRecv: recv, TotalBytesSent: sent,
		TimeMillis: time.Now().UnixMilli()}, nil
}

// handleGetNetworkHashPS estimates the hash rate from the work and time
// span of the last blocks (120 by default; <= 0: since the last
// difficulty change), as btcd.
func handleGetNetworkHashPS(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetNetworkHashPSCmd)
	best := s.cfg.Chain.BestSnapshot()
	end := int32(-1)
	if c.Height != nil {
		end = int32(*c.Height)
	}
	if end > best.Height || end == 0 {
		return float64(0), nil
	}
	if end < 0 {
		end = best.Height
	}
	perRetarget := int32(s.cfg.Params.TargetTimespan / s.cfg.Params.TargetTimePerBlock)
	blocks := int32(120)
	if c.Blocks != nil {
		blocks = int32(*c.Blocks)
	}
	start := end - blocks
	if blocks <= 0 {
		start = end - (end%perRetarget + 1)
	}
	start = max(start, 0)
	var minTime, maxTime time.Time
	work := new(big.Int)
	for h := start; h <= end; h++ {
		hash, err := s.cfg.Chain.BlockHashByHeight(h)
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "Failed to fetch block hash: "+err.Error())
		}
		header, err := s.cfg.Chain.HeaderByHash(hash)
		if err != nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "Failed to fetch block header: "+err.Error())
		}
		if h == start {
			minTime, maxTime = header.Timestamp, header.Timestamp
			continue
		}
		work.Add(work, blockchain.CalcWork(header.Bits))
		if header.Timestamp.Before(minTime) {
			minTime = header.Timestamp
		}
		if header.Timestamp.After(maxTime) {
			maxTime = header.Timestamp
		}
	}
	span := maxTime.Sub(minTime).Seconds()
	if span == 0 {
		return float64(0), nil
	}
	hps, _ := new(big.Float).Quo(new(big.Float).SetInt(work), big.NewFloat(span)).Float64()
	return hps, nil
}

func handleGetNodeAddresses(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.GetNodeAddressesCmd)
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	count := int32(1)
	if c.Count != nil {
		if count = *c.Count; count <= 0 {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "Address count out of range")
		}
	}
	known := a.KnownAddresses()
	count = min(count, int32(len(known)))
	out := make([]*btcjson.GetNodeAddressesResult, 0, count)
	for _, na := range known[:count] {
		out = append(out, &btcjson.GetNodeAddressesResult{Time: na.Timestamp.Unix(),
			Services: uint64(na.Services), Address: na.Addr.String(), Port: na.Port})
	}
	return out, nil
}

// handleNode answers node connect|remove|disconnect, with a peer id or
// address as btcd.
func handleNode(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.NodeCmd)
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	target := c.Target
	switch c.SubCmd {
	case "disconnect", "remove":
		// A number names a peer by id; connect takes only addresses.
		byID, permanent := false, false
		var peerID int32
		if id, err := strconv.ParseUint(target, 10, 32); err == nil {
			addr, perm, ok := a.PeerAddr(int32(id))
			if !ok {
				return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "peer not found")
			}
			target, byID, permanent, peerID = addr, true, perm, int32(id)
		}
		// As btcd, an id names one peer: of the kind the subcommand
		// takes, or refused (another peer may share its address).
		switch {
		case byID && c.SubCmd == "disconnect" && permanent:
			err = ErrPermanentPeer
		case byID && c.SubCmd == "remove" && !permanent:
			err = ErrTemporaryPeer
		case !byID:
			if _, _, err := net.SplitHostPort(target); err != nil && net.ParseIP(target) == nil {
				return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "invalid address or node ID")
			}
			target = withDefaultPort(target, s.cfg.Params.DefaultPort)
		}
		switch {
		case err != nil:
		case c.SubCmd == "disconnect" && byID:
			err = a.DisconnectNodeID(peerID)
		case c.SubCmd == "disconnect":
			err = a.DisconnectNode(target)
		default:
			err = s.cfg.Backend.RemoveNode(target)
		}
	case "connect":
		sub := "temp"
		if c.ConnectSubCmd != nil {
			sub = *c.ConnectSubCmd
		}
		if sub != "perm" && sub != "temp" {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "invalid subcommand for node connect")
		}
		err = s.cfg.Backend.AddNode(withDefaultPort(target, s.cfg.Params.DefaultPort), sub == "perm")
	default:
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "invalid subcommand for node")
	}
	switch {
	case errors.Is(err, ErrTemporaryPeer), errors.Is(err, ErrPermanentPeer):
		return nil, btcjson.NewRPCError(btcjson.ErrRPCMisc, err.Error())
	case err != nil:
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, err.Error())
	}
	return nil, nil
}

func handlePing(s *Server, _ interface{}) (interface{}, error) {
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	a.PingPeers()
	return nil, nil
}

// handleVerifyChain checks the sanity of the last checkdepth blocks at
// checklevel > 0, as btcd; it answers whether all passed.
func handleVerifyChain(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.VerifyChainCmd)
	var level, depth int32
	if c.CheckLevel != nil {
		level = *c.CheckLevel
	}
	if c.CheckDepth != nil {
		depth = *c.CheckDepth
	}
	best := s.cfg.Chain.BestSnapshot()
	finish := max(best.Height-depth, 0)
	timeSource := blockchain.NewMedianTime()
	for h := best.Height; h > finish; h-- {
		select {
		case <-s.quit:
			return false, nil
		default:
		}
		hash, err := s.cfg.Chain.BlockHashByHeight(h)
		if err != nil {
			return false, nil
		}
		block, err := s.cfg.Chain.BlockByHash(hash)
		if err != nil {
			return false, nil
		}
		if level > 0 {
			if err := blockchain.CheckBlockSanity(block, s.cfg.Params.PowLimit, timeSource); err != nil {
				log.Errorf("verifychain: block %v at height %d: %v", hash, h, err)
				return false, nil
			}
		}
	}
	return true, nil
}

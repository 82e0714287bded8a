package rpcext

import (
	"errors"
	"net"

	"github.com/btcsuite/btcd/btcjson"
)

// withDefaultPort adds the network's default P2P port to an address
// without one.
func withDefaultPort(addr, port string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, port)
}

// handleAddNode answers addnode add|remove|onetry.
func handleAddNode(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*btcjson.AddNodeCmd)
	if c.Addr == "" {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "addnode needs an address")
	}
	addr := withDefaultPort(c.Addr, s.cfg.Params.DefaultPort)
	var err error
	switch c.SubCmd {
	case btcjson.ANAdd:
		err = s.cfg.Backend.AddNode(addr, true)
	case btcjson.ANOneTry:
		err = s.cfg.Backend.AddNode(addr, false)
	case btcjson.ANRemove:
		if err = s.cfg.Backend.RemoveNode(addr); errors.Is(err, ErrTemporaryPeer) {
			err = errors.New("peer not found") // btcd's words here
		}
	default:
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "invalid subcommand for addnode")
	}
	if err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, err.Error())
	}
	return nil, nil
}

// handleGetPeerInfo answers getpeerinfo.
func handleGetPeerInfo(s *Server, _ interface{}) (interface{}, error) {
	peers := s.cfg.Backend.PeerInfo()
	if peers == nil {
		peers = []*btcjson.GetPeerInfoResult{}
	}
	return peers, nil
}

// handleGetConnectionCount answers getconnectioncount.
func handleGetConnectionCount(s *Server, _ interface{}) (interface{}, error) {
	return s.cfg.Backend.ConnectedCount(), nil
}

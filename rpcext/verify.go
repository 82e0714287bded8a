package rpcext

import (
	"fmt"

	"github.com/btcsuite/btcd/btcjson"
)

// VerifyElectrumIndexCmd is the verifyelectrumindex command:
// verifyelectrumindex ("start"|"status"). "start" (the default) starts a
// verification of the Electrum index against the chain unless one is
// running; "status" only reports. Both return the state of the running
// verification and the result of the last one. It is registered with
// btcjson like getelectruminfo.
type VerifyElectrumIndexCmd struct {
	Action *string `jsonrpcdefault:"\"start\""`
}

// VerifyElectrumIndexMethod is the method name of the extension.
const VerifyElectrumIndexMethod = "verifyelectrumindex"

func init() {
	btcjson.MustRegisterCmd(VerifyElectrumIndexMethod, (*VerifyElectrumIndexCmd)(nil), 0)
}

// IndexVerifier is implemented by a Backend whose node verifies its
// Electrum index on request.
type IndexVerifier interface {
	// VerifyIndex starts a verification when start is true and none is
	// running, and reports the running or last one.
	VerifyIndex(start bool) (*VerifyIndexInfo, error)
}

// VerifyIndexInfo is the result of verifyelectrumindex.
type VerifyIndexInfo struct {
	// Running is true while a verification runs; Started is when the
	// running or last one started (Unix seconds, 0 for none).
	Running bool  `json:"running"`
	Started int64 `json:"started"`
	// Phase ("blocks", "rows", "differences", "done"), Height (the last
	// block recomputed), TipHeight (the index tip being verified) and Rows
	// (stored rows read) are its progress.
	Phase     string `json:"phase"`
	Height    int32  `json:"height"`
	TipHeight int32  `json:"tipheight"`
	Rows      int64  `json:"rows"`
	// Result is the outcome of the last finished verification; Error says
	// why the last one could not complete.
	Result *VerifyIndexResult `json:"result,omitempty"`
	Error  string             `json:"error,omitempty"`
}

// VerifyIndexResult is the outcome of a verification.
type VerifyIndexResult struct {
	// OK is true when every stored row equals the row the chain gives.
	OK bool `json:"ok"`
	// Height and Hash are the index tip verified.
	Height int32  `json:"height"`
	Hash   string `json:"hash"`
	// Blocks and Txs are the blocks and transactions recomputed; Rows and
	// ExpectedRows the rows stored and the rows the chain gives.
	Blocks       int32  `json:"blocks"`
	Txs          uint64 `json:"txs"`
	Rows         int64  `json:"rows"`
	ExpectedRows int64  `json:"expectedrows"`
	// MismatchedPartitions counts the partitions of the tables that
	// differ; Differences lists the first differences.
	MismatchedPartitions int                     `json:"mismatchedpartitions"`
	Differences          []VerifyIndexDifference `json:"differences"`
	Seconds              float64                 `json:"seconds"`
}

// VerifyIndexDifference is one row on which the index and the chain
// disagree (see indexers.Difference).
type VerifyIndexDifference struct {
	Table    string `json:"table"`
	Kind     string `json:"kind"`
	Key      string `json:"key"`
	Stored   string `json:"stored,omitempty"`
	Expected string `json:"expected,omitempty"`
	// HashX is the short script hash of history and unspent rows.
	HashX  string `json:"hashx,omitempty"`
	Height int32  `json:"height"`
	Detail string `json:"detail,omitempty"`
}

// handleVerifyElectrumIndex answers verifyelectrumindex.
func handleVerifyElectrumIndex(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*VerifyElectrumIndexCmd)
	action := "start"
	if c.Action != nil {
		action = *c.Action
	}
	if action != "start" && action != "status" {
		return nil, &btcjson.RPCError{Code: btcjson.ErrRPCInvalidParameter,
			Message: fmt.Sprintf("action must be \"start\" or \"status\", not %q", action)}
	}
	v, ok := s.cfg.Backend.(IndexVerifier)
	if !ok {
		return nil, &btcjson.RPCError{Code: btcjson.ErrRPCMisc, Message: "this node cannot verify its index"}
	}
	info, err := v.VerifyIndex(action == "start")
	if err != nil {
		return nil, &btcjson.RPCError{Code: btcjson.ErrRPCMisc, Message: err.Error()}
	}
	return info, nil
}

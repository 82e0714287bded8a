package electrum

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// handlerFunc implements one method. args follow the method's parameter
// names (nil for an absent optional argument).
type handlerFunc func(ctx context.Context, ss *session, args []json.RawMessage) (any, error)

// method is one entry of the method table.
type method struct {
	spec paramSpec
	// spec16 replaces spec from protocol 1.6 on, when set.
	spec16 *paramSpec
	// since is the first version with the method; until, when set, the
	// first version without it.
	since, until protoVersion
	// cost is the ElectrumX cost of one call.
	cost    float64
	handler handlerFunc
	// mx are the method's request metrics, set by RegisterMetrics.
	mx *methodMetrics
}

// params returns the parameter spec at version v.
func (m *method) params(v protoVersion) paramSpec {
	if m.spec16 != nil && v.atLeast(version16) {
		return *m.spec16
	}
	return m.spec
}

// spec builds a paramSpec.
func spec(required int, names ...string) paramSpec {
	return paramSpec{names: names, required: required}
}

// methodTable lists every method of protocols 1.4 to 1.6 (docs/PROTOCOL.md §7).
func methodTable() map[string]*method {
	estimate16 := spec(1, "number", "mode")
	return map[string]*method{
		"blockchain.block.header":                  {spec: spec(1, "height", "cp_height"), since: version14, cost: 0.25, handler: hBlockHeader},
		"blockchain.block.headers":                 {spec: spec(2, "start_height", "count", "cp_height"), since: version14, cost: 1, handler: hBlockHeaders},
		"blockchain.estimatefee":                   {spec: spec(1, "number"), spec16: &estimate16, since: version14, cost: 0.1, handler: hEstimateFee},
		"blockchain.headers.subscribe":             {spec: spec(0), since: version14, cost: 0.25, handler: hHeadersSubscribe},
		"blockchain.relayfee":                      {spec: spec(0), since: version14, until: version16, cost: 1, handler: hRelayFee},
		"blockchain.scripthash.get_balance":        {spec: spec(1, "scripthash"), since: version14, cost: 1, handler: hGetBalance},
		"blockchain.scripthash.get_history":        {spec: spec(1, "scripthash"), since: version14, cost: 0.2, handler: hGetHistory},
		"blockchain.scripthash.get_mempool":        {spec: spec(1, "scripthash"), since: version14, cost: 0.25, handler: hGetMempool},
		"blockchain.scripthash.listunspent":        {spec: spec(1, "scripthash"), since: version14, cost: 1, handler: hListUnspent},
		"blockchain.scripthash.subscribe":          {spec: spec(1, "scripthash"), since: version14, cost: 1, handler: hSubscribe},
		"blockchain.scripthash.unsubscribe":        {spec: spec(1, "scripthash"), since: version142, cost: 0.1, handler: hUnsubscribe},
		"blockchain.transaction.broadcast":         {spec: spec(1, "raw_tx"), since: version14, cost: 0.25, handler: hBroadcast},
		"blockchain.transaction.broadcast_package": {spec: spec(1, "raw_txs", "verbose"), since: version16, cost: 0.5, handler: hBroadcastPackage},
		"blockchain.transaction.get":               {spec: spec(1, "tx_hash", "verbose"), since: version14, cost: 1, handler: hTxGet},
		"blockchain.transaction.get_merkle":        {spec: spec(2, "tx_hash", "height"), since: version14, cost: 0.25, handler: hTxGetMerkle},
		"blockchain.transaction.id_from_pos":       {spec: spec(2, "height", "tx_pos", "merkle"), since: version14, cost: 0.25, handler: hIDFromPos},
		"mempool.get_fee_histogram":                {spec: spec(0), since: version14, cost: 1, handler: hFeeHistogram},
		"mempool.get_info":                         {spec: spec(0), since: version16, cost: 1, handler: hMempoolInfo},
		"server.add_peer":                          {spec: spec(1, "features"), since: version14, cost: 100, handler: hAddPeer},
		"server.banner":                            {spec: spec(0), since: version14, cost: 0.5, handler: hBanner},
		"server.donation_address":                  {spec: spec(0), since: version14, cost: 0.1, handler: hDonation},
		"server.features":                          {spec: spec(0), since: version14, cost: 0.2, handler: hFeatures},
		"server.peers.subscribe":                   {spec: spec(0), since: version14, cost: 1, handler: hPeers},
		"server.ping":                              {spec: spec(0), since: version14, cost: 0.1, handler: hPing},
		"server.version":                           {spec: paramSpec{names: []string{"client_name", "protocol_version"}, extraOK: true}, since: version14, cost: 0.5, handler: hVersion},
	}
}

// argInt parses a non-negative integer argument.
func argInt(raw json.RawMessage, name string) (int64, error) {
	if raw == nil {
		return 0, badRequest("%s should be a non-negative integer", name)
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		return 0, badRequest("%s should be a non-negative integer", echo(raw))
	}
	v, err := n.Int64()
	if err != nil || v < 0 {
		return 0, badRequest("%s should be a non-negative integer", echo(raw))
	}
	return v, nil
}

// argOptInt parses an optional non-negative integer (default 0).
func argOptInt(raw json.RawMessage, name string) (int64, error) {
	if raw == nil {
		return 0, nil
	}
	return argInt(raw, name)
}

// argBool parses an optional boolean.
func argBool(raw json.RawMessage, def bool) (bool, error) {
	if raw == nil {
		return def, nil
	}
	// ElectrumX and Fulcrum take 1 and 0 too (Python's 1 == True).
	switch string(raw) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, badRequest("%s should be a boolean value", echo(raw))
}

// argString parses a string argument.
func argString(raw json.RawMessage, name string) (string, error) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return "", badRequest("%s should be a string", name)
	}
	return s, nil
}

// argScriptHash parses a script hash in Electrum hex.
func argScriptHash(raw json.RawMessage) (indexers.ScriptHash, error) {
	s, ok := simpleString(raw)
	if !ok && (raw == nil || json.Unmarshal(raw, &s) != nil) {
		return indexers.ScriptHash{}, badRequest("%s is not a valid script hash", echo(raw))
	}
	sh, err := indexers.ParseScriptHash(s)
	if err != nil {
		return sh, badRequest("%s is not a valid script hash", echo(s))
	}
	return sh, nil
}

// spelling returns the script hash argument raw (which parses to sh) as
// the client spelled it, or "" when sh.String() spells it so.
func spelling(raw json.RawMessage, sh indexers.ScriptHash) string {
	s, ok := simpleString(raw)
	if !ok {
		_ = json.Unmarshal(raw, &s)
	}
	if s == sh.String() {
		return ""
	}
	return s
}

// argTxHash parses a transaction hash in display hex.
func argTxHash(raw json.RawMessage) (chainhash.Hash, error) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return chainhash.Hash{}, badRequest("%s should be a transaction hash", echo(raw))
	}
	if len(s) != 64 {
		return chainhash.Hash{}, badRequest("%s should be a transaction hash", echo(s))
	}
	if _, err := hex.DecodeString(s); err != nil {
		return chainhash.Hash{}, badRequest("%s should be a transaction hash", echo(s))
	}
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		return chainhash.Hash{}, badRequest("%s should be a transaction hash", echo(s))
	}
	return *h, nil
}

// --- server.* ---------------------------------------------------------------

// hVersion negotiates the protocol version (docs/PROTOCOL.md §3). Only the first
// call is accepted; extra arguments are ignored.
func hVersion(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	if ss.negotiated.Load() {
		return nil, badRequest("server.version already sent")
	}
	if args[0] != nil {
		var name string
		if json.Unmarshal(args[0], &name) == nil {
			if len(name) > 100 {
				name = name[:100]
			}
			ss.clientName = name
		}
	}
	v, shown, ok := negotiateVersion(args[1])
	if !ok {
		return nil, badRequest("unsupported protocol version: %s", echo(shown))
	}
	ss.version = v
	ss.negotiated.Store(true)
	return []string{ss.srv.cfg.ServerVersion, v.String()}, nil
}

// hPing answers null.
func hPing(context.Context, *session, []json.RawMessage) (any, error) {
	return json.RawMessage("null"), nil
}

// hBanner returns the configured banner.
func hBanner(_ context.Context, ss *session, _ []json.RawMessage) (any, error) {
	return ss.srv.cfg.Banner, nil
}

// hDonation returns the donation address ("" when none).
func hDonation(_ context.Context, ss *session, _ []json.RawMessage) (any, error) {
	return ss.srv.cfg.DonationAddress, nil
}

// hPeers returns the known peers: none, since peer discovery is not run.
func hPeers(context.Context, *session, []json.RawMessage) (any, error) {
	return []any{}, nil
}

// hAddPeer declines peer announcements: the server does not discover or
// advertise peers.
func hAddPeer(_ context.Context, _ *session, args []json.RawMessage) (any, error) {
	if len(args[0]) == 0 || args[0][0] != '{' {
		return nil, badRequest("features should be an object")
	}
	return false, nil
}

// features is the server.features result.
type features struct {
	Hosts         map[string]HostPorts `json:"hosts"`
	GenesisHash   string               `json:"genesis_hash"`
	HashFunction  string               `json:"hash_function"`
	ServerVersion string               `json:"server_version"`
	ProtocolMin   string               `json:"protocol_min"`
	ProtocolMax   string               `json:"protocol_max"`
	Pruning       *int                 `json:"pruning"`
}

// hFeatures describes the server.
func hFeatures(_ context.Context, ss *session, _ []json.RawMessage) (any, error) {
	hosts := ss.srv.cfg.Hosts
	if hosts == nil {
		hosts = map[string]HostPorts{}
	}
	return features{
		Hosts:         hosts,
		GenesisHash:   ss.srv.backend.ChainParams().GenesisHash.String(),
		HashFunction:  "sha256",
		ServerVersion: ss.srv.cfg.ServerVersion,
		ProtocolMin:   protocolMin.String(),
		ProtocolMax:   protocolMax.String(),
	}, nil
}

// --- fees and mempool ------------------------------------------------------

// hEstimateFee returns the node's fee estimate in BTC/kvB or -1.
func hEstimateFee(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	n, err := argInt(args[0], "number")
	if err != nil {
		return nil, err
	}
	mode := ""
	if len(args) > 1 && args[1] != nil {
		if json.Unmarshal(args[1], &mode) != nil {
			return nil, badRequest("unknown estimatefee mode: %s", echo(args[1]))
		}
		mode = strings.ToUpper(mode)
		if mode != "CONSERVATIVE" && mode != "ECONOMICAL" {
			return nil, badRequest("unknown estimatefee mode: %s", echo(args[1]))
		}
	}
	fee, err := ss.srv.backend.EstimateFee(int(n), mode)
	if err != nil {
		return -1, nil
	}
	return fee, nil
}

// hRelayFee returns the minimum relay fee in BTC/kvB (before 1.6).
func hRelayFee(_ context.Context, ss *session, _ []json.RawMessage) (any, error) {
	return ss.srv.backend.RelayFee(), nil
}

// hFeeHistogram returns [fee rate, vsize] pairs, fee rate descending.
func hFeeHistogram(_ context.Context, ss *session, _ []json.RawMessage) (any, error) {
	h := ss.srv.backend.FeeHistogram()
	if h == nil {
		h = [][2]float64{}
	}
	return h, nil
}

// hMempoolInfo reports the mempool fee policy (1.6).
func hMempoolInfo(_ context.Context, ss *session, _ []json.RawMessage) (any, error) {
	mi := ss.srv.backend.MempoolInfo()
	return map[string]float64{
		"mempoolminfee":       mi.MempoolMinFee,
		"minrelaytxfee":       mi.MinRelayTxFee,
		"incrementalrelayfee": mi.IncrementalRelayFee,
	}, nil
}

// notFound reports whether err means "no such thing".
func notFound(err error) bool { return errors.Is(err, indexers.ErrNotFound) }

// heightError is the answer for a height above the tip.
func heightError(h int64) error { return badRequest("height %d out of range", h) }

// internal wraps an unexpected backend error.
func internal(what string, err error) error { return fmt.Errorf("%s: %w", what, err) }

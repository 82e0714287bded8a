package rpcext

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/txscript/v2"
)

// The operator's Electrum commands. They are JSON-RPC methods of this
// server only, so they need its credentials and are never reachable through
// the Electrum ports. The command types are registered with btcjson, so
// btcjson.NewCmd and rpcclient's RawRequest know them in any program that
// imports this package (cmd/btcd-electrum-ctl does).

// Method names of the operator's Electrum commands.
const (
	GetElectrumSessionsMethod       = "getelectrumsessions"
	DisconnectElectrumSessionMethod = "disconnectelectrumsession"
	GetScriptHashInfoMethod         = "getscripthashinfo"
	ReloadElectrumTLSMethod         = "reloadelectrumtls"
)

// GetElectrumSessionsCmd lists the Electrum sessions (no parameters).
type GetElectrumSessionsCmd struct{}

// DisconnectElectrumSessionCmd closes the Electrum session with the id
// getelectrumsessions shows.
type DisconnectElectrumSessionCmd struct {
	ID uint64
}

// GetScriptHashInfoCmd describes a script hash (64 hex digits, as Electrum
// wallets send it) or the script of an address on the node's network.
type GetScriptHashInfoCmd struct {
	ScriptHashOrAddress string
}

// ReloadElectrumTLSCmd reads the Electrum TLS certificate and key files
// again (no parameters).
type ReloadElectrumTLSCmd struct{}

func init() {
	btcjson.MustRegisterCmd(GetElectrumSessionsMethod, (*GetElectrumSessionsCmd)(nil), 0)
	btcjson.MustRegisterCmd(DisconnectElectrumSessionMethod, (*DisconnectElectrumSessionCmd)(nil), 0)
	btcjson.MustRegisterCmd(GetScriptHashInfoMethod, (*GetScriptHashInfoCmd)(nil), 0)
	btcjson.MustRegisterCmd(ReloadElectrumTLSMethod, (*ReloadElectrumTLSCmd)(nil), 0)
}

// adminMethods are the operator's Electrum commands, added to methods.
var adminMethods = map[string]method{
	GetElectrumSessionsMethod:       {handleGetElectrumSessions, "Lists the Electrum sessions: id, address, transport, client name, protocol, subscriptions, cost, bytes and age."},
	DisconnectElectrumSessionMethod: {handleDisconnectElectrumSession, "Closes the Electrum session with the given id (from getelectrumsessions)."},
	GetScriptHashInfoMethod:         {handleGetScriptHashInfo, "Describes a script hash (or an address's script) as Electrum wallets see it: history length, unspent count, balances, status, subscribers."},
	ReloadElectrumTLSMethod:         {handleReloadElectrumTLS, "Reads the Electrum TLS certificate and key files again; open sessions are kept, and a pair that does not load leaves the one in use."},
}

// ElectrumAdmin is what the operator's Electrum commands need from the
// node's Electrum server.
type ElectrumAdmin interface {
	// Sessions describes every open session.
	Sessions() []ElectrumSession
	// DisconnectSession closes one session; ErrNoSession when there is
	// none with that id.
	DisconnectSession(id uint64) error
	// ScriptHashInfo describes one script hash, given in the hex
	// Electrum wallets send (SHA-256 of the script, byte order reversed).
	ScriptHashInfo(scriptHash string) (*ScriptHashInfo, error)
	// ReloadTLS reads the certificate and key again and describes the
	// certificate in use afterwards (the old one when the error is set).
	ReloadTLS() (*TLSCertificate, error)
}

// ErrNoSession is what ElectrumAdmin.DisconnectSession returns for an
// unknown id.
var ErrNoSession = errors.New("no Electrum session with that id")

// ElectrumSession is one entry of getelectrumsessions.
type ElectrumSession struct {
	ID                uint64   `json:"id"`
	Address           string   `json:"address"`
	Transport         string   `json:"transport"`
	ClientName        string   `json:"clientname"`
	Protocol          string   `json:"protocol"`
	Subscriptions     int      `json:"subscriptions"`
	HeadersSubscribed bool     `json:"headerssubscribed"`
	Cost              float64  `json:"cost"`
	GroupCost         *float64 `json:"groupcost,omitempty"`
	Exempt            bool     `json:"exempt"`
	BytesIn           uint64   `json:"bytesin"`
	BytesOut          uint64   `json:"bytesout"`
	AgeSeconds        float64  `json:"ageseconds"`
}

// ScriptHashInfo is the result of getscripthashinfo.
type ScriptHashInfo struct {
	ScriptHash         string  `json:"scripthash"`
	IndexHeight        int32   `json:"indexheight"`
	HistoryLength      int     `json:"historylength"`
	Confirmed          int     `json:"confirmed"`
	Mempool            int     `json:"mempool"`
	UnspentCount       int     `json:"unspentcount"`
	ConfirmedBalance   int64   `json:"confirmedbalance"`
	UnconfirmedBalance int64   `json:"unconfirmedbalance"`
	Status             *string `json:"status"`
	TooLarge           bool    `json:"toolarge"`
	Subscribers        int     `json:"subscribers"`
}

// TLSCertificate is the result of reloadelectrumtls.
type TLSCertificate struct {
	CertFile string    `json:"certfile"`
	KeyFile  string    `json:"keyfile"`
	Subject  string    `json:"subject"`
	NotAfter time.Time `json:"notafter"`
	SHA256   string    `json:"sha256"`
}

// electrumAdmin returns the Electrum server's admin side or the error to
// answer with.
func (s *Server) electrumAdmin() (ElectrumAdmin, error) {
	if !s.authOn {
		// Configured without credentials (not the node's case: it runs
		// no RPC server then): the commands stay off.
		return nil, btcjson.NewRPCError(btcjson.ErrRPCMisc, "Electrum admin commands need RPC credentials")
	}
	if s.cfg.ElectrumAdmin == nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCMisc, "no Electrum server (start the node with --electrumindex)")
	}
	return s.cfg.ElectrumAdmin, nil
}

// handleGetElectrumSessions answers getelectrumsessions.
func handleGetElectrumSessions(s *Server, _ interface{}) (interface{}, error) {
	a, err := s.electrumAdmin()
	if err != nil {
		return nil, err
	}
	list := a.Sessions()
	if list == nil {
		list = []ElectrumSession{}
	}
	return list, nil
}

// handleDisconnectElectrumSession answers disconnectelectrumsession.
func handleDisconnectElectrumSession(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*DisconnectElectrumSessionCmd)
	a, err := s.electrumAdmin()
	if err != nil {
		return nil, err
	}
	if err := a.DisconnectSession(c.ID); err != nil {
		if errors.Is(err, ErrNoSession) {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, "No Electrum session with id "+strconv.FormatUint(c.ID, 10))
		}
		return nil, err
	}
	return nil, nil
}

// handleGetScriptHashInfo answers getscripthashinfo.
func handleGetScriptHashInfo(s *Server, cmd interface{}) (interface{}, error) {
	c := cmd.(*GetScriptHashInfoCmd)
	a, err := s.electrumAdmin()
	if err != nil {
		return nil, err
	}
	sh, err := s.parseScriptHash(c.ScriptHashOrAddress)
	if err != nil {
		return nil, err
	}
	return a.ScriptHashInfo(sh)
}

// parseScriptHash returns a script hash in the hex Electrum uses (SHA-256
// of the script, byte order reversed): v itself when it is 64 hex digits,
// or the hash of the script of v as an address on the node's network.
func (s *Server) parseScriptHash(v string) (string, error) {
	if b, err := hex.DecodeString(v); err == nil && len(b) == sha256.Size {
		return v, nil
	}
	addr, err := address.DecodeAddress(v, s.cfg.Params)
	if err != nil || !addr.IsForNet(s.cfg.Params) {
		return "", btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter,
			"Not a script hash (64 hex digits) or an address on "+s.cfg.Params.Name+": "+v)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		return "", btcjson.NewRPCError(btcjson.ErrRPCInvalidParameter, err.Error())
	}
	sum := sha256.Sum256(script)
	slices.Reverse(sum[:])
	return hex.EncodeToString(sum[:]), nil
}

// handleReloadElectrumTLS answers reloadelectrumtls.
func handleReloadElectrumTLS(s *Server, _ interface{}) (interface{}, error) {
	a, err := s.electrumAdmin()
	if err != nil {
		return nil, err
	}
	cert, err := a.ReloadTLS()
	if err != nil {
		msg := err.Error()
		if cert != nil {
			msg += " (still using the certificate valid until " + cert.NotAfter.Format(time.RFC3339) + ", sha256 " + cert.SHA256 + ")"
		}
		return nil, btcjson.NewRPCError(btcjson.ErrRPCMisc, msg)
	}
	return cert, nil
}

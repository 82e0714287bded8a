package node

import (
	"errors"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// electrumAdmin serves the operator's Electrum RPC commands
// (rpcext.ElectrumAdmin) from the node's Electrum server.
type electrumAdmin struct{ s *servers }

var _ rpcext.ElectrumAdmin = electrumAdmin{}

// server returns the Electrum server, which exists once setupServers ran.
func (a electrumAdmin) server() (*electrum.Server, error) {
	if a.s.electrum == nil {
		return nil, errors.New("the Electrum server is not running")
	}
	return a.s.electrum, nil
}

// Sessions describes the open sessions.
func (a electrumAdmin) Sessions() []rpcext.ElectrumSession {
	srv, err := a.server()
	if err != nil {
		return nil
	}
	list := srv.Sessions()
	out := make([]rpcext.ElectrumSession, len(list))
	for i, s := range list {
		out[i] = rpcext.ElectrumSession{
			ID: s.ID, Address: s.Address, Transport: s.Transport, ClientName: s.ClientName,
			Protocol: s.Protocol, Subscriptions: s.Subscriptions, HeadersSubscribed: s.HeadersSubscribed,
			Cost: s.Cost, GroupCost: s.GroupCost, Exempt: s.Exempt, BytesIn: s.BytesIn, BytesOut: s.BytesOut,
			AgeSeconds: s.AgeSeconds,
		}
	}
	return out
}

// DisconnectSession closes one session.
func (a electrumAdmin) DisconnectSession(id uint64) error {
	srv, err := a.server()
	if err != nil {
		return err
	}
	if err := srv.DisconnectSession(id); errors.Is(err, electrum.ErrNoSession) {
		return rpcext.ErrNoSession
	} else if err != nil {
		return err
	}
	return nil
}

// ScriptHashInfo describes one script hash.
func (a electrumAdmin) ScriptHashInfo(scriptHash string) (*rpcext.ScriptHashInfo, error) {
	srv, err := a.server()
	if err != nil {
		return nil, err
	}
	sh, err := indexers.ParseScriptHash(scriptHash)
	if err != nil {
		return nil, err
	}
	i, err := srv.ScriptHashInfo(sh)
	if err != nil {
		return nil, err
	}
	return &rpcext.ScriptHashInfo{
		ScriptHash: i.ScriptHash, IndexHeight: i.IndexHeight, HistoryLength: i.HistoryLength,
		Confirmed: i.Confirmed, Mempool: i.Mempool, UnspentCount: i.UnspentCount,
		ConfirmedBalance: i.ConfirmedBalance, UnconfirmedBalance: i.UnconfirmedBalance,
		Status: i.Status, TooLarge: i.TooLarge, Subscribers: i.Subscribers,
	}, nil
}

// ReloadTLS reloads the Electrum TLS certificate.
func (a electrumAdmin) ReloadTLS() (*rpcext.TLSCertificate, error) {
	srv, err := a.server()
	if err != nil {
		return nil, err
	}
	info, err := srv.ReloadTLS()
	if errors.Is(err, electrum.ErrNoTLS) {
		return nil, errors.New("no TLS listener (--electrumtlslisten, --electrumwsslisten, --esploratlslisten)")
	}
	cert := &rpcext.TLSCertificate{CertFile: info.CertFile, KeyFile: info.KeyFile, Subject: info.Subject,
		NotAfter: info.NotAfter, SHA256: info.SHA256}
	return cert, err
}

// ReloadElectrumTLS reads the Electrum TLS certificate and key files again
// (the binary calls it on SIGHUP). Open sessions are kept; a pair that does
// not load leaves the one in use, and the error says why.
func (n *Node) ReloadElectrumTLS() (electrum.CertificateInfo, error) {
	if n.srv == nil || n.srv.electrum == nil {
		return electrum.CertificateInfo{}, errors.New("no Electrum server")
	}
	return n.srv.electrum.ReloadTLS()
}

package electrum

import (
	"errors"
	"sort"
	"time"

	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcsuite/btcd/wire/v2"
)

// What an operator can see and do with the sessions: list them, close
// one, and look at a script hash the way a wallet sees it. The node serves
// these over its authenticated JSON-RPC port (getelectrumsessions,
// disconnectelectrumsession, getscripthashinfo), never over the Electrum
// ports.

// SessionInfo describes one session.
type SessionInfo struct {
	ID        uint64 `json:"id"`
	Address   string `json:"address"`
	Transport string `json:"transport"`
	// ClientName and Protocol are what server.version negotiated (empty
	// before it).
	ClientName string `json:"clientname"`
	Protocol   string `json:"protocol"`
	// Subscriptions counts the session's script hash subscriptions;
	// HeadersSubscribed tells whether it follows new headers.
	Subscriptions     int  `json:"subscriptions"`
	HeadersSubscribed bool `json:"headerssubscribed"`
	// Cost is the session's own decayed cost; GroupCost its subnet's
	// (absent for exempt sessions).
	Cost      float64  `json:"cost"`
	GroupCost *float64 `json:"groupcost,omitempty"`
	Exempt    bool     `json:"exempt"`
	BytesIn   uint64   `json:"bytesin"`
	BytesOut  uint64   `json:"bytesout"`
	// AgeSeconds is how long the session has been connected.
	AgeSeconds float64 `json:"ageseconds"`
}

// Sessions describes every open session, oldest first.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		list = append(list, ss)
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	now := time.Now()
	out := make([]SessionInfo, 0, len(list))
	for _, ss := range list {
		info := SessionInfo{
			ID:            ss.id,
			Address:       ss.remote,
			Transport:     ss.transport.String(),
			Subscriptions: int(ss.nsubs.Load()),
			Cost:          ss.ownCost(),
			Exempt:        ss.exempt,
			BytesIn:       ss.bytesIn.Load(),
			BytesOut:      ss.bytesOut.Load(),
			AgeSeconds:    now.Sub(ss.started).Seconds(),
		}
		// version and clientName are written before negotiated is set
		// and never after.
		if ss.negotiated.Load() {
			info.ClientName, info.Protocol = ss.clientName, ss.version.String()
		}
		ss.subMu.Lock()
		info.HeadersSubscribed = ss.headersSub
		ss.subMu.Unlock()
		if ss.group != nil {
			gc := ss.group.current(now, s.cfg.groupDecay())
			info.GroupCost = &gc
		}
		out = append(out, info)
	}
	return out
}

// ErrNoSession is returned by DisconnectSession for an unknown session id.
var ErrNoSession = errors.New("electrum: no such session")

// DisconnectSession closes the session with the given id.
func (s *Server) DisconnectSession(id uint64) error {
	s.mu.Lock()
	var found *session
	for ss := range s.sessions {
		if ss.id == id {
			found = ss
			break
		}
	}
	s.mu.Unlock()
	if found == nil {
		return ErrNoSession
	}
	s.logf("electrum: session %d (%s) disconnected by the operator", found.id, found.remote)
	found.setCloseReason(DisconnectAdmin)
	found.close()
	return nil
}

// ScriptHashInfo is what the server would tell a wallet about one script
// hash, for diagnosing a user's complaint.
type ScriptHashInfo struct {
	ScriptHash string `json:"scripthash"`
	// IndexHeight is the index tip the confirmed part was read at.
	IndexHeight int32 `json:"indexheight"`
	// HistoryLength counts confirmed and mempool entries; Confirmed and
	// Mempool split it.
	HistoryLength int `json:"historylength"`
	Confirmed     int `json:"confirmed"`
	Mempool       int `json:"mempool"`
	// UnspentCount counts confirmed and mempool outputs not spent in the
	// mempool, as listunspent would return them.
	UnspentCount int `json:"unspentcount"`
	// ConfirmedBalance and UnconfirmedBalance are get_balance's answer in
	// satoshis.
	ConfirmedBalance   int64 `json:"confirmedbalance"`
	UnconfirmedBalance int64 `json:"unconfirmedbalance"`
	// Status is the subscription status (null for an empty history).
	Status *string `json:"status"`
	// TooLarge is set when wallets get "history too large" for this
	// script: its history exceeds what --electrummaxsend allows.
	TooLarge bool `json:"toolarge"`
	// Subscribers counts the sessions subscribed to it.
	Subscribers int `json:"subscribers"`
}

// ScriptHashInfo reads everything about sh without the limits wallets get
// (an operator may look at a script whose history is too large to serve).
func (s *Server) ScriptHashInfo(sh indexers.ScriptHash) (ScriptHashInfo, error) {
	b := s.backend
	info := ScriptHashInfo{ScriptHash: sh.String()}
	hasher, tip, err := b.Status(sh, 0)
	if err != nil {
		return info, err
	}
	info.IndexHeight = tip.Height
	es := s.mempoolEntries(sh)
	for _, e := range es {
		hasher.Add(e.TxHash, e.Height)
	}
	info.Confirmed, info.Mempool = hasher.Len()-len(es), len(es)
	info.HistoryLength = hasher.Len()
	info.Status = statusHex(hasher.Sum())
	info.TooLarge = info.HistoryLength > s.cfg.historyLimit()

	utxos, _, err := b.Unspent(sh, 0)
	if err != nil {
		return info, err
	}
	for i := range utxos {
		if !b.MempoolIsSpent(wire.OutPoint{Hash: utxos[i].TxHash, Index: utxos[i].Vout}) {
			info.UnspentCount++
		}
	}
	info.UnspentCount += len(b.MempoolUnspent(sh))
	if _, info.ConfirmedBalance, _, err = b.Balance(sh); err != nil {
		return info, err
	}
	info.UnconfirmedBalance = b.MempoolBalance(sh)

	n := s.notifier
	n.rmu.RLock()
	info.Subscribers = len(n.byHash[sh])
	n.rmu.RUnlock()
	return info, nil
}

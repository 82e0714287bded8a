package rpcext

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/btcsuite/btcd/btcjson"
)

// limitedMethods are the methods btcd's limited RPC user (--rpclimituser)
// may call: btcd v0.26.2's list (reading the chain and the mempool,
// submitting transactions and blocks, websocket notifications), of which
// this server answers those it implements. Everything else (peer control,
// stop, mining, the faucet, the Electrum extensions and any method added
// later) needs the full user. It is an allow-list, so a new administrative
// method is closed to the limited user without being listed here.
var limitedMethods = map[string]struct{}{
	"loadtxfilter": {}, "notifyblocks": {}, "notifynewtransactions": {}, "notifyreceived": {},
	"notifyspent": {}, "rescan": {}, "rescanblocks": {}, "session": {}, "authenticate": {},
	"help":                 {},
	"createrawtransaction": {}, "decoderawtransaction": {}, "decodescript": {}, "estimatefee": {},
	"getbestblock": {}, "getbestblockhash": {}, "getblock": {}, "getblockcount": {},
	"getblockhash": {}, "getblockheader": {}, "getchaintips": {}, "getcfilter": {},
	"getcfilterheader": {}, "getcurrentnet": {}, "getdifficulty": {}, "getheaders": {},
	"getinfo": {}, "getnettotals": {}, "getnetworkhashps": {}, "getrawmempool": {},
	"getrawtransaction": {}, "gettxout": {}, "invalidateblock": {}, "reconsiderblock": {},
	"searchrawtransactions": {}, "sendrawtransaction": {}, "submitblock": {}, "uptime": {},
	"validateaddress": {}, "verifymessage": {}, "version": {},
}

// limitedAllowed reports whether the limited user may call method.
func limitedAllowed(method string) bool {
	_, ok := limitedMethods[method]
	return ok
}

// errLimitedUser is btcd's answer to the limited user calling another
// method over HTTP, errLimitedUserWS over a websocket.
var (
	errLimitedUser   = btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "limited user not authorized for this method")
	errLimitedUserWS = btcjson.NewRPCError(btcjson.ErrRPCInvalidParams.Code, "limited user not authorized for this method")
)

// checkAuthLevel reports whether r carries the full or the limited user's
// basic-auth credentials (ok), and which (limited).
func (s *Server) checkAuthLevel(r *http.Request) (ok, limited bool) {
	if !s.authOn {
		return true, false
	}
	user, pass, has := r.BasicAuth()
	if !has {
		return false, false
	}
	return s.credentialsLevel(user, pass)
}

// credentialsLevel compares credentials in constant time against the full
// user's and the limited user's.
func (s *Server) credentialsLevel(user, pass string) (ok, limited bool) {
	if s.credentialsMatch(user, pass) && (s.cfg.User != "" || s.cfg.Pass != "") {
		return true, false
	}
	if !s.limitOn {
		return false, false
	}
	u := sha256.Sum256([]byte(user))
	p := sha256.Sum256([]byte(pass))
	okU := subtle.ConstantTimeCompare(u[:], s.limitUser[:])
	okP := subtle.ConstantTimeCompare(p[:], s.limitPass[:])
	if okU&okP == 1 {
		return true, true
	}
	return false, false
}

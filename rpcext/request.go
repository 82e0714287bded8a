package rpcext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/btcsuite/btcd/btcjson"
)

// DefaultMaxBatchRequests bounds the number of requests in one batch unless
// Config.MaxBatchRequests says otherwise.
const DefaultMaxBatchRequests = 1000

// maxAnswerBytes bounds one answer, a batch's answers together, over HTTP
// and websockets: the bound on what may wait for a websocket client, so an
// answer fits a client's empty queue.
const maxAnswerBytes = wsMaxQueuedBytes

// rawRequest is a JSON-RPC request as it arrives. Unlike btcjson.Request it
// keeps "id" raw, so an absent id can be told from a null one, and accepts
// a missing "jsonrpc" or "params".
type rawRequest struct {
	Jsonrpc string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      json.RawMessage `json:"id"`
}

// processBody answers a request body (one request or a batch). It returns
// nil when nothing is to be sent back (only notifications). wsc is the
// websocket client the body came from, or nil for HTTP.
func (s *Server) processBody(body []byte, wsc *wsClient) []byte {
	var gone <-chan struct{}
	if wsc != nil {
		gone = wsc.quit
	}
	return s.processBodyAs(body, wsc, wsc != nil && wsc.limited, gone)
}

// processBodyAs is processBody for a client authenticated as the limited
// user (limited) or not; gone closes when the client has gone (a long poll
// then ends).
func (s *Server) processBodyAs(body []byte, wsc *wsClient, limited bool, gone <-chan struct{}) []byte {
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		// As btcd: the decoder's words, a batch answered in JSON-RPC 2.0.
		var v any
		err := json.Unmarshal(trimmed, &v)
		version := btcjson.RpcVersion1
		if len(trimmed) > 0 && trimmed[0] == '[' {
			version = btcjson.RpcVersion2
		}
		return marshalReply(version, nil, nil,
			btcjson.NewRPCError(btcjson.ErrRPCParse.Code, "Failed to parse request: "+err.Error()))
	}
	if len(trimmed) == 0 || trimmed[0] != '[' {
		reply := s.processRequest(trimmed, wsc, limited, gone)
		if len(reply) > maxAnswerBytes {
			return tooLargeReply(trimmed)
		}
		return reply
	}

	var batch []json.RawMessage
	if err := json.Unmarshal(trimmed, &batch); err != nil {
		return marshalReply(btcjson.RpcVersion2, nil, nil,
			btcjson.NewRPCError(btcjson.ErrRPCParse.Code, "Failed to parse request: "+err.Error()))
	}
	if len(batch) == 0 {
		return marshalReply(btcjson.RpcVersion2, nil, nil,
			btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code, "Invalid request: empty batch"))
	}
	if len(batch) > s.cfg.MaxBatchRequests {
		return marshalReply(btcjson.RpcVersion2, nil, nil,
			btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code,
				fmt.Sprintf("Invalid request: batch of %d requests exceeds %d", len(batch), s.cfg.MaxBatchRequests)))
	}
	// The answers count against maxAnswerBytes as they are made, each
	// with its comma, the brackets as one more byte. From the member
	// whose answer would take them past it, the members are not run but
	// answered tooLargeReply.
	var (
		out   [][]byte
		from  []json.RawMessage // the member of each answer
		total = 1
		over  bool
	)
	for _, raw := range batch {
		var reply []byte
		if !over {
			reply = s.processRequest(raw, wsc, limited, gone)
			over = total+len(reply)+1 > maxAnswerBytes
		}
		if over {
			reply = tooLargeReply(raw)
		}
		if reply == nil {
			continue
		}
		out, from = append(out, reply), append(from, raw)
		total += len(reply) + 1
	}
	if len(out) == 0 {
		return nil
	}
	if total > maxAnswerBytes {
		// The errors took the answers past the bound: the largest
		// answers give way to their errors until they fit, or, when even
		// the errors do not (ids of many KiB), one error answers the
		// batch.
		order := make([]int, len(out))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return len(out[b]) - len(out[a]) })
		for _, i := range order {
			if total <= maxAnswerBytes {
				break
			}
			if e := tooLargeReply(from[i]); len(e) < len(out[i]) {
				total += len(e) - len(out[i])
				out[i] = e
			}
		}
		if total > maxAnswerBytes {
			return marshalReply(btcjson.RpcVersion2, nil, nil, errAnswerTooLarge)
		}
	}
	// One copy, the answers let go as they are copied.
	answer := make([]byte, 0, total)
	for i, reply := range out {
		if i == 0 {
			answer = append(answer, '[')
		} else {
			answer = append(answer, ',')
		}
		answer = append(answer, reply...)
		out[i] = nil
	}
	return append(answer, ']')
}

// errAnswerTooLarge answers a request whose answer would take its answer,
// or its batch's, past maxAnswerBytes.
var errAnswerTooLarge = btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code,
	fmt.Sprintf("response too large (over %d bytes)", maxAnswerBytes))

// tooLargeReply answers the request raw with errAnswerTooLarge: nil for a
// JSON-RPC 2.0 notification, which has no answer.
func tooLargeReply(raw json.RawMessage) []byte {
	var req rawRequest
	if json.Unmarshal(raw, &req) != nil {
		return marshalReply(btcjson.RpcVersion1, nil, nil, errAnswerTooLarge)
	}
	ver := btcjson.RpcVersion1
	if req.Jsonrpc == string(btcjson.RpcVersion2) {
		ver = btcjson.RpcVersion2
	}
	if len(req.ID) == 0 && ver == btcjson.RpcVersion2 {
		return nil
	}
	var id interface{}
	if len(req.ID) != 0 && (json.Unmarshal(req.ID, &id) != nil || !btcjson.IsValidIDType(id)) {
		id = nil
	}
	return marshalReply(ver, id, nil, errAnswerTooLarge)
}

// processRequest answers one request object. It returns nil for a JSON-RPC
// 2.0 notification (no "id"), which is executed but not answered.
func (s *Server) processRequest(raw json.RawMessage, wsc *wsClient, limited bool, gone <-chan struct{}) []byte {
	var req rawRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return marshalReply(btcjson.RpcVersion1, nil, nil,
			btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code, "Invalid request: "+err.Error()))
	}

	ver := btcjson.RpcVersion1
	if req.Jsonrpc == string(btcjson.RpcVersion2) {
		ver = btcjson.RpcVersion2
	}
	noReply := len(req.ID) == 0 && ver == btcjson.RpcVersion2

	var id interface{}
	if len(req.ID) != 0 {
		if err := json.Unmarshal(req.ID, &id); err != nil || !btcjson.IsValidIDType(id) {
			return marshalReply(ver, nil, nil,
				btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code, "Invalid request: id must be a string, number or null"))
		}
	}

	result, rpcErr := s.execute(ver, id, &req, wsc, limited, gone)
	if noReply {
		return nil
	}
	return marshalReply(ver, id, result, rpcErr)
}

// execute parses and runs one request.
func (s *Server) execute(ver btcjson.RPCVersion, id interface{}, req *rawRequest,
	wsc *wsClient, limited bool, gone <-chan struct{}) (interface{}, *btcjson.RPCError) {

	if req.Method == "" {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidRequest.Code, "Invalid request: missing method")
	}
	params, rpcErr := parseParams(req.Params)
	if rpcErr != nil {
		return nil, rpcErr
	}

	parse := func() (interface{}, *btcjson.RPCError) {
		cmd, err := btcjson.UnmarshalCmd(&btcjson.Request{
			Jsonrpc: ver, Method: req.Method, Params: params, ID: id,
		})
		if err != nil {
			var jerr btcjson.Error
			if errors.As(err, &jerr) && jerr.ErrorCode == btcjson.ErrUnregisteredMethod {
				return nil, btcjson.ErrRPCMethodNotFound
			}
			return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParams.Code, err.Error())
		}
		return cmd, nil
	}
	// As btcd: over HTTP the limited user's permission first, then the
	// method; over a websocket the command is parsed first, so a method
	// btcjson does not know, or wrong parameters, are answered as such.
	if limited && !limitedAllowed(req.Method) {
		if wsc == nil {
			return nil, errLimitedUser
		}
		if _, perr := parse(); perr != nil {
			return nil, perr
		}
		return nil, errLimitedUserWS
	}
	m, ok := methods[req.Method]
	var wsm wsMethod
	if !ok {
		wsm, ok = wsMethods[req.Method]
		// As btcd: the parameters of a method btcjson knows are checked
		// before it is refused.
		if !ok || wsc == nil {
			if _, perr := parse(); perr != nil {
				return nil, perr
			}
		}
		if !ok {
			return nil, notServed(req.Method)
		}
		if wsc == nil {
			return nil, btcjson.NewRPCError(btcjson.ErrRPCMethodNotFound.Code,
				"Method not found: "+req.Method+" is only available over websockets")
		}
	}

	cmd, perr := parse()
	if perr != nil {
		return nil, perr
	}

	var result interface{}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Errorf("RPC %s panicked: %v\n%s", req.Method, p, debug.Stack())
				err = fmt.Errorf("internal error handling %s", req.Method)
			}
		}()
		waiting := waitingMethods[req.Method]
		switch {
		case wsm != nil:
			result, err = wsm(wsc, cmd)
		case waiting != nil:
			result, err = waiting(s, cmd, gone)
		default:
			result, err = m.handler(s, cmd)
		}
		return err
	}()
	if err != nil {
		return nil, toRPCError(err)
	}
	return result, nil
}

// unimplemented are the methods btcd answers "Command unimplemented",
// which this server does not serve either.
var unimplemented = map[string]bool{"estimatepriority": true, "getmempoolentry": true,
	"getnetworkinfo": true, "getwork": true, "preciousblock": true}

// askWallet are the methods btcd answers as a node without a wallet. Its
// list, not btcjson's wallet flag: a client probing for a method (ElectrumX
// for estimatesmartfee) takes any answer but "Method not found" for one
// the node has.
var askWallet = map[string]bool{}

func init() {
	for _, m := range strings.Fields(`addmultisigaddress backupwallet createencryptedwallet createmultisig
		dumpprivkey dumpwallet encryptwallet getaccount getaccountaddress getaddressesbyaccount getbalance
		getnewaddress getrawchangeaddress getreceivedbyaccount getreceivedbyaddress gettransaction
		gettxoutsetinfo getunconfirmedbalance getwalletinfo importprivkey importwallet keypoolrefill
		listaccounts listaddressgroupings listlockunspent listreceivedbyaccount listreceivedbyaddress
		listsinceblock listtransactions listunspent lockunspent move sendfrom sendmany sendtoaddress
		setaccount settxfee signmessage signrawtransaction walletlock walletpassphrase
		walletpassphrasechange`) {
		askWallet[m] = true
	}
}

// notServed is btcd's answer to a method the server does not serve: a
// wallet command is answered as by a node without a wallet.
func notServed(method string) *btcjson.RPCError {
	if askWallet[method] {
		return btcjson.NewRPCError(btcjson.ErrRPCNoWallet, "This implementation does not implement wallet commands")
	}
	if unimplemented[method] {
		return btcjson.NewRPCError(btcjson.ErrRPCUnimplemented, "Command unimplemented")
	}
	return btcjson.ErrRPCMethodNotFound
}

// parseParams accepts a positional parameter array, or nothing (absent or
// null) for no parameters.
func parseParams(raw json.RawMessage) ([]json.RawMessage, *btcjson.RPCError) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return []json.RawMessage{}, nil
	}
	if t[0] != '[' {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParams.Code,
			"Invalid params: params must be an array (named parameters are not supported)")
	}
	var params []json.RawMessage
	if err := json.Unmarshal(t, &params); err != nil {
		return nil, btcjson.NewRPCError(btcjson.ErrRPCInvalidParams.Code, "Invalid params: "+err.Error())
	}
	return params, nil
}

// toRPCError passes RPC errors through and reports anything else as an
// internal error carrying its message.
func toRPCError(err error) *btcjson.RPCError {
	var rpcErr *btcjson.RPCError
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	return btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, err.Error())
}

// marshalReply encodes a response; a result that cannot be encoded becomes
// an internal error.
func marshalReply(ver btcjson.RPCVersion, id, result interface{}, rpcErr *btcjson.RPCError) []byte {
	if rpcErr != nil {
		result = nil
	}
	b, err := btcjson.MarshalResponse(ver, id, result, rpcErr)
	if err != nil {
		log.Errorf("Failed to marshal reply: %v", err)
		b, _ = btcjson.MarshalResponse(ver, id, nil,
			btcjson.NewRPCError(btcjson.ErrRPCInternal.Code, "failed to encode result"))
	}
	return b
}

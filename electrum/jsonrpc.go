package electrum

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// JSON-RPC and Electrum error codes (docs/PROTOCOL.md §2.3).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	codeExcessiveUsage = -101
	codeServerBusy     = -102
	codeBadRequest     = 1
	codeDaemonError    = 2
	codeLimitExceeded  = 4
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error implements error.
func (e *RPCError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// rpcErrorf builds an RPCError.
func rpcErrorf(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// maxEcho bounds the client input an error message repeats (a method name,
// an argument): a repeated megabyte, six times as long once JSON escapes
// its '<' and '>', made an answer many times the size of its request.
const maxEcho = 100

// echo returns client input for an error message, cut to maxEcho bytes at
// the start of a character and marked "..." when cut.
func echo[T ~string | ~[]byte](s T) string {
	if len(s) <= maxEcho {
		return string(s)
	}
	n := maxEcho
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return string(s[:n]) + "..."
}

// badRequest is the application error (code 1) used for invalid arguments.
func badRequest(format string, args ...any) *RPCError {
	return rpcErrorf(codeBadRequest, format, args...)
}

// request is one decoded JSON-RPC request or notification.
type request struct {
	// v2 is true when the message said "jsonrpc": "2.0".
	v2 bool
	// id is the raw id; nil for a notification.
	id json.RawMessage
	// method is the method name.
	method string
	// params is the raw params value (array, object or absent).
	params json.RawMessage
	// err is set when the message is not a valid request; it is answered
	// with this error and id (null when unknown).
	err *RPCError
	// isResponse marks a message from the client that is a response (it
	// has result or error and no method); it is ignored.
	isResponse bool
	// failed is set once the request was counted as answered with an
	// error (session.call).
	failed bool
	// undo, set by session.call, runs instead of the answer's after
	// function when the answer is replaced with an error: it undoes a
	// subscription the client is told failed (session.tooLarge says when).
	undo func()
}

// isNotification reports whether no response is expected.
func (r *request) isNotification() bool { return r.id == nil && r.err == nil }

// wireRequest is the JSON shape of a request.
type wireRequest struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// message is one decoded frame: a single request or a batch.
type message struct {
	batch    bool
	requests []*request
	// err is a frame-level error (parse error, empty batch) answered with
	// a single error response with id null.
	err *RPCError
	// size is the number of members of a batch. A batch over the limit
	// given to decodeMessageLimit has only its first member decoded (for
	// the server.version that may open it): the rest would be refused
	// anyway, and decoding 10,000 requests to refuse them cost more than
	// anything else a client can send. Such a batch is read only as far
	// as the member one over the limit (decodeOverLimit), and size is
	// that member's number.
	size int
}

// count returns the number of requests the frame holds, or for a batch
// over the limit given to decodeMessageLimit, the limit plus one.
func (m *message) count() int { return max(m.size, len(m.requests)) }

// batchLimitError is the answer to a batch of more than limit requests.
func batchLimitError(limit int) *RPCError {
	return rpcErrorf(codeLimitExceeded, "batch limit exceeded (more than %d requests)", limit)
}

// detach copies what the requests keep of their frame (ids and params)
// out of it, into one allocation for the message, so that the frame's
// buffer can be reused at once.
func (m *message) detach() {
	n := 0
	for _, r := range m.requests {
		n += len(r.id) + len(r.params)
	}
	if n == 0 {
		return
	}
	b := make([]byte, 0, n)
	keep := func(v json.RawMessage) json.RawMessage {
		if len(v) == 0 {
			return v[:0:0]
		}
		b = append(b, v...)
		return b[len(b)-len(v) : len(b) : len(b)]
	}
	for _, r := range m.requests {
		r.id = keep(r.id)
		r.params = keep(r.params)
	}
}

// decodeMessage decodes one frame. It never fails: problems become errors
// to answer.
func decodeMessage(frame []byte) *message { return decodeMessageLimit(frame, 0) }

// decodeMessageLimit is decodeMessage that decodes only the first member of
// a batch of more than maxBatch requests (maxBatch 0: no limit).
func decodeMessageLimit(frame []byte, maxBatch int) *message {
	frame = bytes.TrimSpace(frame)
	if maxBatch > 0 && len(frame) > 0 && frame[0] == '[' {
		if m := decodeOverLimit(frame, maxBatch); m != nil {
			return m
		}
	}
	if !utf8.Valid(frame) {
		return &message{err: rpcErrorf(codeParseError, "invalid JSON: not UTF-8")}
	}
	if len(frame) > 0 && frame[0] == '[' {
		if !json.Valid(frame) {
			return &message{err: rpcErrorf(codeParseError, "invalid JSON")}
		}
		items, _ := splitArray(frame)
		if len(items) == 0 {
			return &message{err: rpcErrorf(codeInvalidRequest, "batch is empty")}
		}
		m := &message{batch: true, size: len(items)}
		if maxBatch > 0 && len(items) > maxBatch {
			items = items[:1]
		}
		m.requests = make([]*request, len(items))
		for i, it := range items {
			m.requests[i] = decodeRequest(it)
		}
		return m
	}
	if !json.Valid(frame) {
		return &message{err: rpcErrorf(codeParseError, "invalid JSON")}
	}
	return &message{requests: []*request{decodeRequest(frame)}}
}

// decodeOverLimit decodes a batch of more than maxBatch members having
// looked only as far as the member one over the limit: that much of it must
// be valid JSON (a parse error otherwise), and what follows is not read,
// valid or not, UTF-8 or not. Refusing a 500 KB batch of 10,000 requests
// took 1.7 ms of validating, and a client sending them back to back kept a core busy
// with nothing but that. It returns nil for a frame that ends, or stops
// being an array, within the limit; the whole frame is checked then.
func decodeOverLimit(frame []byte, maxBatch int) *message {
	var first []byte
	n, last := 0, 0
	for i := skipSpace(frame, 1); ; {
		if i >= len(frame) {
			return nil
		}
		end := valueEnd(frame, i)
		if end <= i || end > len(frame) {
			return nil
		}
		if n == 0 {
			first = frame[i:end:end]
		}
		n++
		last = end
		if n > maxBatch {
			break
		}
		i = skipSpace(frame, end)
		if i >= len(frame) || frame[i] != ',' {
			return nil
		}
		i = skipSpace(frame, i+1)
	}
	prefix := make([]byte, last+1)
	copy(prefix, frame[:last])
	prefix[last] = ']'
	if !utf8.Valid(prefix) {
		return &message{err: rpcErrorf(codeParseError, "invalid JSON: not UTF-8")}
	}
	if !json.Valid(prefix) {
		return &message{err: rpcErrorf(codeParseError, "invalid JSON")}
	}
	return &message{batch: true, size: n, requests: []*request{decodeRequest(first)}}
}

// decodeRequest decodes one valid JSON value into a request.
func decodeRequest(raw []byte) *request {
	var w wireRequest
	if !w.decodeFast(raw) {
		if err := json.Unmarshal(raw, &w); err != nil {
			return &request{err: rpcErrorf(codeInvalidRequest, "invalid request: not an object")}
		}
	}
	r := &request{}
	switch string(w.JSONRPC) {
	case "":
	case `"2.0"`:
		r.v2 = true
	case `"1.0"`:
	default:
		return &request{err: rpcErrorf(codeInvalidRequest, "invalid request: unsupported jsonrpc version")}
	}
	if len(w.ID) > 0 && string(w.ID) != "null" {
		switch w.ID[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			r.id = w.ID
		default:
			return &request{v2: r.v2, err: rpcErrorf(codeInvalidRequest, "invalid request: id must be a string or number")}
		}
	}
	if len(w.Method) == 0 {
		if len(w.Result) > 0 || len(w.Error) > 0 {
			r.isResponse = true
			return r
		}
		r.err = rpcErrorf(codeInvalidRequest, "invalid request: missing method")
		return r
	}
	if m, ok := simpleString(w.Method); ok {
		r.method = m
	} else if w.Method[0] != '"' || json.Unmarshal(w.Method, &r.method) != nil {
		// null decodes into a string without an error.
		r.err = rpcErrorf(codeInvalidRequest, "invalid request: method must be a string")
		return r
	}
	if p := bytes.TrimSpace(w.Params); len(p) > 0 && string(p) != "null" {
		if p[0] != '[' && p[0] != '{' {
			r.err = rpcErrorf(codeInvalidParams, "invalid params: must be an array or an object")
			return r
		}
		r.params = p
	}
	return r
}

// nullID is the id of responses to requests whose id is unknown.
var nullID = json.RawMessage("null")

// encodeResponse encodes a response. Answers are always JSON-RPC 2.0
// objects, also to 1.0 requests, as ElectrumX (aiorpcX) writes them: clients
// such as @electrum-cash/network send 1.0-style requests and take any
// "error" member, even null, as a failure. Exactly one of result and rerr is
// used; v2 records the request's dialect for the record only.
func encodeResponse(_ bool, id json.RawMessage, result json.RawMessage, rerr *RPCError) []byte {
	if id == nil {
		id = nullID
	}
	var b bytes.Buffer
	b.Grow(len(result) + len(id) + 48)
	b.WriteString(`{"jsonrpc":"2.0",`)
	if rerr != nil {
		eb, _ := json.Marshal(rerr)
		b.WriteString(`"error":`)
		b.Write(eb)
	} else {
		b.WriteString(`"result":`)
		b.Write(result)
	}
	b.WriteString(`,"id":`)
	b.Write(id)
	b.WriteByte('}')
	return b.Bytes()
}

// responseParts is encodeResponse of a result, with the result as the
// body of the message rather than copied into it.
func responseParts(id json.RawMessage, result json.RawMessage) outMsg {
	if id == nil {
		id = nullID
	}
	tail := make([]byte, 0, len(id)+7)
	tail = append(append(append(tail, `,"id":`...), id...), '}')
	return outMsg{head: resultHead, body: result, tail: tail}
}

// resultHead opens every response with a result.
var resultHead = []byte(`{"jsonrpc":"2.0","result":`)

// encodeNotification encodes a server-to-client notification.
func encodeNotification(method string, params any) ([]byte, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	m, _ := json.Marshal(method)
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","method":`)
	b.Write(m)
	b.WriteString(`,"params":`)
	b.Write(p)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// paramSpec names a method's parameters in order; the first required of
// them must be present. extraOK tolerates (and drops) extra arguments,
// positional or named, as server.version must for future extensions.
type paramSpec struct {
	names    []string
	required int
	extraOK  bool
}

// positional maps raw params (array, object or absent) onto the spec's
// order. A missing optional parameter is nil.
func (ps paramSpec) positional(raw json.RawMessage) ([]json.RawMessage, *RPCError) {
	out := make([]json.RawMessage, len(ps.names))
	if len(raw) == 0 {
		if ps.required > 0 {
			return nil, rpcErrorf(codeInvalidParams, "missing parameter %q", ps.names[0])
		}
		return out, nil
	}
	if raw[0] == '[' {
		// The arity is checked as the array is split: only the
		// arguments the method takes are kept.
		arr, n, ok := splitArrayFirst(raw, len(ps.names))
		if !ok {
			return nil, rpcErrorf(codeInvalidParams, "invalid params")
		}
		if n < ps.required {
			return nil, rpcErrorf(codeInvalidParams, "expected at least %d arguments, got %d", ps.required, n)
		}
		if n > len(ps.names) && !ps.extraOK {
			return nil, rpcErrorf(codeInvalidParams, "expected at most %d arguments, got %d", len(ps.names), n)
		}
		for i, a := range arr {
			if string(a) != "null" {
				out[i] = a
			} else if i < ps.required {
				// null counts as absent, in both forms.
				return nil, rpcErrorf(codeInvalidParams, "missing parameter %q", ps.names[i])
			}
		}
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, rpcErrorf(codeInvalidParams, "invalid params")
	}
	for name := range obj {
		found := false
		for _, n := range ps.names {
			if n == name {
				found = true
				break
			}
		}
		if !found && !ps.extraOK {
			return nil, rpcErrorf(codeInvalidParams, "unknown parameter %q", echo(name))
		}
	}
	for i, n := range ps.names {
		v, ok := obj[n]
		if !ok || string(v) == "null" {
			if i < ps.required {
				return nil, rpcErrorf(codeInvalidParams, "missing parameter %q", n)
			}
			continue
		}
		out[i] = v
	}
	return out, nil
}

package main

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// maxCapture bounds the bytes kept of a top-level "id", "error" or
// "method" value; longer values are kept truncated.
const maxCapture = 4096

// maxResultCapture bounds the bytes kept of a "result" value when the
// caller asks for it (small results such as a headers.subscribe tip).
const maxResultCapture = 4096

// message is what the scanner learns from one JSON-RPC message without
// decoding it: the top-level id, error and method values (small), and the
// size of the result. A response of many megabytes costs one pass over its
// bytes and no allocation beyond these.
type message struct {
	// ID, Error and Method are the raw JSON values of those top-level
	// keys; nil when absent.
	ID, Error, Method []byte
	// HasResult says the message has a top-level "result".
	HasResult bool
	// ResultBytes is the length of the result value; ResultEntries the
	// number of elements when it is an array, -1 otherwise.
	ResultBytes   int
	ResultEntries int
	// Result is the raw result when the scanner was asked to keep it and
	// it fits in maxResultCapture bytes.
	Result []byte
	// Bytes is the message's length without the newline.
	Bytes int
	// Malformed says the bytes were not one JSON object (a batch, a bare
	// value, or unbalanced brackets).
	Malformed bool
}

// scanner states for a top-level object.
const (
	stStart   = iota // before the opening '{'
	stKey            // expecting a key or '}'
	stInKey          // inside a key string
	stColon          // after a key, expecting ':'
	stValue          // expecting a value to start
	stInValue        // inside a value
	stDone           // after the closing '}'
)

// scanner reads one JSON-RPC message in pieces, tracking nesting and
// strings, and captures only the top-level values named in message.
type scanner struct {
	m          message
	keepResult bool

	state    int
	depth    int // nesting depth of objects and arrays
	inString bool
	escape   bool

	key       []byte  // current top-level key
	capture   *[]byte // value being captured, if any
	inResult  bool
	resultArr bool // the result is an array
	resultNon bool // the result array has an element

	// spare holds the id, error, method and result buffers of earlier
	// messages for reuse.
	spare [4][]byte
}

// reset prepares the scanner for the next message, keeping its buffers.
func (s *scanner) reset(keepResult bool) {
	spare := s.spare
	for k, b := range [4][]byte{s.m.ID, s.m.Error, s.m.Method, s.m.Result} {
		if b != nil {
			spare[k] = b[:0]
		}
	}
	*s = scanner{key: s.key[:0], keepResult: keepResult, spare: spare}
	s.m.ResultEntries = -1
}

// feed scans the next piece of the message (without the newline).
func (s *scanner) feed(p []byte) {
	s.m.Bytes += len(p)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if s.inString {
			// Skip ahead to the next quote or backslash in one call.
			if !s.escape {
				j := bytes.IndexAny(p[i:], "\"\\")
				if j < 0 {
					s.appendCapture(p[i:])
					return
				}
				if j > 0 {
					s.appendCapture(p[i : i+j])
					i += j
					c = p[i]
				}
			}
			if !(c == '"' && !s.escape && s.state == stInKey) {
				s.appendCapture(p[i : i+1])
			}
			switch {
			case s.escape:
				s.escape = false
			case c == '\\':
				s.escape = true
			case c == '"':
				s.inString = false
				if s.state == stInKey {
					s.state = stColon
				}
			}
			continue
		}
		if isSpace(c) {
			if s.state == stInValue {
				s.appendCapture(p[i : i+1])
			}
			continue
		}
		switch s.state {
		case stStart:
			if c != '{' {
				s.m.Malformed = true
				s.state = stDone
				continue
			}
			s.depth = 1
			s.state = stKey
		case stKey:
			switch c {
			case '"':
				s.key = s.key[:0]
				s.inString = true
				s.state = stInKey
			case '}':
				s.depth = 0
				s.state = stDone
			default:
				s.m.Malformed = true
				s.state = stDone
			}
		case stColon:
			if c != ':' {
				s.m.Malformed = true
				s.state = stDone
				continue
			}
			s.state = stValue
		case stValue:
			s.startValue()
			s.state = stInValue
			s.valueByte(p, i)
		case stInValue:
			if s.depth == 1 && (c == ',' || c == '}') {
				s.endValue()
				if c == '}' {
					s.depth = 0
					s.state = stDone
				} else {
					s.state = stKey
				}
				continue
			}
			s.valueByte(p, i)
		case stDone:
			s.m.Malformed = true
		}
	}
}

// appendCapture adds bytes to the key or captured value.
func (s *scanner) appendCapture(b []byte) {
	if s.state == stInKey {
		if len(s.key) < 64 {
			s.key = append(s.key, b...)
		}
		return
	}
	if s.state == stInValue {
		if s.inResult {
			s.m.ResultBytes += len(b)
		}
		if s.capture != nil {
			limit := maxCapture
			if s.inResult {
				limit = maxResultCapture
			}
			if len(*s.capture)+len(b) <= limit {
				*s.capture = append(*s.capture, b...)
			} else {
				// Too long to keep: an over-long result is not kept.
				if s.inResult {
					s.capture = nil
					s.m.Result = nil
				}
			}
		}
	}
}

// startValue begins a top-level value of the current key.
func (s *scanner) startValue() {
	s.capture = nil
	take := func(k, size int) []byte {
		if s.spare[k] != nil {
			return s.spare[k][:0]
		}
		return make([]byte, 0, size)
	}
	switch string(s.key) {
	case "id":
		s.m.ID = take(0, 16)
		s.capture = &s.m.ID
	case "error":
		s.m.Error = take(1, 128)
		s.capture = &s.m.Error
	case "method":
		s.m.Method = take(2, 64)
		s.capture = &s.m.Method
	case "result":
		s.m.HasResult = true
		s.inResult = true
		if s.keepResult {
			s.m.Result = take(3, 256)
			s.capture = &s.m.Result
		}
	}
}

// valueByte handles one byte (not inside a string) of a top-level value.
func (s *scanner) valueByte(p []byte, i int) {
	c := p[i]
	s.appendCapture(p[i : i+1])
	if s.inResult && s.depth == 1 {
		// The first byte of the result.
		if c == '[' {
			s.resultArr = true
		}
	} else if s.inResult && s.resultArr && s.depth == 2 {
		if c == ']' {
			// The closing bracket of the result array.
		} else if !s.resultNon {
			s.resultNon = true
			s.m.ResultEntries = 1
		} else if c == ',' {
			s.m.ResultEntries++
		}
	}
	switch c {
	case '"':
		s.inString = true
	case '{', '[':
		s.depth++
	case '}', ']':
		s.depth--
	}
	if s.inResult && s.resultArr && s.depth == 1 && c == ']' && !s.resultNon {
		s.m.ResultEntries = 0
	}
}

// endValue ends the current top-level value.
func (s *scanner) endValue() {
	if s.inResult && !s.resultArr {
		s.m.ResultEntries = -1
	}
	s.inResult = false
	s.capture = nil
}

// finish ends the message and returns what was learned.
func (s *scanner) finish() *message {
	if s.state != stDone || s.depth != 0 || s.inString {
		s.m.Malformed = true
	}
	return &s.m
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// parseError decodes a captured error value; a value that is not an
// object (or was truncated) is kept as text.
func parseError(raw []byte) rpcError {
	var e rpcError
	if err := json.Unmarshal(raw, &e); err != nil {
		return rpcError{Code: 0, Message: string(raw)}
	}
	return e
}

// parseID returns the numeric id of a captured id value.
func parseID(raw []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

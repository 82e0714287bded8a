package electrum

import (
	"bytes"
	"encoding/json"
	"math"
)

// Fast paths of request decoding. A request is decoded in several steps
// (the envelope, the method name, the params array, each argument), and
// with encoding/json each step was a reflective Unmarshal: together about
// 8% of the server's CPU in a wallet load. Frames are checked with
// json.Valid before anything is decoded, so the envelope, params and
// arguments handed to these functions are valid JSON; on that input each
// function returns exactly what encoding/json returns, or false for the
// shapes it leaves to encoding/json (escapes, non-ASCII, non-arrays).
// FuzzFastJSON compares them with encoding/json.

// isSpace reports JSON white space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// valueEnd returns the index just past the valid JSON value starting at i.
// On other bytes it returns an index in [i, len(b)] that may mean nothing
// (decodeOverLimit calls it before the frame is validated).
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				// An unterminated string, or one ending in a
				// backslash.
				return len(b)
			}
			if depth == 0 {
				return i + 1
			}
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// simpleString returns the value of a JSON string holding printable ASCII
// and no escapes; false for any other value.
func simpleString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
			return "", false
		}
	}
	return string(s), true
}

// splitArray returns the elements of a valid JSON array, as json.Unmarshal
// into []json.RawMessage does; false when raw is not an array.
func splitArray(raw []byte) ([]json.RawMessage, bool) {
	out, _, ok := splitArrayFirst(raw, math.MaxInt)
	return out, ok
}

// splitArrayFirst is splitArray that keeps only the first keep elements
// and counts the others: params of a method taking two arguments are
// refused for their number without first holding 24 bytes for each of the
// half a million elements a request's bytes can spell.
func splitArrayFirst(raw []byte, keep int) (out []json.RawMessage, n int, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, 0, false
	}
	out = make([]json.RawMessage, 0, min(keep, 4))
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return out, 0, true
	}
	for i < len(raw) {
		end := valueEnd(raw, i)
		if n < keep {
			out = append(out, raw[i:end:end])
		}
		n++
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ',' {
			break
		}
		i = skipSpace(raw, i+1)
	}
	return out, n, true
}

// decodeFast fills w from a valid JSON object whose member names are
// printable ASCII without escapes, matching names as encoding/json does
// (case-insensitively, the last of duplicates winning); false for any
// other value.
func (w *wireRequest) decodeFast(raw []byte) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	var got wireRequest
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		end := valueEnd(raw, i)
		name, ok := simpleString(raw[i:end])
		if !ok {
			return false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = skipSpace(raw, i+1)
		end = valueEnd(raw, i)
		v := json.RawMessage(raw[i:end:end])
		switch {
		case equalFold(name, "jsonrpc"):
			got.JSONRPC = v
		case equalFold(name, "id"):
			got.ID = v
		case equalFold(name, "method"):
			got.Method = v
		case equalFold(name, "params"):
			got.Params = v
		case equalFold(name, "result"):
			got.Result = v
		case equalFold(name, "error"):
			got.Error = v
		}
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	*w = got
	return true
}

// equalFold compares an ASCII name with a lower-case field name.
func equalFold(name, field string) bool {
	return len(name) == len(field) && bytes.EqualFold([]byte(name), []byte(field))
}

package electrum

import (
	"encoding/json"
	"strconv"
	"strings"
)

// protoVersion is a protocol version as a comparable triple.
type protoVersion [3]int

// Protocol versions the server knows about.
var (
	version14  = protoVersion{1, 4, 0}
	version142 = protoVersion{1, 4, 2}
	version16  = protoVersion{1, 6, 0}

	// protocolMin and protocolMax bound what the server negotiates.
	protocolMin = version14
	protocolMax = version16
)

// less reports whether v < w.
func (v protoVersion) less(w protoVersion) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

// atLeast reports whether v >= w.
func (v protoVersion) atLeast(w protoVersion) bool { return !v.less(w) }

// String formats v with at least one dot and no trailing ".0" patch.
func (v protoVersion) String() string {
	s := strconv.Itoa(v[0]) + "." + strconv.Itoa(v[1])
	if v[2] != 0 {
		s += "." + strconv.Itoa(v[2])
	}
	return s
}

// parseVersion parses "1.4" or "1.4.2"; ok is false for anything else.
func parseVersion(s string) (protoVersion, bool) {
	var v protoVersion
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 4 {
			return v, false
		}
		n := 0
		for _, c := range []byte(p) {
			// Digits only: strconv.Atoi would take "+4" and "-0".
			if c < '0' || c > '9' {
				return v, false
			}
			n = n*10 + int(c-'0')
		}
		v[i] = n
	}
	return v, true
}

// negotiateVersion applies the negotiation rule of docs/PROTOCOL.md §3 to the
// protocol_version argument (absent, a string, or [min, max]). ok is false
// when there is no common version or the argument is malformed.
func negotiateVersion(raw json.RawMessage) (protoVersion, string, bool) {
	clientMin, clientMax := protocolMin, protocolMin
	shown := "null"
	if raw != nil {
		shown = string(raw)
		var s string
		var pair []string
		switch {
		case json.Unmarshal(raw, &s) == nil:
			v, ok := parseVersion(s)
			if !ok {
				return protoVersion{}, s, false
			}
			clientMin, clientMax = v, v
			shown = s
		case json.Unmarshal(raw, &pair) == nil && len(pair) == 2:
			lo, ok1 := parseVersion(pair[0])
			hi, ok2 := parseVersion(pair[1])
			if !ok1 || !ok2 || hi.less(lo) {
				return protoVersion{}, shown, false
			}
			clientMin, clientMax = lo, hi
		default:
			return protoVersion{}, shown, false
		}
	}
	v := clientMax
	if protocolMax.less(v) {
		v = protocolMax
	}
	floor := clientMin
	if floor.less(protocolMin) {
		floor = protocolMin
	}
	if v.less(floor) {
		return protoVersion{}, shown, false
	}
	return v, shown, true
}

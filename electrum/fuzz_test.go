package electrum

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// FuzzDecodeMessage feeds arbitrary frames to the request decoder: it must
// never panic, and whatever it accepts as a request must have a method and
// an id that is null, a string or a number.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"server.version","params":["x","1.4"]}`,
		`[{"id":1,"method":"server.ping"},{"method":"server.ping"}]`,
		`{"id":"a","method":"blockchain.block.header","params":{"height":1}}`,
		`{"id":1,"result":null}`, `[]`, `{`, `null`, "\xff",
		`[{"id":1},{"id":2},{"id":3}]`, `[{""":["",["",""]]},{"",`, `["a","b","c\`, `[1,2,3,"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		// A batch over a limit of 2 is refused from its first three
		// members, read before the frame is validated.
		over := decodeMessageLimit(frame, 2)
		if over.err == nil && over.batch && over.count() > 2 && (len(over.requests) != 1 || over.size != 3) {
			t.Fatalf("over the limit: %d requests decoded, size %d", len(over.requests), over.size)
		}
		m := decodeMessage(frame)
		if over.err == nil && m.err != nil && !(over.batch && over.count() > 2) {
			t.Fatalf("within the limit the frame decodes as without one: %v", m.err)
		}
		if m.err != nil {
			return
		}
		for _, r := range m.requests {
			if r.err != nil || r.isResponse {
				continue
			}
			if r.id != nil && !json.Valid(r.id) {
				t.Fatalf("invalid id %q", r.id)
			}
			for _, spec := range []paramSpec{spec(0), spec(1, "a", "b"), {names: []string{"x"}, extraOK: true}} {
				spec.positional(r.params)
			}
			out := encodeResponse(r.v2, r.id, json.RawMessage("null"), nil)
			if !json.Valid(out) {
				t.Fatalf("invalid response %q", out)
			}
		}
	})
}

// FuzzLineFraming checks newline framing: the messages read back are the
// non-empty lines of the input that fit the limit, and the reader never
// panics or loops on any input.
func FuzzLineFraming(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 2)
	f.Add([]byte("{\"id\":1}\r\n"), 100)
	f.Add(bytes.Repeat([]byte("x"), 70000), 65536)
	// Lines skipped in skipReadBuffer reads: the newline in the first
	// read, in a later one, at a read's end, and messages after each.
	long := func(n int) string { return strings.Repeat("x", n) }
	f.Add([]byte("a\n"+long(3000)+"\nb\n"+long(200000)+"\nc\r\n"+long(skipReadBuffer-1)+"\n"+long(2*skipReadBuffer)+"\nd"), 1000)
	f.Add([]byte(long(100000)), 1000)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		if limit <= 0 || limit > 1<<20 {
			limit = 16
		}
		// A tiny read buffer makes every long line cross buffer boundaries.
		c := newLineReader(bytes.NewReader(data), 16, limit)
		var got [][]byte
		tooLarge := 0
		for {
			m, err := c.ReadMessage()
			if err == errFrameTooLarge {
				tooLarge++
				continue
			}
			if err != nil {
				break
			}
			got = append(got, append([]byte(nil), m...))
		}
		var want [][]byte
		wantLarge := 0
		lines := bytes.Split(data, []byte("\n"))
		for _, l := range lines {
			// A trailing '\r' is framing: the limit is on what is left.
			if l = bytes.TrimSuffix(l, []byte("\r")); len(l) > limit {
				wantLarge++
				continue
			}
			if len(l) > 0 {
				want = append(want, l)
			}
		}
		if len(got) != len(want) || tooLarge != wantLarge {
			t.Fatalf("read %d messages (%d too large), want %d (%d)", len(got), tooLarge, len(want), wantLarge)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("message %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
}

// FuzzStatusNotification checks that the hand-built status notification is
// the JSON encoding of the same notification.
func FuzzStatusNotification(f *testing.F) {
	f.Add(make([]byte, 32), []byte{1, 2, 3}, true)
	f.Fuzz(func(t *testing.T, shb, sum []byte, null bool) {
		var sh indexers.ScriptHash
		copy(sh[:], shb)
		var status *string
		if !null {
			status = statusHex(sum)
		}
		want, err := encodeNotification("blockchain.scripthash.subscribe", []any{sh.String(), status})
		if err != nil {
			t.Fatal(err)
		}
		if got := statusNotification(sh.String(), status); !bytes.Equal(got, want) {
			t.Fatalf("%s != %s", got, want)
		}
	})
}

package electrum

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fastJSONSeeds are shapes the fast paths take and shapes they leave to
// encoding/json.
var fastJSONSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.get_balance","params":["8b01df4e368ea28f8dc0423bcf7a4923e3a12d307c875e47a0cfbf90b5c39161"]}`,
	` { "id" : "a" , "method":"server.version", "params" : [ "x" , [ "1.4", "1.6" ] ] } `,
	`{"ID":1,"Method":"m","PARAMS":[1,{"a":[2,"]"]},null,true,-1.5e3]}`,
	`{"method":"a","method":"b","params":[],"params":null}`,
	`{"id":null,"result":{"x":"\"}"},"error":null}`,
	`{"m\u0065thod":"x"}`, `{"méthod":"x"}`, `{"method":"\u00e9"}`, `{"method":"é"}`,
	`{"method":1}`, `[1,2]`, `"str"`, `{}`, `[]`, `[ ]`, `{"a":{"b":{"c":[]}}}`,
	`["a\\\"b", "x"]`, "[\"\\u0041\"]",
}

// FuzzFastJSON checks the request decoder's fast paths against
// encoding/json on valid JSON: where a fast path answers, its answer is
// encoding/json's.
func FuzzFastJSON(f *testing.F) {
	for _, s := range fastJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		checkFastJSON(t, raw)
	})
}

// TestFastJSONSeeds runs the fuzz checks on the seeds and checks that the
// fast paths take the shapes they are for.
func TestFastJSONSeeds(t *testing.T) {
	for _, s := range fastJSONSeeds {
		checkFastJSON(t, []byte(s))
	}
	var w wireRequest
	if !w.decodeFast([]byte(fastJSONSeeds[0])) || string(w.Method) != `"blockchain.scripthash.get_balance"` {
		t.Fatalf("a plain request took the slow path: %+v", w)
	}
	if arr, ok := splitArray(w.Params); !ok || len(arr) != 1 {
		t.Fatalf("params %q split into %q", w.Params, arr)
	}
	if m, ok := simpleString(w.Method); !ok || m != "blockchain.scripthash.get_balance" {
		t.Fatalf("method %q", m)
	}
	if (&wireRequest{}).decodeFast([]byte(`{"m\u0065thod":"x"}`)) {
		t.Fatal("an escaped member name took the fast path")
	}
}

func checkFastJSON(t *testing.T, raw []byte) {
	t.Helper()
	var fast, slow wireRequest
	if fast.decodeFast(raw) {
		if err := json.Unmarshal(raw, &slow); err != nil {
			t.Fatalf("%q: fast path took what encoding/json refuses (%v)", raw, err)
		}
		for _, p := range [][2]json.RawMessage{{fast.JSONRPC, slow.JSONRPC}, {fast.ID, slow.ID}, {fast.Method, slow.Method},
			{fast.Params, slow.Params}, {fast.Result, slow.Result}, {fast.Error, slow.Error}} {
			if !bytes.Equal(p[0], p[1]) || (p[0] == nil) != (p[1] == nil) {
				t.Fatalf("%q: fast %+v, encoding/json %+v", raw, fast, slow)
			}
		}
	}
	if arr, ok := splitArray(raw); ok {
		var want []json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%q: split what encoding/json refuses (%v)", raw, err)
		}
		if len(arr) != len(want) {
			t.Fatalf("%q: %d elements, encoding/json %d", raw, len(arr), len(want))
		}
		for i := range arr {
			if !bytes.Equal(arr[i], want[i]) {
				t.Fatalf("%q: element %d is %q, encoding/json %q", raw, i, arr[i], want[i])
			}
		}
	}
	if s, ok := simpleString(raw); ok {
		var want string
		if err := json.Unmarshal(raw, &want); err != nil || s != want {
			t.Fatalf("%q: string %q, encoding/json %q (%v)", raw, s, want, err)
		}
	}
}

// BenchmarkDecodeRequest decodes a get_balance request as a session does:
// the frame, the params and the script hash argument.
func BenchmarkDecodeRequest(b *testing.B) {
	frame := []byte(fastJSONSeeds[0])
	ps := paramSpec{names: []string{"scripthash"}, required: 1}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m := decodeMessage(frame)
		args, rerr := ps.positional(m.requests[0].params)
		if rerr != nil {
			b.Fatal(rerr)
		}
		if _, err := argScriptHash(args[0]); err != nil {
			b.Fatal(err)
		}
	}
}

package electrum

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestBatchResubscribeUndoNotBeforeOlderAnswer: a batch re-subscribes a
// script the session holds twice, with a broadcast paying it in between; the
// second re-subscribe's answer gives way to "response too large". Its undo
// tells the client the status it read (S2) in a notification, which must
// follow the batch's array: the array carries the first re-subscribe's
// answer, read earlier (S1), and a client processing messages in order
// would end with S1 while the server records S2 as told, so the change
// would never be told. docs/PROTOCOL.md §6: "a status or tip is never
// replaced by one read earlier".
func TestBatchResubscribeUndoNotBeforeOlderAnswer(t *testing.T) {
	tooLargeErr := rpcErrorf(codeInvalidRequest, "response too large (over %d bytes)", minMaxSend)
	dummyStatus := json.RawMessage(`"` + strings.Repeat("0", 64) + `"`)
	lenSub1 := len(encodeResponse(true, json.RawMessage("1"), dummyStatus, nil))
	lenSub2 := len(encodeResponse(true, json.RawMessage("2"), dummyStatus, nil))
	lenErr2 := len(encodeResponse(true, json.RawMessage("2"), nil, tooLargeErr))
	dummyTxid := json.RawMessage(`"` + strings.Repeat("0", 64) + `"`)
	lenBcast := len(encodeResponse(true, json.RawMessage("3"), dummyTxid, nil))
	envBanner := len(encodeResponse(true, json.RawMessage("0"), json.RawMessage(`""`), nil))
	if lenErr2 >= lenSub2 {
		t.Fatalf("test setup: error %d bytes not shorter than the status answer %d", lenErr2, lenSub2)
	}
	// The array: brackets (1, less the first comma) and each answer with
	// its comma. The banner leaves room for the second re-subscribe's
	// error exactly, not for its answer.
	lenBanner := minMaxSend - 1 - 1 - (lenSub1 + 1) - (lenBcast + 1) - (lenErr2 + 1)
	banner := strings.Repeat("b", lenBanner-envBanner)

	fx := newFixture(t, func(c *Config) {
		c.MaxSend = minMaxSend
		c.Banner = banner
		c.Concurrency = 1 // the batch runs once the first subscribe's after ran
	})
	// A transaction paying A: A's status changes once it is in the mempool.
	pay := fx.payA()

	lc := dialNegotiated(t, fx.addr)
	s0 := firstStatus(t, lc, fx.shA)

	lc.send(fmt.Sprintf(`[{"jsonrpc":"2.0","id":0,"method":"server.banner"},`+
		`{"jsonrpc":"2.0","id":1,"method":"blockchain.scripthash.subscribe","params":["%[1]s"]},`+
		`{"jsonrpc":"2.0","id":3,"method":"blockchain.transaction.broadcast","params":["%[2]s"]},`+
		`{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.subscribe","params":["%[1]s"]}]`, fx.shA, txHex(pay)))

	// What the client is told about A, in the order it reads it.
	var told []string
	note := func(raw []byte) {
		if s, ok := scriptNote(t, raw, fx.shA); ok {
			told = append(told, "note:"+s)
		}
	}
	rs := lc.toBatch(note)
	if len(rs) != 4 {
		t.Fatalf("batch answer of %d members", len(rs))
	}
	for _, r := range rs {
		switch string(r.ID) {
		case "1":
			var s *string
			decodeInto(t, r.Result, &s)
			if r.Error != nil || s == nil {
				t.Fatalf("test setup: first re-subscribe answered %v", r.Error)
			}
			told = append(told, "answer:"+*s)
		case "3":
			if r.Error != nil {
				t.Fatalf("test setup: broadcast refused: %v", r.Error)
			}
		case "2":
			if r.Error == nil {
				t.Fatalf("test setup: second re-subscribe not replaced by its error")
			}
		}
	}
	// Anything queued after the array.
	lc.toPing(note)

	// A's status now, as a new subscriber is told it.
	now := probeStatus(t, fx.addr, fx.shA)
	if now == nil || *now == *s0 {
		t.Fatalf("test setup: the broadcast did not change A's status")
	}
	if len(told) == 0 {
		t.Fatalf("client told nothing about A")
	}
	last := told[len(told)-1]
	last = last[strings.IndexByte(last, ':')+1:]
	if last != *now {
		t.Fatalf("client's last word on A is %q, the status read before the broadcast, not the current %q; in order it was told %q",
			last, *now, told)
	}
}

package rpcext

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/gorilla/websocket"
)

// memberAnswer is a batch member's answer, its result skipped.
type memberAnswer struct {
	Error *btcjson.RPCError `json:"error"`
	ID    json.RawMessage   `json:"id"`
}

// checkBoundedBatchAnswer checks the answer to a batch of members requests
// (ids 0 to members-1) whose answers together exceed maxAnswerBytes: it is
// within the bound, answers every member in order, the first ones with
// their results and, from the one that would have taken it past the bound,
// the others with -32600 response too large.
func checkBoundedBatchAnswer(t *testing.T, how string, answer []byte, members int) {
	t.Helper()
	if len(answer) > maxAnswerBytes {
		t.Fatalf("%s: a batch of %d getblock got a %d-byte answer, over the %d-byte bound",
			how, members, len(answer), maxAnswerBytes)
	}
	var got []memberAnswer
	if err := json.Unmarshal(answer, &got); err != nil {
		t.Fatalf("%s: answer of %d bytes: %v", how, len(answer), err)
	}
	if len(got) != members {
		t.Fatalf("%s: %d answers to %d members", how, len(got), members)
	}
	answered := 0
	for i, a := range got {
		if string(a.ID) != fmt.Sprint(i) {
			t.Fatalf("%s: answer %d has id %s", how, i, a.ID)
		}
		if a.Error == nil {
			if answered != i {
				t.Fatalf("%s: member %d answered after one refused", how, i)
			}
			answered++
			continue
		}
		if a.Error.Code != btcjson.ErrRPCInvalidRequest.Code || !strings.Contains(a.Error.Message, "response too large") {
			t.Fatalf("%s: member %d: %+v, want -32600 response too large", how, i, a.Error)
		}
	}
	if answered == 0 || answered == members {
		t.Fatalf("%s: %d of %d members answered, want the first ones only", how, answered, members)
	}
	t.Logf("%s: %d bytes, %d of %d members answered", how, len(answer), answered, members)
}

// A batch is bounded in requests (--rpcmaxbatch) and its body in bytes
// (--rpcmaxrequestbytes), and its answer in bytes too: a 5 KB batch of
// getblock (hex) on one 0.9 MB block asks for 72 MB, which the server
// would otherwise build whole in memory (a batch of 1000 on a 4 MB block:
// about 8 GB). The members are run until their answers reach the bound
// (64 MiB, what may wait for a websocket client), the others are answered
// an error, over HTTP and over a websocket alike; a websocket client gets
// the answer rather than being dropped for it.
func TestBatchAnswerBytesBounded(t *testing.T) {
	node := matureNode(t)
	hashes := mineBig(t, node, 1, node.minerTo)
	ts := startServer(t, node, func(c *Config) { c.DisableTLS = true })

	const members = 40
	var body strings.Builder
	body.WriteByte('[')
	for i := 0; i < members; i++ {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"jsonrpc":"2.0","method":"getblock","params":["%s",0],"id":%d}`, hashes[0], i)
	}
	body.WriteByte(']')

	req, _ := http.NewRequest(http.MethodPost, ts.baseURL()+"/", strings.NewReader(body.String()))
	req.SetBasicAuth(testUser, testPass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read one byte past the bound at most: that is enough to know.
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+2))
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP: status %d, %v", resp.StatusCode, err)
	}
	checkBoundedBatchAnswer(t, "HTTP", []byte(strings.TrimSpace(string(answer))), members)

	h := http.Header{}
	h.Set("Authorization", req.Header.Get("Authorization"))
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+ts.addr+"/ws", h)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(body.String())); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Minute)) // a hang guard
	_, msg, err := conn.ReadMessage()
	if err != nil {
		t.Fatalf("websocket: no answer to the batch: %v", err)
	}
	checkBoundedBatchAnswer(t, "websocket", msg, members)
}

// The errors answering the members past the bound count in it too: when
// their ids are long enough to take the answer past it, the largest
// answers give way to their errors until it fits.
func TestBatchAnswerErrorsWithinBound(t *testing.T) {
	node := matureNode(t)
	hashes := mineBig(t, node, 1, node.minerTo)
	ts := startServer(t, node, func(c *Config) { c.DisableTLS = true })

	const members, longIDs = 40, 3
	long := strings.Repeat("x", 300_000)
	var body strings.Builder
	body.WriteByte('[')
	for i := 0; i < members; i++ {
		if i > 0 {
			body.WriteByte(',')
		}
		id := fmt.Sprint(i)
		if i >= members-longIDs {
			id = `"` + long + id + `"`
		}
		fmt.Fprintf(&body, `{"jsonrpc":"2.0","method":"getblock","params":["%s",0],"id":%s}`, hashes[0], id)
	}
	body.WriteByte(']')
	status, answer := ts.post(t, body.String(), true)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	answer = []byte(strings.TrimSpace(string(answer)))
	if len(answer) > maxAnswerBytes {
		t.Fatalf("a %d-byte answer, over the %d-byte bound", len(answer), maxAnswerBytes)
	}
	var got []memberAnswer
	if err := json.Unmarshal(answer, &got); err != nil || len(got) != members {
		t.Fatalf("%d answers to %d members: %v", len(got), members, err)
	}
	answered := 0
	for i, a := range got {
		var id string
		if i >= members-longIDs {
			id = `"` + long + fmt.Sprint(i) + `"`
		} else {
			id = fmt.Sprint(i)
		}
		if string(a.ID) != id {
			t.Fatalf("answer %d has id %.20s", i, a.ID)
		}
		switch {
		case a.Error == nil:
			answered++
		case a.Error.Code != btcjson.ErrRPCInvalidRequest.Code || !strings.Contains(a.Error.Message, "response too large"):
			t.Fatalf("member %d: %+v, want -32600 response too large", i, a.Error)
		}
	}
	// 37 answers fit the bound alone; with 900 KB of errors, 36.
	if answered == 0 || answered >= members-longIDs {
		t.Fatalf("%d of %d members answered", answered, members)
	}
	t.Logf("%d bytes, %d of %d members answered", len(answer), answered, members)
}

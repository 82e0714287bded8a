package rpcext

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcjson"
)

// longPollsHoldNoSlot sends `slots` copies of body (each of which holds a
// getblocktemplate long poll that waits for the next block) and checks that
// a getblockcount beside them is still answered: a long poll takes no
// processing slot (server.go serveHTTP).
func longPollsHoldNoSlot(t *testing.T, mkBody func(longPollID string) string) {
	node := newTestNode(t)
	if _, err := node.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	const slots = 2
	ts := startServer(t, node, func(c *Config) {
		c.Backend = gbtNode{node}
		c.MaxClients = 10
		c.MaxConcurrentRequests = slots
	})
	r := ts.call(t, `{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"]}],"id":1}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var tmpl btcjson.GetBlockTemplateResult
	if err := json.Unmarshal(r.Result, &tmpl); err != nil || tmpl.LongPollID == "" {
		t.Fatalf("template %s %v", r.Result, err)
	}
	body := mkBody(tmpl.LongPollID)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ts.tlsConfig(t)}}
	type answer struct {
		status int
		body   []byte
		err    error
	}
	post := func(body string, out chan<- answer) {
		req, _ := http.NewRequest(http.MethodPost, ts.baseURL()+"/", strings.NewReader(body))
		req.SetBasicAuth(testUser, testPass)
		resp, err := hc.Do(req)
		if err != nil {
			out <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		out <- answer{resp.StatusCode, b, err}
	}
	polls := make(chan answer, slots)
	for i := 0; i < slots; i++ {
		go post(body, polls)
	}
	deadline := time.Now().Add(time.Minute)
	for ts.srv.LongPolls() != slots { // both polls are parked, waiting for a block
		if time.Now().After(deadline) {
			t.Fatalf("%d long polls waiting, want %d", ts.srv.LongPolls(), slots)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := make(chan answer, 1)
	go post(`{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":3}`, got)
	select {
	case a := <-got:
		if a.err != nil || a.status != http.StatusOK || !bytes.Contains(a.body, []byte(`"result":1`)) {
			t.Fatalf("getblockcount beside %d long polls: %d %s %v", slots, a.status, a.body, a.err)
		}
	case <-time.After(15 * time.Second): // hang guard
		t.Errorf("getblockcount not answered while %d long polls wait for a block (--rpcmaxconcurrentreqs=%d): "+
			"bodies %s hold every processing slot until the next block", slots, slots, body)
	}
	if _, err := node.Generate(1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < slots; i++ {
		select {
		case <-polls:
		case <-time.After(time.Minute):
			t.Fatal("long polls not answered after a block")
		}
	}
}

// HTTP getblocktemplate long polls waiting for the next block take no
// processing slot (--rpcmaxconcurrentreqs), as btcd's HTTP requests take
// none: with as many pollers as slots, other requests are still answered.
func TestLongPollsDoNotBlockOtherHTTPRequests(t *testing.T) {
	longPollsHoldNoSlot(t, func(id string) string {
		return `{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"],"longpollid":"` +
			id + `"}],"id":2}`
	})
}

// A long poll sent in a batch takes no processing slot either.
func TestBatchedLongPollsDoNotBlockOtherHTTPRequests(t *testing.T) {
	longPollsHoldNoSlot(t, func(id string) string {
		return `[{"jsonrpc":"2.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"],"longpollid":"` +
			id + `"}],"id":2}]`
	})
}

// A batch whose long poll sits beside a member that is not a valid request
// (params given as an object) is run member by member, and its long poll
// takes no processing slot either.
func TestBatchLongPollBesideBadMemberTakesNoSlot(t *testing.T) {
	longPollsHoldNoSlot(t, func(id string) string {
		return `[{"jsonrpc":"2.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"],"longpollid":"` +
			id + `"}],"id":2},{"jsonrpc":"2.0","method":"getblockcount","params":{},"id":4}]`
	})
}

// encoding/json matches keys in any case: a "longPollId" is a long poll
// that waits, and takes no processing slot.
func TestLongPollKeyCaseTakesNoSlot(t *testing.T) {
	longPollsHoldNoSlot(t, func(id string) string {
		return `{"jsonrpc":"1.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"],"longPollId":"` +
			id + `"}],"id":2}`
	})
}

// A method name written with a JSON escape is the same method: a long poll.
func TestLongPollEscapedMethodTakesNoSlot(t *testing.T) {
	longPollsHoldNoSlot(t, func(id string) string {
		return `{"jsonrpc":"1.0","method":"getblocktempl\u0061te","params":[{"capabilities":["coinbasetxn"],"longpollid":"` +
			id + `"}],"id":2}`
	})
}

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

// A long poll sent in a batch takes no processing slot either.
func TestBatchedLongPollsDoNotBlockOtherHTTPRequests(t *testing.T) {
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
	body := `[{"jsonrpc":"2.0","method":"getblocktemplate","params":[{"capabilities":["coinbasetxn"],"longpollid":"` +
		tmpl.LongPollID + `"}],"id":2}]`
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ts.tlsConfig(t)}}
	polls := make(chan error, slots)
	for i := 0; i < slots; i++ {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, ts.baseURL()+"/", strings.NewReader(body))
			req.SetBasicAuth(testUser, testPass)
			resp, err := hc.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			polls <- err
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for ts.srv.LongPolls() != slots {
		if time.Now().After(deadline) {
			t.Fatalf("%d long polls waiting, want %d", ts.srv.LongPolls(), slots)
		}
		time.Sleep(10 * time.Millisecond)
	}

	type answer struct {
		status int
		body   []byte
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.baseURL()+"/",
			strings.NewReader(`{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":3}`))
		req.SetBasicAuth(testUser, testPass)
		resp, err := hc.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, b, err}
	}()
	select {
	case a := <-got:
		if a.err != nil || a.status != http.StatusOK || !bytes.Contains(a.body, []byte(`"result":1`)) {
			t.Fatalf("getblockcount beside %d batched long polls: %d %s %v", slots, a.status, a.body, a.err)
		}
	case <-time.After(15 * time.Second): // hang guard
		t.Errorf("getblockcount not answered while %d batched getblocktemplate long polls wait for a block "+
			"(--rpcmaxconcurrentreqs=%d): the batches hold every processing slot until the next block", slots, slots)
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
	select {
	case <-got:
	case <-time.After(time.Minute):
	}
}

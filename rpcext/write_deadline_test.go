package rpcext

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An HTTP answer must be taken by the client within the write wait: a
// client that sends a request with megabytes of answer and never reads it
// otherwise keeps the handler blocked in Write, holding its place among
// MaxClients and a request slot for as long as it keeps the connection
// open, and MaxClients such clients lock every other out with 503. With the
// wait set short, the places of two clients that never read are freed and
// another client is served.
func TestHTTPAnswerWriteDeadlineFreesClientPlace(t *testing.T) {
	node := matureNode(t)
	hashes := mineBig(t, node, 1, node.minerTo)
	const limit = 2
	ts := startServer(t, node, func(c *Config) {
		c.DisableTLS = true
		c.MaxClients = limit
		c.writeWait = time.Second
	})

	var batch strings.Builder
	batch.WriteByte('[')
	for i := 0; i < 8; i++ { // about 14 MB of answer
		if i > 0 {
			batch.WriteByte(',')
		}
		fmt.Fprintf(&batch, `{"jsonrpc":"1.0","method":"getblock","params":["%s",0],"id":%d}`, hashes[0], i)
	}
	batch.WriteByte(']')
	auth := base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testPass))
	for i := 0; i < limit; i++ {
		c, err := smallReceiveBuffer(context.Background(), "tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\nContent-Length: %d\r\n\r\n%s",
			auth, batch.Len(), batch.String())
		// never read
	}
	for deadline := time.Now().Add(time.Minute); ts.srv.clients.Load() != limit; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests in flight, want %d", ts.srv.clients.Load(), limit)
		}
	}
	// The deadline only bounds the wait for a server that never frees
	// the places.
	var status int
	var body []byte
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		status, body = ts.post(t, `{"jsonrpc":"1.0","method":"getblockcount","params":[],"id":1}`, true)
		if status == http.StatusOK {
			return
		}
	}
	t.Fatalf("two clients that never read their answers still hold every place (%d in flight): "+
		"getblockcount answered %d %s", ts.srv.clients.Load(), status, strings.TrimSpace(string(body)))
}

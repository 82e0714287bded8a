package esplora

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// blockedWriter is a client that never reads: every Write of an answer's
// body, whatever its status, blocks until release closes.
type blockedWriter struct {
	h       http.Header
	code    int
	n       int
	writing chan struct{}
	release chan struct{}
}

func (w *blockedWriter) Header() http.Header { return w.h }
func (w *blockedWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *blockedWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n = len(b)
	close(w.writing)
	<-w.release
	return len(b), nil
}

// Error answers count in MaxAnswerBytes as other answers do, and the 404 of
// a path that is no endpoint does not repeat a long path whole (escaped and
// quoted, a 64 KiB request line was answered with three times its size):
// one address's requests its client never reads hold no more than the bound.
func TestErrorAnswersCountInAnswerBudget(t *testing.T) {
	const max = 1_000_000
	s := New(Config{MaxAnswerBytes: max}, nil, nil) // cost limits and per-address limits at their defaults
	path := "/" + strings.Repeat("\"", 64_000)
	var ws []*blockedWriter
	var wg sync.WaitGroup
	t.Cleanup(func() {
		for _, w := range ws {
			close(w.release)
		}
		wg.Wait()
	})
	held := 0
	for i := 0; i < DefaultMaxRequestsPerIP; i++ {
		w := &blockedWriter{h: http.Header{}, writing: make(chan struct{}), release: make(chan struct{})}
		ws = append(ws, w)
		done := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.RemoteAddr = "198.51.100.7:1234"
			s.ServeHTTP(w, r)
		}()
		select {
		case <-w.writing:
			held += w.n
		case <-done:
			t.Fatalf("request %d answered without writing: %d", i, w.code)
		}
	}
	t.Logf("%d requests of a %d-byte path: status %d, %d bytes of answers held for a client that does not read (MaxAnswerBytes %d; counted %d)",
		len(ws), len(path), ws[0].code, held, max, s.answers.held)
	if held > max {
		t.Fatalf("%d bytes of %d answers held unread, past MaxAnswerBytes %d, none counted (answer budget holds %d)",
			held, ws[0].code, max, s.answers.held)
	}
}

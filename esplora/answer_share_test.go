package esplora

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// One client address holds at most a quarter of MaxAnswerBytes: its 16
// large answers it never reads (MaxAnswerBytes here is 16 of them, as 16
// raw blocks of 4 MB are to the default 64,000,000 bytes) leave room for
// other clients' answers, which are not refused 503.
func TestOneAddressCannotTakeWholeAnswerBudget(t *testing.T) {
	n := newTestNode(t, "")
	raw, size := n.bigRawBlock()
	max := int64(DefaultMaxRequestsPerIP * size) // as 16 blocks of 4,000,000 bytes are to 64,000,000
	s := New(Config{MaxAnswerBytes: max, CostHardLimit: -1}, n.backend, n.h.Chain)

	var held []*stalledWriter
	t.Cleanup(func() {
		for _, w := range held {
			w.free()
		}
	})
	for i := 0; i < DefaultMaxRequestsPerIP; i++ {
		w := newStalledWriter()
		held = append(held, w)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := httptest.NewRequest(http.MethodGet, raw, nil)
			r.RemoteAddr = "198.51.100.7:1234" // one client address
			s.ServeHTTP(w, r)
		}()
		select {
		case <-w.writing:
		case <-done:
			t.Logf("the slow client's request %d answered %d", i, w.code)
		}
	}
	// Another client, on another address, asks for the tip height.
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/blocks/tip/height", nil)
	r.RemoteAddr = "203.0.113.5:4321"
	s.ServeHTTP(w, r)
	s.answers.mu.Lock()
	total := s.answers.held
	s.answers.mu.Unlock()
	t.Logf("one address holds %d bytes of unread answers (MaxAnswerBytes %d); another client's /blocks/tip/height: %d %q",
		total, max, w.Code, w.Body.String())
	if w.Code != http.StatusOK {
		t.Fatalf("a client on another address refused %d %q for a %d-byte answer, because one address's %d unread answers took the whole answer budget",
			w.Code, w.Body.String(), len(n.getText("/blocks/tip/height")), DefaultMaxRequestsPerIP)
	}
}

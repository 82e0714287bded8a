package esplora

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Requests from an exempt network without X-Forwarded-For (a Tor onion
// service or a proxy forwarding on loopback) speak for many clients: they are
// not held to one address's quarter of the answer budget.
func TestExemptAddressNotHeldToQuarterOfAnswerBudget(t *testing.T) {
	n := newTestNode(t, "")
	raw, size := n.bigRawBlock()
	max := int64(16 * size)
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s := New(Config{MaxAnswerBytes: max, CostHardLimit: -1, ExemptNets: []*net.IPNet{loopback}}, n.backend, n.h.Chain)

	var held []*stalledWriter
	t.Cleanup(func() {
		for _, w := range held {
			w.free()
		}
	})
	// Four slow readers behind the onion service, each a raw block.
	for i := 0; i < 4; i++ {
		w := newStalledWriter()
		held = append(held, w)
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := httptest.NewRequest(http.MethodGet, raw, nil)
			r.RemoteAddr = fmt.Sprintf("127.0.0.1:%d", 40000+i)
			s.ServeHTTP(w, r)
		}()
		select {
		case <-w.writing:
		case <-done:
			t.Fatalf("slow reader %d answered %d before any other client", i, w.code)
		}
	}
	s.answers.mu.Lock()
	total := s.answers.held
	s.answers.mu.Unlock()

	// Another client behind the onion service asks for the tip height.
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/blocks/tip/height", nil)
	r.RemoteAddr = "127.0.0.1:50000"
	s.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("exempt client (127.0.0.1, no X-Forwarded-For) refused %d %q for /blocks/tip/height with %d of %d "+
			"answer bytes held: the per-address quarter is applied to the exempt network as to one address",
			w.Code, w.Body.String(), total, max)
	}
}

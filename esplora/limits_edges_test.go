// Edges of the answer and body budgets and of the cost accounts.

package esplora

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

// TestOneAddressHeldToQuarterOfAnswerBudget: one client address holds at
// most a quarter of MaxAnswerBytes in answers it does not read
// (docs/OPERATIONS.md): with room for 16 large answers, its fifth unread one
// is refused 503 while four are held, though the budget has room for it.
func TestOneAddressHeldToQuarterOfAnswerBudget(t *testing.T) {
	n := newTestNode(t, "")
	raw, size := n.bigRawBlock()
	s := New(Config{MaxAnswerBytes: int64(16 * size), CostHardLimit: -1}, n.backend, n.h.Chain)
	var held []*stalledWriter
	t.Cleanup(func() {
		for _, w := range held {
			w.free()
		}
	})
	ask := func(w http.ResponseWriter) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := httptest.NewRequest(http.MethodGet, raw, nil)
			r.RemoteAddr = "198.51.100.9:1234"
			s.ServeHTTP(w, r)
		}()
		return done
	}
	for i := 0; i < 4; i++ {
		w := newStalledWriter()
		held = append(held, w)
		done := ask(w)
		select {
		case <-w.writing:
		case <-done:
			t.Fatalf("unread answer %d of %d bytes (a quarter of the budget is %d): %d, want it written", i+1, size, 4*size, w.code)
		}
	}
	w := newStalledWriter()
	held = append(held, w)
	done := ask(w)
	select {
	case <-w.writing:
		t.Fatalf("a fifth unread answer of %d bytes from the one address was written: it holds %d bytes, past a quarter (%d) of MaxAnswerBytes %d",
			size, 5*size, 4*size, 16*size)
	case <-done:
		if w.code != http.StatusServiceUnavailable {
			t.Fatalf("a fifth unread answer past the address's quarter: %d, want 503", w.code)
		}
	}
}

// TestAnswerLargerThanBudgetAloneWritten: an answer larger than
// MaxAnswerBytes is written while no other answer is held
// (docs/OPERATIONS.md): a raw block larger than a small bound is not
// refused 503 on an idle server, or it could never be had.
func TestAnswerLargerThanBudgetAloneWritten(t *testing.T) {
	n := newTestNode(t, "")
	raw, size := n.bigRawBlock()
	s := New(Config{MaxAnswerBytes: int64(size / 2), CostHardLimit: -1}, n.backend, n.h.Chain)
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, raw, nil)
	r.RemoteAddr = "198.51.100.11:1234"
	s.ServeHTTP(w, r)
	if w.Code != http.StatusOK || w.Body.Len() != size {
		t.Fatalf("GET %s (%d bytes, MaxAnswerBytes %d) with nothing held: %d, %d bytes %.80q; want 200 and the block",
			raw, size, size/2, w.Code, w.Body.Len(), w.Body.String())
	}
}

// TestRequestBodyBytesCharged: a client's cost account is charged the bytes
// of the request body it sent, as the Electrum server charges a request's
// bytes in (BandwidthUnit bytes cost 1): an 8,000,000-byte POST /tx costs
// about 1,600, not the 0.5 of a request alone.
func TestRequestBodyBytesCharged(t *testing.T) {
	s, addr := startBare(t, Config{})
	body := strings.Repeat("00", 4_000_000)
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+addr+"/tx", "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	want := float64(len(body)) / electrum.DefaultBandwidthUnit
	if got := accountCost(s, "127.0.0.1"); got < want*0.9 {
		t.Fatalf("account after an %d-byte body: %.1f, want at least %.0f (its bytes over BandwidthUnit %d)",
			len(body), got, want*0.9, electrum.DefaultBandwidthUnit)
	}
}

package esplora

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestClientAddress checks which address a request counts against: its
// peer's, or behind an exempt proxy the one the proxy forwarded last; an
// IPv6 address by its /64.
func TestClientAddress(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s := New(Config{ExemptNets: []*net.IPNet{loopback}}, nil, nil)
	for _, c := range []struct {
		remote string
		xff    []string
		ip     string
		exempt bool
	}{
		{"127.0.0.1:5555", nil, "127.0.0.1", true},
		{"127.0.0.1:5555", []string{"1.2.3.4, 5.6.7.8"}, "5.6.7.8", false},
		{"127.0.0.1:5555", []string{"9.9.9.9", "1.2.3.4"}, "1.2.3.4", false},
		{"127.0.0.1:5555", []string{"127.0.0.2"}, "127.0.0.2", true},
		{"127.0.0.1:5555", []string{"not an address"}, "127.0.0.1", true},
		{"10.0.0.1:1", []string{"5.6.7.8"}, "10.0.0.1", false},
		{"[::1]:80", nil, "::/64", false},
		{"[2001:db8:1:2::7]:80", nil, "2001:db8:1:2::/64", false},
		{"127.0.0.1:5555", []string{"2001:db8:1:2::7"}, "2001:db8:1:2::/64", false},
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		ip, exempt := s.clientIP(r)
		if ip != c.ip || exempt != c.exempt {
			t.Errorf("%s %v: %s %v, want %s %v", c.remote, c.xff, ip, exempt, c.ip, c.exempt)
		}
	}
}

// TestRequestsPerAddress fills an address's places and checks the next
// request is refused with 429 until one is free.
func TestRequestsPerAddress(t *testing.T) {
	n := newTestNode(t, "")
	for i := 0; i < DefaultMaxRequestsPerIP; i++ {
		if !n.srv.inFlight.acquire("127.0.0.1", DefaultMaxRequestsPerIP) {
			t.Fatalf("place %d refused", i)
		}
	}
	if code, body := n.get("/blocks/tip/height"); code != http.StatusTooManyRequests || body != "Too Many Requests" {
		t.Fatalf("over the limit: %d %s", code, body)
	}
	n.srv.inFlight.release("127.0.0.1")
	if code, _ := n.get("/blocks/tip/height"); code != http.StatusOK {
		t.Fatalf("with a place free: %d", code)
	}
}

// TestCostLimits runs a server with small cost limits: a client asking
// again and again is slowed past the soft limit and refused with 429 at the
// hard one; a client in the exempt networks is never charged, unless
// ThrottleExempt.
func TestCostLimits(t *testing.T) {
	n := newTestNode(t, "")
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	for _, c := range []struct {
		name    string
		exempt  []*net.IPNet
		charged bool
		refused bool
	}{
		{"charged", nil, false, true},
		{"exempt", []*net.IPNet{loopback}, false, false},
		{"throttle exempt", []*net.IPNet{loopback}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			// Each request costs 0.5 and its bytes: about 0.53 here.
			s := New(Config{Listeners: []net.Listener{l}, ExemptNets: c.exempt, ThrottleExempt: c.charged,
				CostSoftLimit: 2, CostHardLimit: 10, RequestSleep: 20 * time.Millisecond, BandwidthUnit: 100},
				n.backend, n.h.Chain)
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			refusedAt := 0
			for i := 1; i <= 40 && refusedAt == 0; i++ {
				resp, err := n.http.Get("http://" + l.Addr().String() + "/blocks/tip/height")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusTooManyRequests:
					if string(b) != "Too Many Requests: excessive resource usage" {
						t.Fatalf("refusal %q", b)
					}
					refusedAt = i
				case resp.StatusCode != http.StatusOK:
					t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
				}
			}
			switch {
			case c.refused && (refusedAt < 15 || refusedAt > 25):
				t.Fatalf("refused at request %d, want about the 19th (cost 10 at 0.53 a request)", refusedAt)
			case !c.refused && refusedAt != 0:
				t.Fatalf("refused at request %d, want never", refusedAt)
			}
		})
	}
}

// TestRefusedPathsShareOneLabel: requests refused before any endpoint
// took them, and paths that are no endpoint, count under "unknown": a
// client cannot grow the metrics with paths of its own making, which it
// could if the label came from its path (about 14 million paths of the
// endpoints' words).
func TestRefusedPathsShareOneLabel(t *testing.T) {
	s := New(Config{CostSoftLimit: 2, CostHardLimit: 10}, nil, nil)
	reg := prometheus.NewRegistry()
	if err := s.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	s.costs.charge("192.0.2.1", s.limits, 1_000_000) // over its hard limit
	words := []string{"tx", "blocks", "raw", "hex", "txs", "utxo", "mempool", "status", "hash", "tip"}
	for _, a := range words {
		for _, b := range words {
			r := httptest.NewRequest(http.MethodGet, "/tx/"+a+"/"+b, nil)
			r.RemoteAddr = "192.0.2.1:1234"
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", w.Code)
			}
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "esplora_requests_total" {
			continue
		}
		if n := len(mf.GetMetric()); n != 1 {
			t.Fatalf("%d esplora_requests_total series for refused requests, want 1", n)
		}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			if l.GetName() == "endpoint" && l.GetValue() != "unknown" {
				t.Fatalf("refused requests labelled %q, want unknown", l.GetValue())
			}
		}
	}
}

// stalledWriter is a client that takes an answer's headers and then stops
// reading: its Write of a 200's body blocks until release closes.
type stalledWriter struct {
	h       http.Header
	code    int
	writing chan struct{}
	release chan struct{}
	n       int
	once    sync.Once
}

// free lets the client read.
func (w *stalledWriter) free() { w.once.Do(func() { close(w.release) }) }

func newStalledWriter() *stalledWriter {
	return &stalledWriter{h: http.Header{}, writing: make(chan struct{}), release: make(chan struct{})}
}

func (w *stalledWriter) Header() http.Header { return w.h }

func (w *stalledWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *stalledWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.code == http.StatusOK {
		select {
		case <-w.writing:
		default:
			close(w.writing)
		}
		<-w.release
	}
	w.n += len(b)
	return len(b), nil
}

// TestAnswerBudget: clients that stop reading hold their answers until the
// write timeout; past MaxAnswerBytes of them a large answer is refused with
// 503, while small ones that fit are still answered, and once a client has
// taken its answer the next large one is answered again.
func TestAnswerBudget(t *testing.T) {
	n := newTestNode(t, "")
	raw, size := n.bigRawBlock()
	// Room for three of them, and half of one for small answers.
	max := int64(3*size + size/2)
	s := New(Config{MaxAnswerBytes: max, CostHardLimit: -1, MaxRequestsPerIP: -1}, n.backend, n.h.Chain)
	// Each request from an address of its own: one address holds at most
	// a quarter of the bound (TestOneAddressCannotTakeWholeAnswerBudget).
	client := 0
	ask := func(path string, w http.ResponseWriter) chan struct{} {
		done := make(chan struct{})
		client++
		addr := fmt.Sprintf("192.0.2.%d:1234", client)
		go func() {
			defer close(done)
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.RemoteAddr = addr
			s.ServeHTTP(w, r)
		}()
		return done
	}
	var held []*stalledWriter
	var dones []chan struct{}
	t.Cleanup(func() {
		for _, w := range held {
			w.free()
		}
	})
	for i := 0; i < 3; i++ {
		w := newStalledWriter()
		done := ask(raw, w)
		select {
		case <-w.writing:
		case <-done:
			t.Fatalf("answer %d of %d bytes with %d held: %d, want it written", i, size, i*size, w.code)
		}
		held, dones = append(held, w), append(dones, done)
	}
	w := newStalledWriter()
	w.free()
	<-ask(raw, w)
	if w.code != http.StatusServiceUnavailable {
		t.Fatalf("a fourth answer of %d bytes past %d: %d, want 503", size, max, w.code)
	}
	w = newStalledWriter()
	w.free()
	<-ask("/blocks/tip/height", w)
	if w.code != http.StatusOK || w.n == 0 {
		t.Fatalf("a small answer while the budget is full: %d (%d bytes)", w.code, w.n)
	}
	held[0].free()
	<-dones[0]
	if held[0].n != size {
		t.Fatalf("the answer written: %d bytes, want %d", held[0].n, size)
	}
	w = newStalledWriter()
	w.free()
	<-ask(raw, w)
	if w.code != http.StatusOK || w.n != size {
		t.Fatalf("once a client took its answer: %d (%d bytes), want 200 and %d", w.code, w.n, size)
	}
	for i, w := range held[1:] {
		w.free()
		<-dones[i+1]
	}
	if s.answers.held != 0 {
		t.Fatalf("%d bytes still counted after every answer was written", s.answers.held)
	}
}

// TestGoneWhileThrottledCounted: a client that leaves while its request
// waits out the cost limits' delay is counted in esplora_requests_total as
// gone, as a client that leaves before any other answer is.
func TestGoneWhileThrottledCounted(t *testing.T) {
	s := New(Config{CostSoftLimit: 10, CostHardLimit: 1000, RequestSleep: time.Minute}, nil, nil)
	reg := prometheus.NewRegistry()
	if err := s.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	// Half-way between the limits: a request waits about 30 s.
	s.costs.charge("192.0.2.1", s.limits, 500*int(s.limits.unit))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := httptest.NewRequest(http.MethodGet, "/blocks/tip/height", nil).WithContext(ctx)
	r.RemoteAddr = "192.0.2.1:1234"
	w := httptest.NewRecorder()
	start := time.Now()
	s.ServeHTTP(w, r)
	if time.Since(start) > 10*time.Second {
		t.Fatal("the throttled request did not end with its client")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "esplora_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	if total != 1 {
		t.Fatalf("a request whose client left while it was throttled: esplora_requests_total sums to %v, want 1 (code=\"gone\")", total)
	}
}

// failingBody is a request body whose read fails as a cut or timed-out
// connection's does.
type failingBody struct{}

func (failingBody) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 3002},
		Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 50000}, Err: errors.New("i/o timeout")}
}

// A body that fails to arrive is answered 400 with a plain text, not the
// network error's, which names the server's sockets.
func TestBodyReadFailureNamesNoSocket(t *testing.T) {
	s := New(Config{}, nil, nil)
	r := httptest.NewRequest(http.MethodPost, "/tx", io.NopCloser(failingBody{}))
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if body := w.Body.String(); w.Code != http.StatusBadRequest || body != "Request body could not be read" {
		t.Fatalf("POST /tx with a failing body: %d %q", w.Code, body)
	}
}

// bigRawBlock returns the /raw path of the newest block of more than a page
// of transactions, and its answer's size: an answer large enough to fill the
// answer budgets of the limit tests.
func (n *testNode) bigRawBlock() (string, int) {
	n.t.Helper()
	tip := n.h.Chain.BestSnapshot()
	var raw string
	for h := tip.Height; h > 0 && raw == ""; h-- {
		if b, _ := n.h.Chain.BlockByHeight(h); len(b.Transactions()) > chainTxsPerPage {
			raw = "/block/" + b.Hash().String() + "/raw"
		}
	}
	code, body := n.get(raw)
	if code != http.StatusOK {
		n.t.Fatalf("GET %s: %d", raw, code)
	}
	return raw, len(body)
}

package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// Request is one request of the well-behaved client's mix.
type Request struct {
	Method string
	// Params is the JSON array of parameters ("[]" when empty).
	Params string
}

// Mix returns a wallet-like request mix over the given script hashes,
// transaction ids and heights: balance, history and unspent outputs of
// each script, a header, a transaction, the tip, a ping.
func Mix(scripts, txids []string, heights []int) []Request {
	var out []Request
	for i, sh := range scripts {
		q := strconv.Quote(sh)
		out = append(out,
			Request{"blockchain.scripthash.get_balance", "[" + q + "]"},
			Request{"blockchain.scripthash.get_history", "[" + q + "]"},
			Request{"blockchain.scripthash.listunspent", "[" + q + "]"},
			Request{"server.ping", "[]"},
		)
		if len(heights) > 0 {
			out = append(out, Request{"blockchain.block.header", "[" + strconv.Itoa(heights[i%len(heights)]) + "]"})
		}
		if len(txids) > 0 {
			out = append(out, Request{"blockchain.transaction.get", "[" + strconv.Quote(txids[i%len(txids)]) + "]"})
		}
		out = append(out, Request{"blockchain.headers.subscribe", "[]"})
	}
	return out
}

// GoodClient is a well-behaved wallet: one session, one request at a time
// at a steady pace, every answer compared with the answer the same request
// got before any attack.
type GoodClient struct {
	addr string
	src  net.IP
	mix  []Request
	ref  [][]byte
	s    *lineSession
	id   int64
	// sent counts the requests Run has sent so far, for a caller that
	// waits for a number of them.
	sent atomic.Int64
	// Log, when set, gets a line per request Run sends: its start (Unix
	// nanoseconds), its latency (nanoseconds) and its method, to match
	// against an execution trace of the server (whose clock events give
	// its wall time).
	Log io.Writer
}

// Sent returns the number of requests Run has sent so far.
func (g *GoodClient) Sent() int64 { return g.sent.Load() }

// NewGoodClient connects to addr (plain TCP) from src (nil: the system's
// choice). ref are the answers the requests of mix must get, from the Ref
// of an earlier client; nil records them now (before any attack).
//
// A session's cost decays by only 1 a second with the default limits
// (electrum.Config.CostHardLimit / 10,000), so a client that asks several
// times a second is throttled after a few minutes however well it
// behaves: a measurement takes a new client, from a new /24 (the cost of a
// subnet outlives its sessions), every few hundred requests.
func NewGoodClient(ctx context.Context, addr string, src net.IP, mix []Request, ref [][]byte) (*GoodClient, error) {
	if len(mix) == 0 {
		return nil, fmt.Errorf("hostile: empty request mix")
	}
	if ref != nil && len(ref) != len(mix) {
		return nil, fmt.Errorf("hostile: %d reference answers for %d requests", len(ref), len(mix))
	}
	g := &GoodClient{addr: addr, src: src, mix: mix, ref: ref}
	if err := g.connect(ctx); err != nil {
		return nil, err
	}
	if ref != nil {
		return g, nil
	}
	for _, r := range mix {
		res, err := g.call(r)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("reference answer of %s %s: %w", r.Method, r.Params, err)
		}
		g.ref = append(g.ref, res)
	}
	return g, nil
}

// Ref returns the reference answers, one per request of the mix.
func (g *GoodClient) Ref() [][]byte { return g.ref }

func (g *GoodClient) connect(ctx context.Context) error {
	var d net.Dialer
	if g.src != nil {
		d.LocalAddr = &net.TCPAddr{IP: g.src}
	}
	c, err := d.DialContext(ctx, "tcp", g.addr)
	if err != nil {
		return err
	}
	g.s = newLineSession(c)
	if err := g.s.send([]byte(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["good wallet","1.4"]}`), 10*time.Second); err != nil {
		c.Close()
		return err
	}
	a, _, err := g.s.read(30 * time.Second)
	if err != nil {
		c.Close()
		return err
	}
	if a.Error != nil {
		c.Close()
		return fmt.Errorf("server.version: %d %s", a.Error.Code, a.Error.Message)
	}
	return nil
}

// Close closes the session.
func (g *GoodClient) Close() error { return g.s.c.Close() }

// call sends one request and returns its result.
func (g *GoodClient) call(r Request) ([]byte, error) {
	g.id++
	line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, g.id, r.Method, r.Params)
	if err := g.s.send(line, 30*time.Second); err != nil {
		return nil, err
	}
	a, _, err := g.s.read(60 * time.Second)
	if err != nil {
		return nil, err
	}
	if string(a.ID) != strconv.FormatInt(g.id, 10) {
		return nil, fmt.Errorf("answer with id %s to request %d", a.ID, g.id)
	}
	if a.Error != nil {
		return nil, fmt.Errorf("error %d %s", a.Error.Code, a.Error.Message)
	}
	return append([]byte(nil), a.Result...), nil
}

// Result is what the well-behaved client saw in one run.
type Result struct {
	Requests int `json:"requests"`
	// Wrong counts answers that differ from the reference; Errors
	// requests that failed (an error answer, the session lost).
	Wrong  int `json:"wrong"`
	Errors int `json:"errors"`
	// Reconnects counts sessions the client had to open again.
	Reconnects int           `json:"reconnects"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	Max        time.Duration `json:"max_ns"`
	Notes      []string      `json:"notes,omitempty"`
	// Latencies are the requests' times, sorted.
	Latencies []time.Duration `json:"-"`
}

// Merge pools results: their counts added, their percentiles taken over
// all their requests.
func Merge(rs ...Result) Result {
	var m Result
	for _, r := range rs {
		m.Requests += r.Requests
		m.Wrong += r.Wrong
		m.Errors += r.Errors
		m.Reconnects += r.Reconnects
		for _, n := range r.Notes {
			if len(m.Notes) < 10 {
				m.Notes = append(m.Notes, n)
			}
		}
		m.Latencies = append(m.Latencies, r.Latencies...)
	}
	m.percentiles()
	return m
}

// percentiles sorts Latencies and sets P50, P99 and Max from them.
func (r *Result) percentiles() {
	slices.Sort(r.Latencies)
	if n := len(r.Latencies); n > 0 {
		r.P50 = r.Latencies[(n-1)*50/100]
		r.P99 = r.Latencies[(n-1)*99/100]
		r.Max = r.Latencies[n-1]
	}
}

// OK reports whether every request was answered correctly on one session.
func (r Result) OK() bool {
	return r.Requests > 0 && r.Wrong == 0 && r.Errors == 0 && r.Reconnects == 0
}

// String is a one-line summary.
func (r Result) String() string {
	return fmt.Sprintf("%d requests, p50 %v, p99 %v, max %v, wrong %d, errors %d, reconnects %d",
		r.Requests, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond),
		r.Wrong, r.Errors, r.Reconnects)
}

// Run sends the mix in a loop, starting a request every interval (or as
// soon as the previous answer arrives when that takes longer), until ctx
// is done or max requests were sent (0: no bound).
func (g *GoodClient) Run(ctx context.Context, interval time.Duration, max int) Result {
	var res Result
	var lat []time.Duration
	next := time.Now()
	for i := 0; ctx.Err() == nil && (max == 0 || res.Requests < max); i++ {
		if d := time.Until(next); d > 0 && !sleepCtx(ctx, d) {
			break
		}
		next = time.Now().Add(interval)
		k := i % len(g.mix)
		t0 := time.Now()
		got, err := g.call(g.mix[k])
		el := time.Since(t0)
		if g.Log != nil {
			fmt.Fprintf(g.Log, "%d %d %s\n", t0.UnixNano(), el.Nanoseconds(), g.mix[k].Method)
		}
		g.sent.Add(1)
		res.Requests++
		lat = append(lat, el)
		switch {
		case err != nil:
			res.Errors++
			if len(res.Notes) < 10 {
				res.Notes = append(res.Notes, fmt.Sprintf("%s %s: %v", g.mix[k].Method, g.mix[k].Params, err))
			}
			if isClosed(err) || isTimeout(err) {
				g.Close()
				res.Reconnects++
				if err := g.connect(ctx); err != nil {
					res.Notes = append(res.Notes, fmt.Sprintf("reconnecting: %v", err))
					if !sleepCtx(ctx, time.Second) {
						break
					}
				}
			}
		case !bytes.Equal(got, g.ref[k]):
			res.Wrong++
			if len(res.Notes) < 10 {
				res.Notes = append(res.Notes, fmt.Sprintf("%s %s: answer %.100s differs from %.100s", g.mix[k].Method, g.mix[k].Params, got, g.ref[k]))
			}
		}
	}
	res.Latencies = lat
	res.percentiles()
	return res
}

// MarshalJSON is used for the benchmark's report: durations in
// milliseconds.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		P50ms float64 `json:"p50_ms"`
		P99ms float64 `json:"p99_ms"`
		MaxMs float64 `json:"max_ms"`
	}{plain(r), ms(r.P50), ms(r.P99), ms(r.Max)})
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

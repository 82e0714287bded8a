package hostile

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind names an attack.
type Kind string

// The attacks, as docs/RELIABILITY.md lists them.
const (
	// Idle holds Conns sessions open (server.version, then nothing).
	Idle Kind = "idle"
	// SlowRead holds Conns sessions that keep asking for large answers
	// and never read them (a 4 KiB receive buffer).
	SlowRead Kind = "slowread"
	// BigLine sends 2 MB lines over TCP (and 2 MB frames over WS when
	// the target has a WS listener) from Workers sessions.
	BigLine Kind = "bigline"
	// BigBatch sends 10,000-request batches from Workers sessions.
	BigBatch Kind = "bigbatch"
	// SubFlood subscribes Workers sessions to as many script hashes as
	// the server allows, then holds them.
	SubFlood Kind = "subflood"
	// BadJSON sends invalid UTF-8 and invalid JSON from Workers
	// sessions.
	BadJSON Kind = "badjson"
	// TLSHalfOpen holds Conns connections to the TLS (and WSS) listeners
	// that stop halfway through the ClientHello; one in ten sends
	// plaintext instead (and, closed, connects again a second later).
	TLSHalfOpen Kind = "tlshalfopen"
	// WSBad sends WebSocket upgrades and frames of every bad kind from
	// Workers connections, a new connection for each.
	WSBad Kind = "wsbad"
	// Churn opens Rate connections a second, each negotiating and
	// closing at once.
	Churn Kind = "churn"
)

// Kinds lists every attack in the order the benchmark runs them.
var Kinds = []Kind{Idle, SlowRead, BigLine, BigBatch, SubFlood, BadJSON, TLSHalfOpen, WSBad, Churn}

// Config sizes an attack.
type Config struct {
	// Conns is the number of connections held (Idle, SlowRead,
	// TLSHalfOpen).
	Conns int
	// Workers is the number of attacking sessions at once (BigLine,
	// BigBatch, SubFlood, BadJSON, WSBad).
	Workers int
	// Rate is the connections per second of Churn.
	Rate int
	// WSCases, when set, keeps only the WebSocket cases (WSCaseNames)
	// whose names it matches: to find which of them costs the server
	// most.
	WSCases *regexp.Regexp
	// Scripts are script hashes (hex) SubFlood subscribes to first
	// (random ones follow) and SlowRead asks the history of.
	Scripts []string
	// Ready, when set, is called once the attack is at full strength
	// (every connection of Idle, SlowRead and TLSHalfOpen attempted).
	Ready func()
}

// Run runs the attack kind against t until ctx is done and returns once
// every connection it opened is closed.
func Run(ctx context.Context, kind Kind, t *Target, cfg Config, st *Stats) error {
	ready := cfg.Ready
	if ready == nil {
		ready = func() {}
	}
	switch kind {
	case Idle:
		return held(ctx, cfg.Conns, ready, func(ctx context.Context, _ int, ramped func()) { idleConn(ctx, t, st, ramped) })
	case SlowRead:
		return held(ctx, cfg.Conns, ready, func(ctx context.Context, _ int, ramped func()) { slowReader(ctx, t, cfg.Scripts, st, ramped) })
	case TLSHalfOpen:
		hello, err := clientHello()
		if err != nil {
			return err
		}
		return held(ctx, cfg.Conns, ready, func(ctx context.Context, i int, ramped func()) {
			halfOpen(ctx, t, hello, i%10 == 9, i%2 == 1, st, ramped)
		})
	case BigLine, BigBatch, SubFlood, BadJSON, WSBad:
		if cfg.Workers < 1 {
			return fmt.Errorf("hostile: %s needs Workers", kind)
		}
		cases := wsCases
		if cfg.WSCases != nil {
			cases = nil
			for _, c := range wsCases {
				if cfg.WSCases.MatchString(c.name) {
					cases = append(cases, c)
				}
			}
			if len(cases) == 0 {
				return fmt.Errorf("hostile: no WebSocket case matches %q", cfg.WSCases)
			}
		}
		var wg sync.WaitGroup
		for w := 0; w < cfg.Workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch kind {
				case BigLine:
					if w%2 == 1 && t.WS != "" {
						bigFrames(ctx, t, st)
					} else {
						bigLines(ctx, t, st)
					}
				case BigBatch:
					bigBatches(ctx, t, st)
				case SubFlood:
					subFlood(ctx, t, cfg.Scripts, w, st)
				case BadJSON:
					badJSON(ctx, t, st)
				case WSBad:
					wsBad(ctx, t, cases, w, st)
				}
			}()
		}
		ready()
		wg.Wait()
		return nil
	case Churn:
		return churn(ctx, t, cfg.Rate, ready, st)
	}
	return fmt.Errorf("hostile: unknown attack %q", kind)
}

// held runs n connection loops, started at most 100 at a time, calls ready
// once each has made its first attempt, and waits for all of them.
func held(ctx context.Context, n int, ready func(), loop func(ctx context.Context, i int, ramped func())) error {
	if n < 1 {
		return fmt.Errorf("hostile: Conns must be positive")
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sem <- struct{}{}
		var once sync.Once
		ramped := func() { once.Do(func() { <-sem }) }
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ramped()
			loop(ctx, i, ramped)
		}()
	}
	for i := 0; i < cap(sem); i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
	}
	if ctx.Err() == nil {
		ready()
	}
	wg.Wait()
	return nil
}

// dialSession connects over TCP and negotiates; it counts the attempt.
func dialSession(ctx context.Context, t *Target, st *Stats, rcvBuf int) (*lineSession, func(), error) {
	c, err := t.dial(ctx, t.TCP, rcvBuf)
	if err != nil {
		if ctx.Err() == nil {
			st.DialErrors.Add(1)
			st.note("dial: %v", err)
		}
		return nil, nil, err
	}
	st.Connects.Add(1)
	release := st.hold()
	done := closeOnDone(ctx, c)
	end := func() { done(); release() }
	s := newLineSession(c)
	if err := s.negotiate(30 * time.Second); err != nil {
		end()
		st.outcome(ctx, err, "server.version")
		return nil, nil, err
	}
	return s, end, nil
}

// idleConn holds one negotiated session until ctx is done, reconnecting
// if the server closes it.
func idleConn(ctx context.Context, t *Target, st *Stats, ramped func()) {
	for ctx.Err() == nil {
		s, end, err := dialSession(ctx, t, st, 0)
		ramped()
		if err != nil {
			if !sleepCtx(ctx, time.Second) {
				return
			}
			continue
		}
		st.Expected.Add(1)
		s.c.SetReadDeadline(time.Time{})
		_, err = s.r.ReadByte()
		end()
		if ctx.Err() != nil {
			return
		}
		st.outcome(ctx, err, "idle session")
		if !sleepCtx(ctx, time.Second) {
			return
		}
	}
}

// slowReader keeps one session that asks for large answers and reads
// none, reconnecting when the server disconnects it.
func slowReader(ctx context.Context, t *Target, scripts []string, st *Stats, ramped func()) {
	var reqs []string
	reqs = append(reqs, `{"jsonrpc":"2.0","id":1,"method":"blockchain.block.headers","params":[0,2016]}`)
	// Not the heaviest scripts (the first 100 of the benchmark's
	// scripts file) but the ones after them, a random sample of the
	// chain's (one to a few entries each): the attack is about answers
	// piling up, the 2,016 headers, not about costly requests.
	for i := min(100, len(scripts)/2); i < len(scripts) && len(reqs) < 11; i++ {
		reqs = append(reqs, `{"jsonrpc":"2.0","id":2,"method":"blockchain.scripthash.get_history","params":["`+scripts[i]+`"]}`)
	}
	reqs = append(reqs, `{"jsonrpc":"2.0","id":3,"method":"server.banner"}`)
	var batch []byte
	for _, r := range reqs {
		batch = append(batch, r...)
		batch = append(batch, '\n')
	}
	for ctx.Err() == nil {
		c, err := t.dial(ctx, t.TCP, 4096)
		ramped()
		if err != nil {
			if ctx.Err() == nil {
				st.DialErrors.Add(1)
				st.note("dial: %v", err)
			}
			if !sleepCtx(ctx, time.Second) {
				return
			}
			continue
		}
		st.Connects.Add(1)
		release := st.hold()
		done := closeOnDone(ctx, c)
		s := newLineSession(c)
		err = s.send([]byte(versionLine), 10*time.Second)
		for err == nil && ctx.Err() == nil {
			// Pipelined requests whose answers are never read: the
			// server must stop reading them (backpressure) or drop
			// the session, not buffer without bound.
			err = s.send(batch, time.Second)
			if isTimeout(err) {
				err = nil
			}
			if err == nil {
				st.Sent.Add(int64(len(reqs)))
				if !sleepCtx(ctx, 100*time.Millisecond) {
					break
				}
			}
		}
		done()
		release()
		st.outcome(ctx, err, "slow reader")
		// A new slow reader takes the place of one cut off, not a
		// connection flood.
		if !sleepCtx(ctx, time.Second) {
			return
		}
	}
}

// clientHello returns the first record a TLS client sends.
func clientHello() ([]byte, error) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go tls.Client(a, &tls.Config{ServerName: "localhost", InsecureSkipVerify: true}).Handshake()
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 8192)
	n, err := b.Read(buf)
	if err != nil {
		return nil, fmt.Errorf("capturing a ClientHello: %w", err)
	}
	return buf[:n], nil
}

// halfOpen holds a connection to the TLS (or WSS) listener that sends half
// a ClientHello and then nothing, until the server drops it; with
// plaintext it sends a JSON-RPC line instead, which the server must
// refuse by closing, and connects again a second later.
func halfOpen(ctx context.Context, t *Target, hello []byte, plaintext, wss bool, st *Stats, ramped func()) {
	addr := t.TLS
	if wss && t.WSS != "" {
		addr = t.WSS
	}
	for ctx.Err() == nil {
		c, err := t.dial(ctx, addr, 0)
		if err != nil {
			ramped()
			if ctx.Err() == nil {
				st.DialErrors.Add(1)
				st.note("dial: %v", err)
			}
			if !sleepCtx(ctx, time.Second) {
				return
			}
			continue
		}
		st.Connects.Add(1)
		release := st.hold()
		done := closeOnDone(ctx, c)
		msg := hello[:len(hello)/2]
		if plaintext {
			msg = []byte(versionLine + "\n")
		}
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Write(msg)
		st.Sent.Add(1)
		ramped()
		if err == nil {
			// The server answers plaintext with a TLS alert (or
			// nothing) and closes; half a handshake is dropped once
			// the handshake times out.
			buf := make([]byte, 512)
			for err == nil {
				_, err = c.Read(buf)
			}
		}
		done()
		release()
		if ctx.Err() != nil {
			return
		}
		if plaintext && isClosed(err) {
			st.Expected.Add(1)
			// A client that speaks plaintext to a TLS port tries
			// again, not in a tight loop: a flood of connections is
			// the churn attack, at its stated rate.
			if !sleepCtx(ctx, plaintextRetry) {
				return
			}
		} else {
			st.outcome(ctx, err, "half-open TLS")
		}
	}
}

// plaintextRetry is how long a plaintext connection of TLSHalfOpen waits
// after the server closed it before it connects again.
const plaintextRetry = time.Second

// bigLines sends 2 MB lines, each of which must be answered "request too
// large" while the session goes on, until the session's cost ends it.
func bigLines(ctx context.Context, t *Target, st *Stats) {
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"server.banner","params":["` + strings.Repeat("x", 2_000_000) + `"]}`)
	for ctx.Err() == nil {
		s, end, err := dialSession(ctx, t, st, 0)
		if err != nil {
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		for err == nil && ctx.Err() == nil {
			if err = s.send(line, 30*time.Second); err != nil {
				break
			}
			st.Sent.Add(1)
			var a *answer
			if a, _, err = s.read(30 * time.Second); err != nil {
				break
			}
			switch c := a.code(); {
			case c == codeInvalidRequest && strings.Contains(a.Error.Message, "too large"):
				st.Expected.Add(1)
			case c == codeExcessiveUsage:
				err = errRefused
			default:
				st.unexpected("2 MB line answered %.100s", string(mustJSON(a)))
			}
		}
		end()
		st.outcome(ctx, err, "2 MB lines")
	}
}

// bigBatches sends 10,000-request batches, each answered "batch limit
// exceeded".
func bigBatches(ctx context.Context, t *Target, st *Stats) {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < 10_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"server.ping"}`, i)
	}
	b.WriteByte(']')
	line := []byte(b.String())
	for ctx.Err() == nil {
		s, end, err := dialSession(ctx, t, st, 0)
		if err != nil {
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		for err == nil && ctx.Err() == nil {
			if err = s.send(line, 30*time.Second); err != nil {
				break
			}
			st.Sent.Add(1)
			var a *answer
			if a, _, err = s.read(30 * time.Second); err != nil {
				break
			}
			switch c := a.code(); c {
			case codeLimitExceeded:
				st.Expected.Add(1)
			case codeExcessiveUsage:
				err = errRefused
			default:
				st.unexpected("10,000-request batch answered %.100s", string(mustJSON(a)))
			}
		}
		end()
		st.outcome(ctx, err, "10,000-request batches")
	}
}

// subBatch is the number of subscriptions SubFlood asks for in one batch:
// few, because once a limit refuses one, every further refusal in the
// batch adds to the session's cost and the server throttles the rest.
const subBatch = 25

// subFlood subscribes one session to script hashes in batches until a
// limit refuses it, then holds the session and its subscriptions; it
// reconnects when the server disconnects it.
func subFlood(ctx context.Context, t *Target, scripts []string, worker int, st *Stats) {
	next := worker * 100_003
	hash := func() string {
		next++
		if len(scripts) > 0 && next%2 == 0 {
			return scripts[(next/2)%len(scripts)]
		}
		var b [32]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	for ctx.Err() == nil {
		s, end, err := dialSession(ctx, t, st, 0)
		if err != nil {
			if !sleepCtx(ctx, time.Second) {
				return
			}
			continue
		}
		limited := false
		for err == nil && ctx.Err() == nil && !limited {
			var b strings.Builder
			b.WriteByte('[')
			for i := 0; i < subBatch; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]}`, i+1, hash())
			}
			b.WriteByte(']')
			if err = s.send([]byte(b.String()), 30*time.Second); err != nil {
				break
			}
			st.Sent.Add(subBatch)
			var raw []byte
			var a *answer
			if a, raw, err = s.read(10 * time.Minute); err != nil {
				break
			}
			if raw[0] != '[' {
				switch a.code() {
				case codeExcessiveUsage:
					err = errRefused
				case codeLimitExceeded:
					st.Expected.Add(1)
					limited = true
				default:
					st.unexpected("subscription batch answered %.100s", raw)
				}
				break
			}
			var items []answer
			if json.Unmarshal(raw, &items) != nil {
				st.unexpected("subscription batch answer %.100s", raw)
				break
			}
			for _, it := range items {
				switch it.code() {
				case 0:
				case codeLimitExceeded:
					st.Expected.Add(1)
					limited = true
				case codeExcessiveUsage, codeServerBusy:
					// Throttled to the cost limit, or too slow
					// for the request timeout: the server's
					// limit, reached.
					st.Refused.Add(1)
					limited = true
				case codeBadRequest:
					// A script whose history is over the
					// response limit cannot be subscribed to.
					if strings.Contains(it.Error.Message, "history too large") {
						st.Expected.Add(1)
					} else {
						st.unexpected("subscribe answered %d %s", it.code(), it.Error.Message)
					}
				default:
					st.unexpected("subscribe answered %d %s", it.code(), it.Error.Message)
				}
			}
		}
		if err == nil && limited {
			// Hold the subscriptions until the attack ends, or the
			// server disconnects the session.
			s.c.SetReadDeadline(time.Time{})
			for err == nil {
				_, err = s.r.ReadByte()
			}
		}
		end()
		st.outcome(ctx, err, "subscription flood")
	}
}

// badLines are messages that are not JSON-RPC, with the error codes a
// server may answer each with.
var badLines = []struct {
	line  string
	codes []int
}{
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server.ping\",\"params\":[\"\xff\xfe\"]}", []int{codeParseError}},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server.\xc0\xafping\"}", []int{codeParseError}},
	{"\x00\x01\x02\x03\x04\x05 binary junk \x7f", []int{codeParseError}},
	{`{"jsonrpc":"2.0","id":1,"method":"server.ping"`, []int{codeParseError}},
	{`{"jsonrpc":"2.0","id":1,"method":"server.ping",}`, []int{codeParseError}},
	{`{"jsonrpc":"2.0" "id":1}`, []int{codeParseError}},
	{strings.Repeat("[", 100_000), []int{codeParseError}},
	{strings.Repeat(`{"a":`, 50_000), []int{codeParseError}},
	{`"just a string"`, []int{codeInvalidRequest}},
	{`12345`, []int{codeInvalidRequest}},
	{`{"jsonrpc":"2.0","id":1,"method":42}`, []int{codeInvalidRequest}},
	{`[]`, []int{codeInvalidRequest}},
}

// badJSON sends bad lines; each must be answered with a parse or request
// error until the session's cost ends it.
func badJSON(ctx context.Context, t *Target, st *Stats) {
	i := 0
	for ctx.Err() == nil {
		s, end, err := dialSession(ctx, t, st, 0)
		if err != nil {
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		for err == nil && ctx.Err() == nil {
			bl := badLines[i%len(badLines)]
			i++
			if err = s.send([]byte(bl.line), 30*time.Second); err != nil {
				break
			}
			st.Sent.Add(1)
			var a *answer
			var raw []byte
			if a, raw, err = s.read(30 * time.Second); err != nil {
				break
			}
			c := a.code()
			switch {
			case c == codeExcessiveUsage:
				err = errRefused
			case contains(bl.codes, c):
				st.Expected.Add(1)
			default:
				st.unexpected("bad line %.40q answered %.100s", bl.line, raw)
			}
		}
		end()
		st.outcome(ctx, err, "invalid JSON")
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// churn opens rate connections a second; each negotiates and closes.
func churn(ctx context.Context, t *Target, rate int, ready func(), st *Stats) error {
	if rate < 1 {
		return fmt.Errorf("hostile: churn needs Rate")
	}
	const tick = 10 * time.Millisecond
	per := float64(rate) * tick.Seconds()
	var wg sync.WaitGroup
	// Connections in flight are bounded: a server that stops answering
	// must not make the attacker run out of descriptors.
	sem := make(chan struct{}, 4000)
	tk := time.NewTicker(tick)
	defer tk.Stop()
	ready()
	owed := 0.0
	for ctx.Err() == nil {
		select {
		case <-tk.C:
		case <-ctx.Done():
		}
		owed += per
		for ; owed >= 1 && ctx.Err() == nil; owed-- {
			select {
			case sem <- struct{}{}:
			default:
				st.note("churn: 4000 connections in flight, skipping")
				owed = 0
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				_, end, err := dialSession(ctx, t, st, 0)
				if err == nil {
					st.Expected.Add(1)
					end()
				}
			}()
		}
	}
	wg.Wait()
	return nil
}

// mustJSON encodes v for a note.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(strconv.Quote(fmt.Sprint(v)))
	}
	return b
}

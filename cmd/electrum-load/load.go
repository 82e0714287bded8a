package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// maxErrorKinds bounds the distinct error texts kept per method; the rest
// are counted under "other".
const maxErrorKinds = 32

// methodStats are one method's counters in one phase.
type methodStats struct {
	Spec methodSpec
	// OK holds the latencies of result answers, Err those of error
	// answers.
	OK, Err histogram
	// Failures are requests without an answer: the connection ended,
	// the request timed out or the answer was unreadable.
	Failures atomic.Uint64

	mu    sync.Mutex
	kinds map[string]uint64 // error answers and failures by text
}

// countKind adds one to an error kind.
func (s *methodStats) countKind(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kinds == nil {
		s.kinds = map[string]uint64{}
	}
	if _, ok := s.kinds[kind]; !ok && len(s.kinds) >= maxErrorKinds {
		kind = "other"
	}
	s.kinds[kind]++
}

// errorKind is the key an error answer is counted under.
func errorKind(e rpcError) string {
	msg := e.Message
	if len(msg) > 100 {
		msg = msg[:100] + "…"
	}
	return fmt.Sprintf("%d %s", e.Code, msg)
}

// failureKind is the key a request without an answer is counted under.
func failureKind(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "no answer: timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed):
		return "no answer: disconnected"
	case errors.Is(err, errMalformed):
		return "no answer: malformed response"
	}
	s := err.Error()
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return "no answer: " + s
}

// phaseConfig says how to run one load phase.
type phaseConfig struct {
	Sessions int
	Warmup   time.Duration
	Duration time.Duration // 0: until Requests
	Requests uint64        // 0: until Duration
	Seed     uint64
	Index    int // the phase's number, for the random streams
}

// Phase states.
const (
	stateWarmup    = iota // requests are not recorded
	stateMeasuring        // requests are recorded
	stateStopped          // sessions finish their request and stop
)

// phase runs closed-loop sessions against the server.
type phase struct {
	cfg  phaseConfig
	d    target
	mix  *mix
	args requestArgs

	stats []*methodStats // per mix entry

	state       atomic.Int32
	issued      atomic.Uint64 // requests started while measuring
	inWindow    atomic.Uint64 // answered while measuring
	failed      atomic.Uint64 // failed (no answer) while measuring
	ended       atomic.Uint64 // recorded requests that ended, answered or not
	lastEnd     atomic.Int64  // unix nanoseconds of the last recorded request's end
	connects    atomic.Uint64
	connectErrs atomic.Uint64
	disconnects atomic.Uint64
	reachedN    chan struct{} // closed when the -requests N recorded requests ended

	mu    sync.Mutex
	conns map[int]session
}

// phaseResult is what a phase measured.
type phaseResult struct {
	Sessions    int
	Window      time.Duration
	Answered    uint64 // ok and error answers in the window
	Failed      uint64 // requests that got no answer in the window
	Stats       []*methodStats
	Connects    uint64
	ConnectErrs uint64
	Disconnects uint64
	Interrupted bool
}

// runPhase runs one phase and returns its counters. onStart and onEnd, when
// set, run at the measuring window's start and end (resource sampling).
func runPhase(ctx context.Context, d target, m *mix, args requestArgs, cfg phaseConfig,
	onStart, onEnd func()) *phaseResult {
	p := &phase{cfg: cfg, d: d, mix: m, args: args,
		reachedN: make(chan struct{}), conns: map[int]session{}}
	for _, e := range m.Entries {
		p.stats = append(p.stats, &methodStats{Spec: e.Spec})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	for i := 0; i < cfg.Sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.session(ctx, i)
		}()
	}
	sessionsDone := make(chan struct{})
	go func() { wg.Wait(); close(sessionsDone) }()

	res := &phaseResult{Sessions: cfg.Sessions, Stats: p.stats}
	sleep(ctx, cfg.Warmup)
	if onStart != nil {
		onStart()
	}
	start := time.Now()
	p.state.Store(stateMeasuring)
	var timer <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		timer = t.C
	}
	byCount := false
	select {
	case <-timer:
	case <-p.reachedN:
		byCount = true
	case <-ctx.Done():
		res.Interrupted = true
	}
	end := time.Now()
	p.state.Store(stateStopped)
	answeredAtStop, failedAtStop := p.inWindow.Load(), p.failed.Load()
	// Resources are read at the window's end, not after the drain below:
	// the answers they are divided by are the window's.
	if onEnd != nil {
		onEnd()
	}

	// Sessions finish their request; a request still unanswered after
	// the request timeout (and a second) is cut off.
	grace := time.NewTimer(d.wait() + time.Second)
	defer grace.Stop()
	select {
	case <-sessionsDone:
	case <-grace.C:
		p.closeAll()
		<-sessionsDone
	case <-ctx.Done():
		p.closeAll()
		<-sessionsDone
	}

	res.Answered, res.Failed = answeredAtStop, failedAtStop
	if byCount {
		// Every request counted has ended: the window ends with the
		// last of them.
		res.Answered, res.Failed = p.inWindow.Load(), p.failed.Load()
		if last := p.lastEnd.Load(); last > 0 {
			end = time.Unix(0, last)
		}
	}
	res.Window = end.Sub(start)
	res.Connects = p.connects.Load()
	res.ConnectErrs = p.connectErrs.Load()
	res.Disconnects = p.disconnects.Load()
	return res
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// session is one closed-loop client: one connection (reopened when it
// ends), one request at a time.
func (p *phase) session(ctx context.Context, idx int) {
	rng := rand.New(rand.NewPCG(p.cfg.Seed, uint64(p.cfg.Index)<<32|uint64(idx)))
	args := p.args // own parameter buffer
	args.buf = nil
	var c session
	defer func() {
		if c != nil {
			p.setConn(idx, nil)
			c.Close()
		}
	}()
	// A session whose connection failed or was lost waits before it
	// connects again, longer each time until a request is answered, so a
	// server that drops connections is not hammered with new ones.
	const minBackoff, maxBackoff = 50 * time.Millisecond, 2 * time.Second
	backoff, wait := minBackoff, false
	for p.state.Load() != stateStopped && ctx.Err() == nil {
		if c == nil {
			if wait {
				sleep(ctx, backoff)
				backoff = min(2*backoff, maxBackoff)
				if p.state.Load() == stateStopped || ctx.Err() != nil {
					return
				}
			}
			wait = true
			var err error
			p.connects.Add(1)
			c, _, err = p.d.open(ctx)
			if err != nil {
				p.connectErrs.Add(1)
				c = nil
				continue
			}
			if !p.setConn(idx, c) {
				return // the phase was cut off meanwhile
			}
		}
		i := p.mix.pick(rng)
		st := p.stats[i]
		params := args.params(st.Spec, rng)

		recording := p.state.Load() == stateMeasuring
		if recording && p.cfg.Requests > 0 {
			n := p.issued.Add(1)
			if n > p.cfg.Requests {
				return
			}
		}
		start := time.Now()
		a, err := c.do(st.Spec, params)
		elapsed := time.Since(start)
		if err != nil {
			p.disconnects.Add(1)
			p.setConn(idx, nil)
			c.Close()
			c = nil
			if recording {
				st.Failures.Add(1)
				st.countKind(failureKind(err))
				p.requestEnded(start.Add(elapsed), false)
			}
			continue
		}
		backoff, wait = minBackoff, false
		if !recording {
			continue
		}
		if a.errKind != "" {
			st.Err.Record(elapsed)
			st.countKind(a.errKind)
		} else {
			st.OK.Record(elapsed)
		}
		p.requestEnded(start.Add(elapsed), true)
		if p.cfg.Requests > 0 && p.issued.Load() >= p.cfg.Requests {
			return
		}
	}
}

// requestEnded counts a recorded request's end: an answer (a result or an
// error answer) or a failure, which is no answer and so is not counted as
// one. With -requests, the last of the N requests to end ends the window.
func (p *phase) requestEnded(at time.Time, answered bool) {
	if p.state.Load() == stateMeasuring || p.cfg.Requests > 0 {
		if answered {
			p.inWindow.Add(1)
		} else {
			p.failed.Add(1)
		}
	}
	ns := at.UnixNano()
	for {
		last := p.lastEnd.Load()
		if ns <= last || p.lastEnd.CompareAndSwap(last, ns) {
			break
		}
	}
	if p.cfg.Requests > 0 && p.ended.Add(1) == p.cfg.Requests {
		close(p.reachedN)
	}
}

// setConn records a session's connection so the phase can cut it off; it
// returns false when the phase has already been cut off.
func (p *phase) setConn(idx int, c session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return c == nil
	}
	if c == nil {
		delete(p.conns, idx)
	} else {
		p.conns[idx] = c
	}
	return true
}

// closeAll closes every open connection, ending requests in flight.
func (p *phase) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Package hostile attacks an Electrum server the way misbehaving clients
// do, and measures a well-behaved client beside them. The same attacks run
// at a small scale in the integration tests (integration/hostile_test.go,
// which asserts what the server answers) and at full scale against the
// built node in `e2ebench hostile` (docs/RELIABILITY.md, "Hostile
// clients").
//
// Every attack runs until its context is done, reconnecting as the server
// disconnects it, and returns once every connection it opened is closed.
// What the server did to each connection is counted in Stats: the
// protocol error it was meant to get, a clean disconnect, a refusal at
// connect, or something unexpected (described in Stats.Notes).
package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Target is the server under attack.
type Target struct {
	// TCP, TLS, WS and WSS are the listeners (host:port); an attack that
	// needs one that is empty fails.
	TCP, TLS, WS, WSS string
	// Sources are local addresses to connect from, used in turn (nil:
	// the system's choice). On Linux every address of 127.0.0.0/8 is
	// loopback, so one machine can play many clients: sessions from
	// different addresses meet the per-IP limits separately, and from
	// different /24s the per-subnet cost separately.
	Sources []net.IP
	// SendBuffer, when positive, is the kernel send buffer (SO_SNDBUF) of
	// every attacking connection. On loopback a sender's write also does
	// the receiving socket's TCP work, inside its own system call, where
	// a kernel that does not preempt in kernel mode cannot switch away: a
	// 2 MB write with the default buffer (autotuned up to 4 MiB) holds a
	// CPU for as long as the server's receive window lets it send. On a
	// network that work comes to the server in the network stack's own
	// small batches; a small send buffer cuts the attacker's writes into
	// similar pieces. The bytes sent are the same.
	SendBuffer int

	next atomic.Uint64
}

// source returns the next source address (nil without Sources).
func (t *Target) source() net.IP {
	if len(t.Sources) == 0 {
		return nil
	}
	return t.Sources[int(t.next.Add(1)-1)%len(t.Sources)]
}

// dial connects to addr from the next source address. rcvBuf, when
// positive, sets the socket's receive buffer before the connection is
// made (so the window the server sees is small from the start).
func (t *Target) dial(ctx context.Context, addr string, rcvBuf int) (net.Conn, error) {
	if addr == "" {
		return nil, errors.New("hostile: the target has no listener for this attack")
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	if ip := t.source(); ip != nil {
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	if rcvBuf > 0 || t.SendBuffer > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var rerr, serr error
			err := rc.Control(func(fd uintptr) {
				if rcvBuf > 0 {
					rerr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvBuf)
				}
				if t.SendBuffer > 0 {
					serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, t.SendBuffer)
				}
			})
			return errors.Join(err, rerr, serr)
		}
	}
	return d.DialContext(ctx, "tcp", addr)
}

// LoopbackSources returns n loopback addresses spread over the given
// number of /24 networks, consecutive addresses in different ones: many
// clients as one machine can play them. The networks are 127.20.0.0/24 and
// up, starting with the one of index first (0 to 999), so that attacks run
// one after another can use networks whose cost the server has not
// accounted yet.
func LoopbackSources(first, n, subnets int) []net.IP {
	if subnets < 1 {
		subnets = 1
	}
	out := make([]net.IP, 0, n)
	for i := 0; i < n; i++ {
		b := first + i%subnets
		h := 1 + i/subnets
		out = append(out, net.IPv4(127, byte(20+b/250), byte(b%250), byte(h%250)))
	}
	return out
}

// Stats counts what happened to an attack's connections.
type Stats struct {
	// Connects counts connections made; DialErrors dials that failed.
	Connects, DialErrors atomic.Int64
	// Sent counts the hostile messages (lines, frames, handshakes) sent.
	Sent atomic.Int64
	// Expected counts the answers the attack was meant to get: the
	// protocol error for a bad message, a refusal code of a limit.
	Expected atomic.Int64
	// Refused counts sessions the server refused or cut for resource
	// usage (-101, -102, the per-IP and session limits).
	Refused atomic.Int64
	// Disconnects counts connections the server closed (EOF, reset, a
	// WebSocket close frame).
	Disconnects atomic.Int64
	// Unexpected counts answers that are none of the above.
	Unexpected atomic.Int64
	// Held is the number of connections open now; PeakHeld its peak.
	Held, PeakHeld atomic.Int64

	mu    sync.Mutex
	notes map[string]int
}

// hold records one more open connection; the returned function records its
// close.
func (s *Stats) hold() func() {
	n := s.Held.Add(1)
	for {
		p := s.PeakHeld.Load()
		if n <= p || s.PeakHeld.CompareAndSwap(p, n) {
			break
		}
	}
	var once sync.Once
	return func() { once.Do(func() { s.Held.Add(-1) }) }
}

// unexpected counts an unexpected outcome and keeps its description.
func (s *Stats) unexpected(format string, args ...any) {
	s.Unexpected.Add(1)
	s.note(format, args...)
}

// note keeps a description of something that happened (counted by kind).
// maxNotes bounds the distinct notes a run keeps.
const maxNotes = 50

func (s *Stats) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notes == nil {
		s.notes = map[string]int{}
	}
	if len(s.notes) < maxNotes || s.notes[msg] > 0 {
		s.notes[msg]++
	}
}

// Notes returns the recorded descriptions with their counts, most
// frequent first.
func (s *Stats) Notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.notes))
	for k, v := range s.notes {
		out = append(out, fmt.Sprintf("%dx %s", v, k))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return out
}

// Summary is Stats as plain numbers (JSON).
type Summary struct {
	Connects    int64    `json:"connects"`
	DialErrors  int64    `json:"dial_errors"`
	Sent        int64    `json:"sent"`
	Expected    int64    `json:"expected"`
	Refused     int64    `json:"refused"`
	Disconnects int64    `json:"disconnects"`
	Unexpected  int64    `json:"unexpected"`
	PeakHeld    int64    `json:"peak_held"`
	Notes       []string `json:"notes,omitempty"`
}

// Summary returns the counts so far.
func (s *Stats) Summary() Summary {
	return Summary{
		Connects: s.Connects.Load(), DialErrors: s.DialErrors.Load(), Sent: s.Sent.Load(),
		Expected: s.Expected.Load(), Refused: s.Refused.Load(), Disconnects: s.Disconnects.Load(),
		Unexpected: s.Unexpected.Load(), PeakHeld: s.PeakHeld.Load(), Notes: s.Notes(),
	}
}

// Add adds another run's counts (a later run's notes after this one's,
// up to as many as one run keeps).
func (s *Summary) Add(o Summary) {
	s.Connects += o.Connects
	s.DialErrors += o.DialErrors
	s.Sent += o.Sent
	s.Expected += o.Expected
	s.Refused += o.Refused
	s.Disconnects += o.Disconnects
	s.Unexpected += o.Unexpected
	s.PeakHeld = max(s.PeakHeld, o.PeakHeld)
	for _, n := range o.Notes {
		if len(s.Notes) >= maxNotes {
			break
		}
		s.Notes = append(s.Notes, n)
	}
}

// String is a one-line summary.
func (s Summary) String() string {
	return fmt.Sprintf("connects %d (dial errors %d), sent %d, expected answers %d, refused %d, disconnected %d, unexpected %d, peak open %d",
		s.Connects, s.DialErrors, s.Sent, s.Expected, s.Refused, s.Disconnects, s.Unexpected, s.PeakHeld)
}

// Error codes of the Electrum server (docs/PROTOCOL.md §2.3).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeLimitExceeded  = 4
	codeBadRequest     = 1
	codeExcessiveUsage = -101
	codeServerBusy     = -102
)

// answer is one decoded protocol message.
type answer struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// code returns the error code of a, 0 for none.
func (a *answer) code() int {
	if a.Error == nil {
		return 0
	}
	return a.Error.Code
}

// lineSession is a newline-framed connection as attacks use it.
type lineSession struct {
	c net.Conn
	r *bufio.Reader
}

func newLineSession(c net.Conn) *lineSession {
	return &lineSession{c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// send writes one line within timeout.
func (s *lineSession) send(line []byte, timeout time.Duration) error {
	s.c.SetWriteDeadline(time.Now().Add(timeout))
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line[:len(line):len(line)], '\n')
	}
	_, err := s.c.Write(line)
	return err
}

// read returns the next message that is not a notification, skipping
// lines up to limit bytes.
func (s *lineSession) read(timeout time.Duration) (*answer, []byte, error) {
	s.c.SetReadDeadline(time.Now().Add(timeout))
	for {
		line, err := readLine(s.r, 16<<20)
		if err != nil {
			return nil, nil, err
		}
		var a answer
		if len(line) > 0 && line[0] == '[' {
			return &a, line, nil // a batch answer: the caller decodes it
		}
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, line, fmt.Errorf("undecodable answer %.100q", line)
		}
		if a.Method != "" && len(a.ID) == 0 {
			continue // a notification
		}
		return &a, line, nil
	}
}

// readLine reads one line of at most limit bytes, without its newline.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			return nil, fmt.Errorf("line over %d bytes", limit)
		}
		line = append(line, chunk...)
		if err == nil {
			return line[:len(line)-1], nil
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF && len(line) > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// versionLine is the server.version request every attacker session opens
// with.
const versionLine = `{"jsonrpc":"2.0","id":0,"method":"server.version","params":["hostile","1.4"]}`

// negotiate sends server.version and reads its answer: nil when the
// session is open; errRefused when the server refused it (session limits,
// cost) and closed it.
func (s *lineSession) negotiate(timeout time.Duration) error {
	if err := s.send([]byte(versionLine), timeout); err != nil {
		return err
	}
	a, _, err := s.read(timeout)
	if err != nil {
		return err
	}
	switch c := a.code(); c {
	case 0:
		return nil
	case codeExcessiveUsage, codeServerBusy:
		return errRefused
	default:
		return fmt.Errorf("server.version answered %d %s", c, a.Error.Message)
	}
}

// errRefused is a session the server would not serve.
var errRefused = errors.New("refused by a limit")

// isClosed reports whether err means the server closed the connection.
func isClosed(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	return strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe")
}

// isTimeout reports whether err is a deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// outcome counts how a session ended after err (nil: it did not).
func (s *Stats) outcome(ctx context.Context, err error, what string) {
	switch {
	case err == nil, ctx.Err() != nil:
	case errors.Is(err, errRefused):
		s.Refused.Add(1)
	case isClosed(err):
		s.Disconnects.Add(1)
	default:
		s.unexpected("%s: %v", what, err)
	}
}

// sleepCtx waits d or until ctx is done; false when ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// closeOnDone closes c when ctx is done, unblocking its reads and writes;
// call the returned function once c is no longer used.
func closeOnDone(ctx context.Context, c io.Closer) func() {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	return func() { stop(); c.Close() }
}

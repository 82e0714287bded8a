package electrum

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/sync/semaphore"
)

// errFrameTooLarge is returned by ReadMessage for a message over the
// request limit. It is not fatal on newline transports: the rest of the
// line has been skipped and the next message can be read.
var errFrameTooLarge = errors.New("request too large")

// errNoRoom is returned by ReadMessage for a message whose buffer found the
// server's budget for long messages spent (Config.lineBudget). As
// errFrameTooLarge, the rest of the message has been skipped and the next
// can be read.
var errNoRoom = errors.New("no room for a long request")

// msgConn is a message-framed connection: newline-delimited over TCP and
// TLS, one message per frame over WS and WSS.
type msgConn interface {
	// ReadMessage returns the next message without its framing. It
	// stays valid until the next ReadMessage or ReleaseMessage.
	ReadMessage() ([]byte, error)
	// ReleaseMessage gives back the buffer of the message last read,
	// which must no longer be used: a long message's buffer goes back to
	// the pool at once instead of waiting for the session's next message.
	ReleaseMessage()
	// WriteMessage sends one message, adding framing.
	WriteMessage([]byte) error
	// WriteMessages sends several messages, in one write where the
	// transport allows.
	WriteMessages([]outMsg) error
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
	Close() error
	RemoteAddr() net.Addr
	// account makes every read of the client's bytes call onRead with
	// their number as it is made, before their message is complete (an
	// error onRead returns ends the reading with that error), and takes
	// what a message's buffer grows past keptBuffer from budget.
	account(onRead func(n int) error, budget *semaphore.Weighted)
}

// lineConn frames messages with a single '\n' (docs/PROTOCOL.md §2.1).
type lineConn struct {
	net.Conn
	// src is what the reader reads: the connection.
	src io.Reader
	r   *bufio.Reader
	// pending is what was read past the end of a long or skipped line,
	// before src.
	pending []byte
	// pendingBuf is the pooled buffer pending is in, if any.
	pendingBuf *[]byte
	maxRecv    int
	buf        []byte
	// onRead is told of every read from src (account); stop is the
	// error it returned, which every later read returns too.
	onRead func(n int) error
	stop   error
	// budget is where buf's bytes past keptBuffer are taken from.
	budget *semaphore.Weighted
}

// lineReadBuffer is the read buffer of a newline connection. It is small
// because idle sessions are the common case; longer lines are assembled
// across several reads.
const lineReadBuffer = 4 << 10

// skipReadBuffer is the size of the reads that skip an oversized line.
// Skipping a 2 MB line in lineReadBuffer reads took 500 system calls.
const skipReadBuffer = 64 << 10

var skipBuffers = sync.Pool{New: func() any { b := make([]byte, skipReadBuffer); return &b }}

// keptBuffer is the largest read buffer a session keeps between messages.
const keptBuffer = 64 << 10

// longBuffers holds, by size, the buffers long messages are assembled in,
// for the next long message of any session: class i holds buffers of
// keptBuffer<<(i+1) bytes, 128 KiB to 16 MiB. Assembled in a buffer that
// grows as append grows it, a 500 KB batch left 3.5 MB of garbage and a
// line over the request limit 5 MB; a client sending them as fast as it
// could made the garbage collector run every few seconds, and every
// request that came during a collection waited for it. In one pool of
// every size, a buffer taken for a message was often too small and
// dropped, and half a message's size was new memory each time. Now a
// long message leaves nothing once its buffer is given back.
var longBuffers [longClasses]sync.Pool

// longClasses is the number of size classes of longBuffers.
const longClasses = 8

// longClass returns the class of the smallest pooled buffer of at least
// n bytes (n over keptBuffer), or longClasses when n is over the largest.
func longClass(n int) int {
	return bits.Len(uint((n-1)/keptBuffer)) - 1
}

// growLong returns buf, or a copy of it, with room for need bytes: the
// capacity doubles, and past lineReadBuffer the new buffer comes from the
// pool, 128 KiB at least, and the old one goes back to it. (Growing to
// keptBuffer in new buffers first left 124 KB of garbage per message.)
func growLong(buf []byte, need int) []byte {
	if need <= cap(buf) {
		return buf
	}
	n := longCap(cap(buf), need)
	var nb []byte
	if n > keptBuffer {
		if i := longClass(n); i < longClasses {
			if bp, _ := longBuffers[i].Get().(*[]byte); bp != nil {
				nb = (*bp)[:0]
			}
		}
	}
	if nb == nil {
		nb = make([]byte, 0, n)
	}
	nb = append(nb, buf...)
	if cap(buf) > keptBuffer {
		putLong(buf)
	}
	return nb
}

// longCap is the capacity growLong gives a buffer of capacity old that
// needs room for need bytes.
func longCap(old, need int) int {
	n := max(2*old, need)
	if n > lineReadBuffer {
		if i := longClass(max(n, keptBuffer+1)); i < longClasses {
			return keptBuffer << (i + 1)
		}
	}
	return n
}

// growHeld is growLong for a message being read: what its buffer takes
// past keptBuffer is taken from budget (none when nil) as it grows, so
// that the buffers of messages not yet complete, which a client may leave
// unfinished until its idle timeout, have a bound for all sessions
// together. It reports false, buf unchanged, when budget has too little
// left.
func growHeld(buf []byte, need int, budget *semaphore.Weighted) ([]byte, bool) {
	if need <= cap(buf) {
		return buf, true
	}
	more := heldBytes(longCap(cap(buf), need)) - heldBytes(cap(buf))
	if budget != nil && more > 0 && !budget.TryAcquire(more) {
		return buf, false
	}
	return growLong(buf, need), true
}

// putHeld gives a buffer grown by growHeld back to the pool, and what it
// took to budget.
func putHeld(buf []byte, budget *semaphore.Weighted) {
	if n := heldBytes(cap(buf)); n > 0 {
		if budget != nil {
			budget.Release(n)
		}
		putLong(buf)
	}
}

// heldBytes is what a buffer of capacity c takes from the budget: its
// part past keptBuffer, which every session may hold.
func heldBytes(c int) int64 {
	return int64(max(c-keptBuffer, 0))
}

// putLong gives a long message's buffer back to the pool of its size;
// a buffer of any other size is left to the garbage collector.
func putLong(b []byte) {
	if cap(b) <= keptBuffer {
		return
	}
	if i := longClass(cap(b)); i < longClasses && cap(b) == keptBuffer<<(i+1) {
		b = b[:0]
		longBuffers[i].Put(&b)
	}
}

// readAllLong reads r to its end, growing its buffer with growHeld. A
// message over keptBuffer is returned in the pooled buffer it was read
// into, for the caller to give back with putHeld once done with it. When
// r fails (a frame over the request limit, a connection gone) it returns
// nil: nobody uses what came before the error. A message that finds
// budget spent is read to its end and dropped, and errNoRoom returned.
func readAllLong(r io.Reader, budget *semaphore.Weighted) ([]byte, error) {
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			var ok bool
			if buf, ok = growHeld(buf, len(buf)+1, budget); !ok {
				putHeld(buf, budget)
				if _, err := io.Copy(io.Discard, r); err != nil {
					return nil, err
				}
				return nil, errNoRoom
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == nil {
			continue
		}
		if err != io.EOF {
			putHeld(buf, budget)
			return nil, err
		}
		return buf, nil
	}
}

// newLineConn wraps c for newline framing with a request limit.
func newLineConn(c net.Conn, maxRecv int) *lineConn {
	lc := newLineReader(c, lineReadBuffer, maxRecv)
	lc.Conn = c
	return lc
}

// newLineReader frames the messages of src, reading size bytes at a time.
func newLineReader(src io.Reader, size, maxRecv int) *lineConn {
	lc := &lineConn{src: src, maxRecv: maxRecv}
	lc.r = bufio.NewReaderSize(lineSource{lc}, size)
	return lc
}

// account counts every read from the connection, newlines and empty
// lines included.
func (c *lineConn) account(onRead func(n int) error, budget *semaphore.Weighted) {
	c.onRead, c.budget = onRead, budget
}

// lineSource reads a lineConn's pending bytes, then its source.
type lineSource struct{ c *lineConn }

// A read takes from pending alone while it has bytes, so that unread can
// put back what a read took past a newline. Only reads from src are
// counted: pending bytes were counted when src gave them.
func (s lineSource) Read(p []byte) (int, error) {
	c := s.c
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	if c.stop != nil {
		return 0, c.stop
	}
	n, err := c.src.Read(p)
	if n > 0 && c.onRead != nil {
		if c.stop = c.onRead(n); c.stop != nil {
			err = c.stop
		}
	}
	return n, err
}

// unread puts back rest, the end of a read that went past a line's
// newline. A read from pending is undone by moving pending back over it
// (was is pending before the read); rest from src goes into a pooled
// buffer, given back by dropPending once read. Copied into a new
// allocation, up to 64 KiB after every long line touched fresh memory.
func (c *lineConn) unread(rest, was []byte) {
	if len(rest) == 0 {
		return
	}
	if len(was) > 0 {
		c.pending = was[len(was)-len(c.pending)-len(rest):]
		return
	}
	c.dropPending()
	bp := skipBuffers.Get().(*[]byte)
	c.pendingBuf = bp
	c.pending = append((*bp)[:0], rest...)
}

// dropPending gives pending's pooled buffer back once pending is read.
func (c *lineConn) dropPending() {
	if len(c.pending) == 0 && c.pendingBuf != nil {
		skipBuffers.Put(c.pendingBuf)
		c.pending, c.pendingBuf = nil, nil
	}
}

// skipLine reads past the rest of an oversized line, in skipReadBuffer
// reads once the reader's buffer is empty, and keeps what follows the
// line's newline for the next message. It reports whether the newline
// was found; if not, the error that ended the reading.
func (c *lineConn) skipLine() (found bool, err error) {
	bp := skipBuffers.Get().(*[]byte)
	defer skipBuffers.Put(bp)
	b := *bp
	src := lineSource{c}
	for {
		was := c.pending
		n, err := src.Read(b)
		if i := bytes.IndexByte(b[:n], '\n'); i >= 0 {
			c.unread(b[i+1:n], was)
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// ReadMessage reads up to the next '\n'. A line over maxRecv bytes is
// skipped to its end and reported as errFrameTooLarge; empty lines are
// skipped. The line is returned where it was read, in the reader's buffer
// or in c.buf, not copied: copying a 500 KB batch into a new allocation
// touched fresh memory, and the page faults that cost (on this kind of
// virtual machine, most of the node's time refusing such batches) held a
// CPU for milliseconds at a time.
func (c *lineConn) ReadMessage() ([]byte, error) {
	c.ReleaseMessage()
	for {
		line, err := c.readLine()
		if err != nil {
			// A line cut short gives its buffer back at once.
			c.ReleaseMessage()
			return nil, err
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) > c.maxRecv {
			c.ReleaseMessage()
			return nil, errFrameTooLarge
		}
		if len(line) == 0 {
			continue
		}
		return line, nil
	}
}

// ReleaseMessage gives a long line's buffer back to the pool: a session
// keeps no buffer over keptBuffer between messages.
func (c *lineConn) ReleaseMessage() {
	if cap(c.buf) > keptBuffer {
		putHeld(c.buf, c.budget)
		c.buf = nil
	}
}

// readLine returns the next line without its '\n' (at the end of the
// stream, what follows the last '\n'), or errFrameTooLarge once a line
// over maxRecv bytes and a '\r' (which ReadMessage drops, and then
// checks the limit) has been skipped. A line that fits the reader's
// buffer is returned from it; a longer one is read straight into c.buf
// in reads as large as c.buf's free space, which grows as the line does.
// Read lineReadBuffer bytes at a time, a 500 KB batch took 125 system
// calls and as many wake-ups of the client's writes. A line whose buffer
// finds the server's budget spent is skipped, as one over maxRecv is, and
// reported as errNoRoom.
func (c *lineConn) readLine() ([]byte, error) {
	c.dropPending()
	c.buf = c.buf[:0]
	chunk, err := c.r.ReadSlice('\n')
	switch {
	case err == nil:
		if len(chunk) > c.maxRecv+2 {
			return nil, errFrameTooLarge
		}
		return chunk[:len(chunk)-1], nil
	case err == io.EOF && len(chunk) > 0:
		// A final message without its newline is still a message.
		if len(chunk) > c.maxRecv+1 {
			return nil, errFrameTooLarge
		}
		return chunk, nil
	case err != bufio.ErrBufferFull:
		return nil, err
	}
	// The reader's buffer is full and now empty: the rest of the line
	// comes from src.
	if len(chunk) > c.maxRecv+2 {
		return nil, c.skipRest(errFrameTooLarge)
	}
	var ok bool
	if c.buf, ok = growHeld(c.buf, len(chunk), c.budget); !ok {
		return nil, c.skipRest(errNoRoom)
	}
	c.buf = append(c.buf, chunk...)
	src := lineSource{c}
	for {
		// room is what the line may still have, counting its "\r\n".
		room := c.maxRecv + 2 - len(c.buf)
		if room <= 0 {
			c.ReleaseMessage()
			return nil, c.skipRest(errFrameTooLarge)
		}
		if len(c.buf) == cap(c.buf) {
			if c.buf, ok = growHeld(c.buf, len(c.buf)+1, c.budget); !ok {
				c.ReleaseMessage()
				return nil, c.skipRest(errNoRoom)
			}
		}
		// At most skipReadBuffer a read: what it takes past the
		// newline must fit a pooled buffer.
		start, was := len(c.buf), c.pending
		n, err := src.Read(c.buf[start:min(cap(c.buf), start+room, start+skipReadBuffer)])
		c.buf = c.buf[:start+n]
		if i := bytes.IndexByte(c.buf[start:], '\n'); i >= 0 {
			c.unread(c.buf[start+i+1:], was)
			return c.buf[:start+i], nil
		}
		if err == io.EOF && len(c.buf) > 0 {
			if len(c.buf) > c.maxRecv+1 {
				return nil, errFrameTooLarge
			}
			return c.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// skipRest skips the rest of a line refused for why, of which nothing is
// left in the reader's buffer, and returns the error to report: why, or
// the error that ended the reading before the line's end.
func (c *lineConn) skipRest(why error) error {
	found, err := c.skipLine()
	if found || err == io.EOF {
		return why
	}
	return err
}

// newline is the framing written after each message.
var newline = []byte{'\n'}

// vectored reports whether the connection writes several buffers in one
// system call (writev) without copying them: plain TCP. Answers are often
// shared (a cached chunk of headers, a notification sent to many
// sessions) and large, so each is written as it is rather than copied
// into a buffer with its '\n'. Over TLS every buffer would be a record of
// its own, so messages there are joined first.
func (c *lineConn) vectored() bool {
	_, ok := c.Conn.(*net.TCPConn)
	return ok
}

// WriteMessage writes msg followed by '\n' in one write.
func (c *lineConn) WriteMessage(msg []byte) error {
	return c.WriteMessages([]outMsg{{head: msg}})
}

// WriteMessages writes msgs, each followed by '\n', in one write.
func (c *lineConn) WriteMessages(msgs []outMsg) error {
	if c.vectored() {
		bufs := make(net.Buffers, 0, 4*len(msgs))
		for _, m := range msgs {
			for _, p := range [...][]byte{m.head, m.body, m.tail} {
				if len(p) > 0 {
					bufs = append(bufs, p)
				}
			}
			bufs = append(bufs, newline)
		}
		_, err := bufs.WriteTo(c.Conn)
		return err
	}
	n := 0
	for _, m := range msgs {
		n += m.size() + 1
	}
	// Joined in a pooled buffer past 4 KiB: a new one for each long
	// answer (a chunk of headers, a long history) was fresh memory, and
	// the page faults cost more than the copy.
	b := growLong(nil, n)
	for _, m := range msgs {
		b = append(append(append(b, m.head...), m.body...), m.tail...)
		b = append(b, '\n')
	}
	_, err := c.Conn.Write(b)
	putLong(b)
	return err
}

// wsConn carries one message per WebSocket frame.
type wsConn struct {
	*websocket.Conn
	// msg is the message last read, until released.
	msg []byte
	// onRead is told of every read of a message's bytes, and budget
	// holds what msg takes past keptBuffer (account).
	onRead func(n int) error
	budget *semaphore.Weighted
}

// newWSConn wraps c, answering its pings through a ponger.
func newWSConn(c *websocket.Conn, writeTimeout time.Duration) *wsConn {
	p := &ponger{c: c, timeout: writeTimeout}
	c.SetPingHandler(p.ping)
	c.SetPongHandler(p.pong)
	return &wsConn{Conn: c}
}

// Control frames (pings, and pongs nobody asked for) are not requests and
// are not charged as such; what bounds a flood of them is controlFrameCost
// of reading time each, beyond controlFramesFree a second, which the
// session's read loop sleeps off controlFramePause at a time. While it
// sleeps the flood gathers in the kernel and the next read takes hundreds
// of frames at once. Unbounded, 180 connections a second that each sent
// 500 pings, one frame per write, cost the server a core (e2ebench
// hostile -kinds wsbad -wscases 'ping flood'): a read, a pong write and
// the wakeups of both for every ping. A client that pings to keep its
// connection alive, every few seconds, never pauses.
const (
	controlFramesFree = 10
	controlFrameCost  = time.Millisecond
	controlFramePause = 20 * time.Millisecond
)

// ponger answers a WebSocket connection's pings from a goroutine of its
// own, one at a time, with the latest ping's payload. A pong is one write:
// answered in the read loop, as gorilla/websocket does by default, a
// flood of 500 pings took 500 writes, and a client that does not read
// held the read loop in each. Pings that arrive while a pong is being
// written are answered by one pong, for the most recent of them, as RFC
// 6455 §5.5.3 allows. It also paces the connection's control frames
// (controlFramesFree).
type ponger struct {
	c       *websocket.Conn
	timeout time.Duration

	mu      sync.Mutex
	latest  []byte
	fresh   bool // latest has not been answered
	sending bool // a goroutine is writing pongs

	// The read loop's own: control frames in the second from since,
	// and the reading time owed.
	since time.Time
	count int
	owed  time.Duration
}

func (p *ponger) ping(data string) error {
	p.mu.Lock()
	p.latest = append(p.latest[:0], data...)
	p.fresh = true
	start := !p.sending
	p.sending = true
	p.mu.Unlock()
	if start {
		go p.send()
	}
	p.pace()
	return nil
}

// pong takes a pong from the client: nothing to do but pace it.
func (p *ponger) pong(string) error {
	p.pace()
	return nil
}

// pace counts a control frame and, once the frames beyond
// controlFramesFree in this second owe controlFramePause, sleeps it off
// in the read loop (gorilla/websocket calls the handlers from it).
func (p *ponger) pace() {
	now := time.Now()
	if now.Sub(p.since) >= time.Second {
		p.since, p.count = now, 0
	}
	p.count++
	if p.count <= controlFramesFree {
		return
	}
	p.owed += controlFrameCost
	if p.owed >= controlFramePause {
		time.Sleep(p.owed)
		p.owed = 0
	}
}

// send writes pongs until every ping has been answered. A write error is
// left to the session's own writes and reads to find.
func (p *ponger) send() {
	var data []byte
	for {
		p.mu.Lock()
		if !p.fresh {
			p.sending = false
			p.mu.Unlock()
			return
		}
		data = append(data[:0], p.latest...)
		p.fresh = false
		p.mu.Unlock()
		if err := p.c.WriteControl(websocket.PongMessage, data, time.Now().Add(p.timeout)); err != nil {
			p.mu.Lock()
			p.sending, p.fresh = false, false
			p.mu.Unlock()
			return
		}
	}
}

// ReadMessage returns the next text or binary frame. gorilla/websocket
// enforces the read limit and closes with 1009 when a frame is over it,
// and with 1002 when the client breaks the framing (errWSProtocol). The
// message is returned in the buffer it was read into (see
// lineConn.ReadMessage).
func (c *wsConn) ReadMessage() ([]byte, error) {
	c.ReleaseMessage()
	for {
		typ, r, err := c.Conn.NextReader()
		if err != nil {
			return nil, wsReadError(err)
		}
		if typ == websocket.TextMessage || typ == websocket.BinaryMessage {
			msg, err := readAllLong(countedReader{r, c.onRead}, c.budget)
			c.msg = msg
			return msg, wsReadError(err)
		}
	}
}

// account counts every byte read from the connection (wsCounted): frame
// headers, empty frames and control frames included, as a line
// connection counts empty lines. Uncounted, a message of empty
// continuation frames kept the read loop busy at no cost.
func (c *wsConn) account(onRead func(n int) error, budget *semaphore.Weighted) {
	c.budget = budget
	if cc, ok := c.Conn.NetConn().(*wsCounted); ok {
		cc.onRead.Store(&onRead)
		return
	}
	c.onRead = onRead
}

// wsCounted is a WebSocket port's connection, counting its reads for the
// session once it has one (wsConn.account).
type wsCounted struct {
	net.Conn
	onRead atomic.Pointer[func(n int) error]
}

func (c *wsCounted) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if f := c.onRead.Load(); n > 0 && f != nil {
		if e := (*f)(n); e != nil {
			return n, e
		}
	}
	return n, err
}

// countedReader tells onRead (when set) of every read from r; an error
// onRead returns ends the reading.
type countedReader struct {
	r      io.Reader
	onRead func(n int) error
}

func (c countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && c.onRead != nil {
		if e := c.onRead(n); e != nil {
			return n, e
		}
	}
	return n, err
}

// errWSProtocol marks a WebSocket read that failed because the client
// broke the protocol's framing.
var errWSProtocol = errors.New("websocket protocol error")

// wsReadError tells a protocol error from the other ends of a read.
// gorilla/websocket returns a close frame or a vanished peer as a
// CloseError, the network's failures as themselves, and, after closing
// with 1002, an error of no type of its own: that is every other error.
func wsReadError(err error) error {
	var ce *websocket.CloseError
	var ne net.Error
	if err == nil || errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, websocket.ErrReadLimit) ||
		errors.Is(err, errCostLimit) || errors.Is(err, errNoRoom) {
		return err
	}
	return fmt.Errorf("%w: %w", errWSProtocol, err)
}

// ReleaseMessage gives a long message's buffer back to the pool.
func (c *wsConn) ReleaseMessage() {
	putHeld(c.msg, c.budget)
	c.msg = nil
}

// WriteMessage sends msg as one text frame.
func (c *wsConn) WriteMessage(msg []byte) error {
	return c.Conn.WriteMessage(websocket.TextMessage, msg)
}

// WriteMessages sends each message as its own frame, a message in parts
// written into its frame as they are.
func (c *wsConn) WriteMessages(msgs []outMsg) error {
	for _, m := range msgs {
		if m.body == nil && m.tail == nil {
			if err := c.WriteMessage(m.head); err != nil {
				return err
			}
			continue
		}
		w, err := c.Conn.NextWriter(websocket.TextMessage)
		if err != nil {
			return err
		}
		for _, p := range [...][]byte{m.head, m.body, m.tail} {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return nil
}

// outMsg is one message to send, in up to three parts written one after
// the other: a large answer shared with other sessions (a cached chunk of
// headers or history) goes out as it is, between its own response's head
// and tail, instead of being copied into each response. A message made
// elsewhere is its head alone.
type outMsg struct {
	head, body, tail []byte
}

// size is the message's length without framing.
func (m outMsg) size() int { return len(m.head) + len(m.body) + len(m.tail) }

// join returns the message as one buffer (its head when it has one part).
func (m outMsg) join() []byte {
	if m.body == nil && m.tail == nil {
		return m.head
	}
	b := make([]byte, 0, m.size())
	return append(append(append(b, m.head...), m.body...), m.tail...)
}

package hostile

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// WebSocket opcodes (RFC 6455 §5.2).
const (
	opCont   = 0x0
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
)

// wsFrame encodes one client frame. Client frames are masked unless
// unmasked is set; with declare, the header declares length instead of
// the payload's length.
type wsFrame struct {
	fin      bool
	rsv      byte // the RSV1-3 bits, already shifted (0x70 for all)
	opcode   byte
	payload  []byte
	unmasked bool
	declare  bool
	length   uint64
}

func (f wsFrame) bytes() []byte {
	b0 := f.rsv | f.opcode
	if f.fin {
		b0 |= 0x80
	}
	n := uint64(len(f.payload))
	if f.declare {
		n = f.length
	}
	out := []byte{b0}
	mask := byte(0x80)
	if f.unmasked {
		mask = 0
	}
	switch {
	case n < 126:
		out = append(out, mask|byte(n))
	case n < 1<<16:
		out = append(out, mask|126, byte(n>>8), byte(n))
	default:
		out = append(out, mask|127)
		out = binary.BigEndian.AppendUint64(out, n)
	}
	if f.unmasked {
		return append(out, f.payload...)
	}
	var key [4]byte
	rand.Read(key[:])
	out = append(out, key[:]...)
	for i, c := range f.payload {
		out = append(out, c^key[i%4])
	}
	return out
}

func frame(opcode byte, payload string) wsFrame {
	return wsFrame{fin: true, opcode: opcode, payload: []byte(payload)}
}

// wsCase is one bad thing to do on a WebSocket connection.
type wsCase struct {
	name string
	// request replaces the upgrade request when not empty.
	request string
	// frames are sent after a successful upgrade.
	frames func() [][]byte
	// want is the outcome that counts as expected: "http-error" (a 4xx
	// answer to the upgrade), "close" (a close frame or the connection
	// closed), "error" (a JSON-RPC error answer), "answer" (a
	// server.version answer).
	want string
}

// upgradeRequest is a valid WebSocket upgrade.
func upgradeRequest(host, version string) string {
	var key [16]byte
	rand.Read(key[:])
	return "GET / HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key[:]) + "\r\n" +
		"Sec-WebSocket-Version: " + version + "\r\n\r\n"
}

func frames(fs ...wsFrame) func() [][]byte {
	return func() [][]byte {
		out := make([][]byte, len(fs))
		for i, f := range fs {
			out[i] = f.bytes()
		}
		return out
	}
}

// wsCases are the bad upgrades and frames WSBad sends, each on its own
// connection.
var wsCases = []wsCase{
	{name: "not an upgrade", request: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", want: "http-error"},
	{name: "garbage request line", request: "\x16\x03\x01\x02\x00 junk\r\n\r\n", want: "http-error"},
	{name: "unsupported version", request: "v12", want: "http-error"},
	{name: "unmasked frame", frames: frames(wsFrame{fin: true, opcode: opText, payload: []byte(versionLine), unmasked: true}), want: "close"},
	{name: "reserved bits", frames: frames(wsFrame{fin: true, rsv: 0x70, opcode: opText, payload: []byte(versionLine)}), want: "close"},
	{name: "reserved opcode", frames: frames(frame(0x3, "x")), want: "close"},
	{name: "fragmented control frame", frames: frames(wsFrame{opcode: opPing, payload: []byte("x")}), want: "close"},
	{name: "control frame over 125 bytes", frames: frames(frame(opPing, strings.Repeat("p", 126))), want: "close"},
	{name: "continuation without a start", frames: frames(frame(opCont, "x")), want: "close"},
	{name: "length with the top bit set", frames: frames(wsFrame{fin: true, opcode: opText, declare: true, length: 1 << 63}), want: "close"},
	{name: "frame over the request limit", frames: frames(frame(opText, strings.Repeat("x", 2_000_000))), want: "close"},
	{name: "fragments over the request limit", frames: func() [][]byte {
		out := [][]byte{wsFrame{opcode: opText, payload: []byte("[")}.bytes()}
		chunk := strings.Repeat(" ", 64<<10)
		for i := 0; i < 20; i++ {
			out = append(out, wsFrame{opcode: opCont, payload: []byte(chunk)}.bytes())
		}
		return out
	}, want: "close"},
	{name: "close with an invalid code", frames: frames(frame(opClose, "\x03\xe7bad")), want: "close"},
	{name: "close with a 1-byte payload", frames: frames(frame(opClose, "x")), want: "close"},
	{name: "text frame with invalid UTF-8", frames: frames(frame(opText, "{\"id\":1,\"method\":\"\xff\xfe\"}")), want: "error"},
	{name: "binary junk", frames: frames(frame(opBinary, "\x00\x01\x02\x03")), want: "error"},
	{name: "ping flood", frames: func() [][]byte {
		var out [][]byte
		for i := 0; i < 500; i++ {
			out = append(out, frame(opPing, "ping").bytes())
		}
		return append(out, frame(opText, versionLine).bytes())
	}, want: "answer"},
}

// wsBad runs the bad WebSocket cases in turn, one connection each, on the
// WS listener (every other worker on WSS when there is one).
func wsBad(ctx context.Context, t *Target, cases []wsCase, worker int, st *Stats) {
	for i := worker; ctx.Err() == nil; i++ {
		c := cases[i%len(cases)]
		got, err := wsCaseRun(ctx, t, c, worker%2 == 1 && t.WSS != "", st)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			st.outcome(ctx, err, "WebSocket "+c.name)
		case got == c.want:
			st.Expected.Add(1)
		case got == "refused":
			st.Refused.Add(1)
		default:
			st.unexpected("WebSocket %s: got %s, want %s", c.name, got, c.want)
		}
	}
}

// wsCaseRun runs one case and returns what the server did.
func wsCaseRun(ctx context.Context, t *Target, wc wsCase, secure bool, st *Stats) (string, error) {
	addr := t.WS
	if secure {
		addr = t.WSS
	}
	raw, err := t.dial(ctx, addr, 0)
	if err != nil {
		if ctx.Err() == nil {
			st.DialErrors.Add(1)
			st.note("dial: %v", err)
		}
		sleepCtx(ctx, 100*time.Millisecond)
		return "", nil
	}
	st.Connects.Add(1)
	release := st.hold()
	defer release()
	var c net.Conn = raw
	if secure {
		c = tlsClient(raw)
	}
	done := closeOnDone(ctx, c)
	defer done()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	req := wc.request
	switch req {
	case "":
		req = upgradeRequest(addr, "13")
	case "v12":
		req = upgradeRequest(addr, "12")
	}
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	st.Sent.Add(1)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return "http-error", nil
		}
		return fmt.Sprintf("HTTP %d", resp.StatusCode), nil
	}
	if wc.frames == nil {
		return "upgraded", nil
	}
	// Write the frames while reading: the server may close before it
	// has read them all.
	werr := make(chan error, 1)
	go func() {
		for _, f := range wc.frames() {
			if _, err := c.Write(f); err != nil {
				werr <- err
				return
			}
			st.Sent.Add(1)
		}
		werr <- nil
	}()
	got, err := readServerFrames(br)
	if err == nil && got == "error" {
		// Nothing more is coming; finish writing.
		c.Close()
	}
	<-werr
	return got, err
}

// readServerFrames reads server frames until the outcome is clear: "close"
// for a close frame or the connection closing, "error" for a JSON-RPC
// error answer, "answer" for a result, "refused" for -101 or -102.
func readServerFrames(br *bufio.Reader) (string, error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			if isClosed(err) {
				return "close", nil
			}
			return "", err
		}
		op := h[0] & 0x0f
		n := int64(h[1] & 0x7f)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(br, e[:]); err != nil {
				return "", err
			}
			n = int64(binary.BigEndian.Uint16(e[:]))
		case 127:
			var e [8]byte
			if _, err := io.ReadFull(br, e[:]); err != nil {
				return "", err
			}
			n = int64(binary.BigEndian.Uint64(e[:]))
		}
		if n < 0 || n > 16<<20 {
			return "", fmt.Errorf("server frame of %d bytes", n)
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			if isClosed(err) {
				return "close", nil
			}
			return "", err
		}
		switch op {
		case opClose:
			return "close", nil
		case opText, opBinary:
			var a answer
			if err := json.Unmarshal(payload, &a); err != nil {
				return "", fmt.Errorf("undecodable answer %.100q", payload)
			}
			switch c := a.code(); {
			case c == codeExcessiveUsage || c == codeServerBusy:
				return "refused", nil
			case c != 0:
				return "error", nil
			case len(a.Result) > 0:
				return "answer", nil
			}
		}
	}
}

// tlsClient wraps c in a TLS client that does not verify the server (the
// attacks test the server, not its certificate).
func tlsClient(c net.Conn) net.Conn {
	return tls.Client(c, &tls.Config{ServerName: "localhost", InsecureSkipVerify: true})
}

// bigFrames sends 2 MB WebSocket frames, one per connection; the server
// must close each connection (status 1009, over the request limit).
func bigFrames(ctx context.Context, t *Target, st *Stats) {
	c := wsCase{name: "2 MB frame", frames: frames(frame(opText, `{"jsonrpc":"2.0","id":7,"method":"server.banner","params":["`+strings.Repeat("x", 2_000_000)+`"]}`)), want: "close"}
	for ctx.Err() == nil {
		got, err := wsCaseRun(ctx, t, c, false, st)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			st.outcome(ctx, err, "2 MB frame")
		case got == c.want:
			st.Expected.Add(1)
		default:
			st.unexpected("2 MB frame: got %s, want %s", got, c.want)
		}
	}
}

// WSCases returns the number of bad WebSocket cases WSBad cycles through.
func WSCases() int { return len(wsCases) }

// WSCaseNames returns the names of the bad WebSocket cases, in the order
// WSBad cycles through them.
func WSCaseNames() []string {
	names := make([]string, len(wsCases))
	for i, c := range wsCases {
		names[i] = c.name
	}
	return names
}

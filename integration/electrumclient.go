package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// maxElectrumLine is the longest message the client reads; longer lines
// end the connection.
const maxElectrumLine = 16 << 20

// ElectrumClient is a small Electrum protocol client over plain TCP, TLS
// or WebSocket (newline-delimited JSON-RPC 2.0). Calls may be made from several
// goroutines; responses are matched by id, and notifications are queued
// until Notification (or NextStatus, NextHeaderMatching) takes them, each
// once. It is meant for tests: every wait takes a
// context, so a test bounds it with a deadline. A call whose context ends
// while its request is being written, or whose write fails, closes the
// connection (Err says why): a part of the request may have been sent, and
// the stream of JSON lines cannot be resynchronised.
type ElectrumClient struct {
	conn net.Conn

	// writeSlot holds a token while a request is written, so that a call
	// waiting for it can give up when its context ends.
	writeSlot chan struct{}

	mu      sync.Mutex
	nextID  int
	pending map[int]chan electrumResponse
	notes   []queuedNote
	// noteSeq numbers the notifications as they arrive.
	noteSeq uint64
	// noteSignal is closed and replaced whenever a notification arrives or
	// the connection ends.
	noteSignal chan struct{}
	// done is closed when the read loop ends; err says why.
	done chan struct{}
	err  error
	// writeErr is why a write ended the connection; Err reports it
	// rather than the read error the closing causes.
	writeErr error
}

// Notification is a message the server sent without a request: a method
// (for example "blockchain.headers.subscribe") and its parameters.
type Notification struct {
	Method string
	Params json.RawMessage
}

// queuedNote is a queued notification and its number, by which a taker
// that chose it without the lock finds it again.
type queuedNote struct {
	seq uint64
	Notification
}

// RPCError is an error the server answered a request with.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error formats the server's error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("electrum error %d: %s", e.Code, e.Message)
}

// electrumResponse is one decoded message: a response (ID set) or a
// notification (Method set).
type electrumResponse struct {
	ID     *int            `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// DialElectrum connects to an Electrum TCP listener at addr (host:port).
// It does not negotiate a version; call Version first, as the protocol
// requires.
func DialElectrum(ctx context.Context, addr string) (*ElectrumClient, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return newElectrumClient(conn), nil
}

// newElectrumClient starts a client on an open connection.
func newElectrumClient(conn net.Conn) *ElectrumClient {
	c := &ElectrumClient{
		conn:       conn,
		writeSlot:  make(chan struct{}, 1),
		pending:    map[int]chan electrumResponse{},
		noteSignal: make(chan struct{}),
		done:       make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// Close closes the connection and fails every outstanding call.
func (c *ElectrumClient) Close() error {
	err := c.conn.Close()
	<-c.done
	return err
}

// Done is closed when the connection has ended (Err says why).
func (c *ElectrumClient) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, or nil while it is open.
func (c *ElectrumClient) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endErr()
}

// endErr is Err with c.mu held; a failed write ends the connection before
// the read loop sees it closed.
func (c *ElectrumClient) endErr() error {
	if c.writeErr != nil {
		return c.writeErr
	}
	return c.err
}

// readLoop decodes messages until the connection ends, handing responses
// to their callers and queueing notifications.
func (c *ElectrumClient) readLoop() {
	r := bufio.NewReaderSize(c.conn, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(r)
		if err != nil {
			break
		}
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var msg electrumResponse
		if err = json.Unmarshal(line, &msg); err != nil {
			err = fmt.Errorf("bad message from server %q: %w", truncate(line), err)
			break
		}
		c.mu.Lock()
		switch {
		case msg.Method != "":
			c.noteSeq++
			c.notes = append(c.notes, queuedNote{c.noteSeq, Notification{Method: msg.Method, Params: msg.Params}})
			close(c.noteSignal)
			c.noteSignal = make(chan struct{})
		case msg.ID != nil:
			if ch, ok := c.pending[*msg.ID]; ok {
				delete(c.pending, *msg.ID)
				ch <- msg
			}
		}
		c.mu.Unlock()
	}
	c.conn.Close()
	c.mu.Lock()
	c.err = err
	for id, ch := range c.pending {
		delete(c.pending, id)
		close(ch)
	}
	close(c.noteSignal)
	c.noteSignal = make(chan struct{})
	c.mu.Unlock()
	close(c.done)
}

// readLine reads one newline-terminated message of at most maxElectrumLine
// bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxElectrumLine {
			return nil, errors.New("message from server too long")
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, err
	}
}

// truncate shortens a message for an error text.
func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// Call sends a request with positional parameters and returns its raw
// result, or the server's *RPCError, or the context's error.
func (c *ElectrumClient) Call(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	ch := make(chan electrumResponse, 1)
	c.mu.Lock()
	if err := c.endErr(); err != nil || isClosed(c.done) {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: connection closed: %v", method, err)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		c.forget(id)
		return nil, err
	}
	if err := c.write(ctx, append(req, '\n')); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: connection closed: %v", method, c.Err())
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// write sends one request line, waiting for the connection's write slot
// and for the write itself only as long as ctx lasts. A write that fails,
// or that ctx's end interrupts (a server that reads nothing holds a write
// forever), ends the connection: a part of the line may have been sent,
// and a next request would be glued to it.
func (c *ElectrumClient) write(ctx context.Context, line []byte) error {
	select {
	case c.writeSlot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return fmt.Errorf("connection closed: %v", c.Err())
	}
	defer func() { <-c.writeSlot }()
	if err := ctx.Err(); err != nil {
		return err
	}
	// ctx's end interrupts the write with a deadline in the past, which
	// cuts a write still blocked and leaves one that went through in full
	// alone; the next write starts without it.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.conn.SetWriteDeadline(time.Unix(1, 0))
		close(fired)
	})
	n, err := c.conn.Write(line)
	if !stop() {
		<-fired
		_ = c.conn.SetWriteDeadline(time.Time{})
	}
	if err == nil && n == len(line) {
		return nil
	}
	if ctx.Err() != nil {
		c.endAfterWrite(fmt.Errorf("a request's write was interrupted: %w", ctx.Err()))
		return fmt.Errorf("the request's write was interrupted, which closed the connection: %w", ctx.Err())
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	c.endAfterWrite(fmt.Errorf("a request's write failed: %w", err))
	return fmt.Errorf("the request's write failed, which closed the connection: %w", err)
}

// endAfterWrite closes the connection after a failed or interrupted write;
// err becomes the reason Err reports.
func (c *ElectrumClient) endAfterWrite(err error) {
	c.mu.Lock()
	if c.writeErr == nil {
		c.writeErr = err
	}
	c.mu.Unlock()
	_ = c.conn.Close()
}

// forget drops a call nobody waits for any more.
func (c *ElectrumClient) forget(id int) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// CallInto makes a call and decodes its result into out.
func (c *ElectrumClient) CallInto(ctx context.Context, out any, method string, params ...any) error {
	raw, err := c.Call(ctx, method, params...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: decoding %s: %w", method, truncate(raw), err)
	}
	return nil
}

// Notification returns the oldest queued notification of method for which
// match returns true (match nil accepts any) and removes it from the queue;
// other notifications stay queued. It waits until one arrives, the
// connection ends or ctx is done. match runs without the client's lock,
// so it may call the client.
func (c *ElectrumClient) Notification(ctx context.Context, method string, match func(Notification) bool) (Notification, error) {
	if match == nil {
		match = func(Notification) bool { return true }
	}
	return c.take(ctx, method, match, match)
}

// take waits for the oldest queued notification of method that belongs to
// a subject (one script hash, the tip) and satisfies match. Notifications
// of the same subject queued before it are superseded by it and removed
// too; notifications of other subjects stay queued. belongs and match run
// on a copy of the queue, without the lock (they may call the client);
// the notification chosen is then removed only if it is still queued, so
// that of two takers choosing it one has it and the other looks again.
func (c *ElectrumClient) take(ctx context.Context, method string, belongs, match func(Notification) bool) (Notification, error) {
	for {
		c.mu.Lock()
		queued := slices.Clone(c.notes)
		signal := c.noteSignal
		// err is set with the last wake-up, before done is closed.
		closed := c.err != nil || isClosed(c.done)
		c.mu.Unlock()
		var superseded []uint64
		lost := false
		for _, n := range queued {
			if n.Method != method || !belongs(n.Notification) {
				continue
			}
			if !match(n.Notification) {
				superseded = append(superseded, n.seq)
				continue
			}
			if c.remove(n.seq, superseded) {
				return n.Notification, nil
			}
			lost = true // another caller took it meanwhile
			break
		}
		if lost {
			continue
		}
		if closed {
			return Notification{}, fmt.Errorf("waiting for %s: connection closed: %v", method, c.Err())
		}
		select {
		case <-signal:
		case <-ctx.Done():
			return Notification{}, fmt.Errorf("waiting for %s: %w", method, ctx.Err())
		}
	}
}

// remove takes the notification numbered seq off the queue, with those of
// superseded, and reports whether it was still queued; when it was not,
// the queue is left as it is.
func (c *ElectrumClient) remove(seq uint64, superseded []uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.notes, func(n queuedNote) bool { return n.seq == seq })
	if i < 0 {
		return false
	}
	kept := make([]queuedNote, 0, len(c.notes)-1)
	for j, n := range c.notes {
		if j == i || (j < i && slices.Contains(superseded, n.seq)) {
			continue
		}
		kept = append(kept, n)
	}
	c.notes = kept
	return true
}

// PendingNotifications returns how many notifications are queued.
func (c *ElectrumClient) PendingNotifications() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.notes)
}

// dropNotifications discards the queued notifications.
func (c *ElectrumClient) dropNotifications() {
	c.mu.Lock()
	c.notes = nil
	c.mu.Unlock()
}

// Version negotiates the protocol version (server.version); it returns the
// server's software name and the negotiated version.
func (c *ElectrumClient) Version(ctx context.Context, clientName, protocol string) (server, version string, err error) {
	var res []string
	if err := c.CallInto(ctx, &res, "server.version", clientName, protocol); err != nil {
		return "", "", err
	}
	if len(res) != 2 {
		return "", "", fmt.Errorf("server.version returned %v", res)
	}
	return res[0], res[1], nil
}

// HeaderTip is a block header as headers.subscribe returns and notifies it.
type HeaderTip struct {
	Height int32  `json:"height"`
	Hex    string `json:"hex"`
}

// Header decodes the header's hex.
func (h HeaderTip) Header() (*wire.BlockHeader, error) {
	return DecodeHeader(h.Hex)
}

// DecodeHeader decodes an 80-byte block header given in hex.
func DecodeHeader(s string) (*wire.BlockHeader, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) != wire.MaxBlockHeaderPayload {
		return nil, fmt.Errorf("header of %d bytes", len(b))
	}
	var h wire.BlockHeader
	if err := h.Deserialize(bytes.NewReader(b)); err != nil {
		return nil, err
	}
	return &h, nil
}

// SubscribeHeaders subscribes to new tips and returns the current one.
func (c *ElectrumClient) SubscribeHeaders(ctx context.Context) (HeaderTip, error) {
	var tip HeaderTip
	err := c.CallInto(ctx, &tip, "blockchain.headers.subscribe")
	return tip, err
}

// NextHeader waits for a headers notification with a height of at least
// minHeight and returns it; older headers notifications are discarded.
func (c *ElectrumClient) NextHeader(ctx context.Context, minHeight int32) (HeaderTip, error) {
	return c.NextHeaderMatching(ctx, func(tip HeaderTip) bool { return tip.Height >= minHeight })
}

// NextHeaderMatching waits for a headers notification for which match
// returns true and returns it; older headers notifications are discarded.
// match runs without the client's lock, so it may call the client.
func (c *ElectrumClient) NextHeaderMatching(ctx context.Context, match func(HeaderTip) bool) (HeaderTip, error) {
	n, err := c.take(ctx, "blockchain.headers.subscribe", func(Notification) bool { return true },
		func(n Notification) bool {
			tip, ok := decodeTip(n)
			return ok && match(tip)
		})
	if err != nil {
		return HeaderTip{}, err
	}
	tip, _ := decodeTip(n)
	return tip, nil
}

// decodeTip decodes the parameters of a headers notification.
func decodeTip(n Notification) (HeaderTip, bool) {
	var params []HeaderTip
	if json.Unmarshal(n.Params, &params) != nil || len(params) != 1 {
		return HeaderTip{}, false
	}
	return params[0], true
}

// BlockHeader returns the hex header at height (blockchain.block.header).
func (c *ElectrumClient) BlockHeader(ctx context.Context, height int32) (string, error) {
	var s string
	err := c.CallInto(ctx, &s, "blockchain.block.header", height)
	return s, err
}

// ScriptHash returns the Electrum script hash of an output script: the
// SHA-256 of the script, byte-reversed, in hex.
func ScriptHash(pkScript []byte) string {
	h := sha256.Sum256(pkScript)
	for i, j := 0, len(h)-1; i < j; i, j = i+1, j-1 {
		h[i], h[j] = h[j], h[i]
	}
	return hex.EncodeToString(h[:])
}

// SubscribeScriptHash subscribes to a script hash and returns its status
// (nil when it has no history).
func (c *ElectrumClient) SubscribeScriptHash(ctx context.Context, scriptHash string) (*string, error) {
	var status *string
	err := c.CallInto(ctx, &status, "blockchain.scripthash.subscribe", scriptHash)
	return status, err
}

// NextStatus waits for a status notification of scriptHash for which
// match returns true (nil accepts any) and returns the status (nil for no
// history). Older notifications of scriptHash are discarded; those of
// other script hashes stay queued. match runs without the client's lock,
// so it may call the client (GetHistory, to check the status against the
// history).
func (c *ElectrumClient) NextStatus(ctx context.Context, scriptHash string, match func(*string) bool) (*string, error) {
	n, err := c.take(ctx, "blockchain.scripthash.subscribe",
		func(n Notification) bool {
			sh, _, ok := decodeStatus(n)
			return ok && sh == scriptHash
		},
		func(n Notification) bool {
			_, status, _ := decodeStatus(n)
			return match == nil || match(status)
		})
	if err != nil {
		return nil, err
	}
	_, status, _ := decodeStatus(n)
	return status, nil
}

// decodeStatus decodes the parameters of a script hash notification.
func decodeStatus(n Notification) (scriptHash string, status *string, ok bool) {
	var params []*string
	if json.Unmarshal(n.Params, &params) != nil || len(params) != 2 || params[0] == nil {
		return "", nil, false
	}
	return *params[0], params[1], true
}

// HistoryItem is one transaction of a script hash's history (get_history,
// get_mempool): height > 0 confirmed, 0 in the mempool with confirmed
// inputs, -1 in the mempool with an unconfirmed input. Fee is given for
// mempool entries only.
type HistoryItem struct {
	TxHash string `json:"tx_hash"`
	Height int32  `json:"height"`
	Fee    *int64 `json:"fee,omitempty"`
}

// GetHistory returns a script hash's confirmed and mempool history.
func (c *ElectrumClient) GetHistory(ctx context.Context, scriptHash string) ([]HistoryItem, error) {
	var h []HistoryItem
	err := c.CallInto(ctx, &h, "blockchain.scripthash.get_history", scriptHash)
	return h, err
}

// GetMempool returns a script hash's mempool history.
func (c *ElectrumClient) GetMempool(ctx context.Context, scriptHash string) ([]HistoryItem, error) {
	var h []HistoryItem
	err := c.CallInto(ctx, &h, "blockchain.scripthash.get_mempool", scriptHash)
	return h, err
}

// Unspent is one unspent output of listunspent.
type Unspent struct {
	TxHash string `json:"tx_hash"`
	TxPos  uint32 `json:"tx_pos"`
	Height int32  `json:"height"`
	Value  int64  `json:"value"`
}

// ListUnspent returns a script hash's unspent outputs.
func (c *ElectrumClient) ListUnspent(ctx context.Context, scriptHash string) ([]Unspent, error) {
	var u []Unspent
	err := c.CallInto(ctx, &u, "blockchain.scripthash.listunspent", scriptHash)
	return u, err
}

// Balance is a script hash's confirmed and unconfirmed balance in satoshis.
type Balance struct {
	Confirmed   int64 `json:"confirmed"`
	Unconfirmed int64 `json:"unconfirmed"`
}

// GetBalance returns a script hash's balance.
func (c *ElectrumClient) GetBalance(ctx context.Context, scriptHash string) (Balance, error) {
	var b Balance
	err := c.CallInto(ctx, &b, "blockchain.scripthash.get_balance", scriptHash)
	return b, err
}

// Merkle is a transaction's merkle branch (get_merkle).
type Merkle struct {
	BlockHeight int32    `json:"block_height"`
	Merkle      []string `json:"merkle"`
	Pos         int      `json:"pos"`
}

// GetMerkle returns the merkle branch of a confirmed transaction.
func (c *ElectrumClient) GetMerkle(ctx context.Context, txid string, height int32) (Merkle, error) {
	var m Merkle
	err := c.CallInto(ctx, &m, "blockchain.transaction.get_merkle", txid, height)
	return m, err
}

// GetTransaction returns a transaction's raw hex.
func (c *ElectrumClient) GetTransaction(ctx context.Context, txid string) (string, error) {
	var s string
	err := c.CallInto(ctx, &s, "blockchain.transaction.get", txid)
	return s, err
}

// Broadcast submits a raw transaction and returns its txid.
func (c *ElectrumClient) Broadcast(ctx context.Context, rawHex string) (string, error) {
	var s string
	err := c.CallInto(ctx, &s, "blockchain.transaction.broadcast", rawHex)
	return s, err
}

// MerkleRoot folds a merkle branch (hashes in display hex, as get_merkle
// returns them) onto txid at position pos and returns the root it proves.
func MerkleRoot(txid string, branch []string, pos int) (chainhash.Hash, error) {
	cur, err := chainhash.NewHashFromStr(txid)
	if err != nil {
		return chainhash.Hash{}, err
	}
	h := *cur
	for _, s := range branch {
		sib, err := chainhash.NewHashFromStr(s)
		if err != nil {
			return chainhash.Hash{}, err
		}
		var buf [64]byte
		if pos&1 == 0 {
			copy(buf[:32], h[:])
			copy(buf[32:], sib[:])
		} else {
			copy(buf[:32], sib[:])
			copy(buf[32:], h[:])
		}
		h = chainhash.DoubleHashH(buf[:])
		pos >>= 1
	}
	return h, nil
}

// Status computes a script hash's status from its history as the protocol
// defines it: confirmed entries in the given (block) order, then mempool
// entries ordered by height descending (0 before -1) and txid, each as
// "txid:height:", hashed once with SHA-256 and given in hex; nil for an
// empty history.
func Status(history []HistoryItem) *string {
	if len(history) == 0 {
		return nil
	}
	var confirmed, mempool []HistoryItem
	for _, h := range history {
		if h.Height > 0 {
			confirmed = append(confirmed, h)
		} else {
			mempool = append(mempool, h)
		}
	}
	sort.SliceStable(mempool, func(i, j int) bool {
		if mempool[i].Height != mempool[j].Height {
			return mempool[i].Height > mempool[j].Height
		}
		return mempool[i].TxHash < mempool[j].TxHash
	})
	var b strings.Builder
	for _, h := range append(confirmed, mempool...) {
		b.WriteString(h.TxHash)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(int(h.Height)))
		b.WriteByte(':')
	}
	sum := sha256.Sum256([]byte(b.String()))
	s := hex.EncodeToString(sum[:])
	return &s
}

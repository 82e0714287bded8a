package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// The tip phase of an ibd run: the chain's last blocks are sent one at a
// time on a quiet node, as blocks arrive at a real chain tip, and a wallet
// subscribed to scripts those blocks pay times the status notifications.

const (
	// tipPause is the quiet time before each tip block.
	tipPause = 300 * time.Millisecond
	// tipScriptsPerBlock bounds the scripts subscribed for each tip block.
	tipScriptsPerBlock = 20
	// tipWait bounds the wait for a tip block's notifications, its heavy
	// scripts' included.
	tipWait = 10 * time.Second
	// tipHeavy is how many of the chain's longest histories the wallet
	// subscribes to besides the tip blocks' scripts (those over the
	// server's history limit are refused and left out).
	tipHeavy = 5
)

// tipBlock is one block of the tip phase and the scripts (Electrum script
// hashes) it is the first tip block to pay; heavy are the heavy scripts it
// touches (pays or spends from), whose notifications it is timed for.
type tipBlock struct {
	height  int32
	raw     []byte
	txs     int
	scripts []string
	heavy   []string
}

// readTipBlocks returns the last n blocks of blocks.dat, whose tip is at
// tipHeight, with the scripts to subscribe for each.
func readTipBlocks(path string, tipHeight int32, n int) ([]tipBlock, error) {
	br, err := openBlocks(path)
	if err != nil {
		return nil, err
	}
	defer br.Close()
	var out []tipBlock
	seen := map[string]bool{}
	height := int32(0)
	for {
		raw, err := br.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if isGenesisHeader(raw) {
			continue
		}
		height++
		if height <= tipHeight-int32(n) {
			continue
		}
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
			return nil, fmt.Errorf("block %d: %w", height, err)
		}
		tb := tipBlock{height: height, raw: raw, txs: len(blk.Transactions)}
		for _, tx := range blk.Transactions[1:] {
			for _, out := range tx.TxOut {
				if len(tb.scripts) == tipScriptsPerBlock {
					break
				}
				if txscript.IsUnspendable(out.PkScript) {
					continue
				}
				sh := electrumScriptHash(out.PkScript)
				if !seen[sh] {
					seen[sh] = true
					tb.scripts = append(tb.scripts, sh)
				}
			}
		}
		out = append(out, tb)
	}
	return out, nil
}

// electrumScriptHash is the Electrum script hash of an output script: its
// SHA-256, byte-reversed, in hex.
func electrumScriptHash(pkScript []byte) string {
	h := sha256.Sum256(pkScript)
	for i, j := 0, len(h)-1; i < j; i, j = i+1, j-1 {
		h[i], h[j] = h[j], h[i]
	}
	return hex.EncodeToString(h[:])
}

// markTipHeavy sets each tip block's heavy scripts: those of heavy it pays
// or spends an output of. Spends are found by following the heavy
// scripts' outputs through the whole of blocks.dat.
func markTipHeavy(path string, tips []tipBlock, heavy []string) error {
	if len(tips) == 0 || len(heavy) == 0 {
		return nil
	}
	isHeavy := map[string]bool{}
	for _, sh := range heavy {
		isHeavy[sh] = true
	}
	byHeight := map[int32]*tipBlock{}
	for i := range tips {
		byHeight[tips[i].height] = &tips[i]
	}
	br, err := openBlocks(path)
	if err != nil {
		return err
	}
	defer br.Close()
	outs := map[wire.OutPoint]string{} // outputs paying a heavy script
	height := int32(0)
	for {
		raw, err := br.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if isGenesisHeader(raw) {
			continue
		}
		height++
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
			return fmt.Errorf("block %d: %w", height, err)
		}
		tb := byHeight[height]
		touched := map[string]bool{}
		for _, tx := range blk.Transactions {
			for _, in := range tx.TxIn {
				if sh, ok := outs[in.PreviousOutPoint]; ok {
					touched[sh] = true
				}
			}
			var op wire.OutPoint
			hashed := false
			for i, out := range tx.TxOut {
				sh := electrumScriptHash(out.PkScript)
				if !isHeavy[sh] {
					continue
				}
				if !hashed {
					op.Hash, hashed = tx.TxHash(), true
				}
				op.Index = uint32(i)
				outs[op] = sh
				touched[sh] = true
			}
		}
		if tb != nil {
			for _, sh := range heavy {
				if touched[sh] {
					tb.heavy = append(tb.heavy, sh)
				}
			}
		}
	}
}

// notifyClient is an Electrum session that records when notifications
// arrive: the time of each script's latest status notification and the
// highest header notified.
type notifyClient struct {
	conn net.Conn

	mu      sync.Mutex
	changed *sync.Cond
	status  map[string]time.Time // script hash -> latest notification
	header  int32
	err     error
	// refused are the scripts whose subscription was answered with an
	// error (a history over the server's limit): they get no
	// notifications.
	refused map[string]bool
	ids     map[int]string // request id -> script hash
}

// dialNotify subscribes to the headers and to every script of blocks; it
// returns once every subscription is answered.
func dialNotify(addr string, blocks []tipBlock, heavy []string) (*notifyClient, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c := &notifyClient{conn: conn, status: map[string]time.Time{}, header: -1, refused: map[string]bool{},
		ids: map[int]string{}}
	c.changed = sync.NewCond(&c.mu)
	var req bytes.Buffer
	req.WriteString(`{"jsonrpc":"2.0","id":0,"method":"server.version","params":["e2ebench","1.4"]}` + "\n")
	req.WriteString(`{"jsonrpc":"2.0","id":1,"method":"blockchain.headers.subscribe","params":[]}` + "\n")
	want := 2
	subscribe := func(sh string) {
		fmt.Fprintf(&req, `{"jsonrpc":"2.0","id":%d,"method":"blockchain.scripthash.subscribe","params":["%s"]}`+"\n", want, sh)
		c.ids[want] = sh
		want++
	}
	for _, b := range blocks {
		for _, sh := range b.scripts {
			subscribe(sh)
		}
	}
	for _, sh := range heavy {
		subscribe(sh)
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		conn.Close()
		return nil, err
	}
	answered := make(chan struct{})
	go c.read(want, answered)
	select {
	case <-answered:
		return c, nil
	case <-time.After(time.Minute):
		conn.Close()
		return nil, fmt.Errorf("electrum: %d subscriptions not answered within a minute", want)
	}
}

// read records notifications until the connection closes; answered is
// closed once want answers came.
func (c *notifyClient) read(want int, answered chan struct{}) {
	br := bufio.NewReaderSize(c.conn, 1<<20)
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		now := time.Now()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.changed.Broadcast()
			c.mu.Unlock()
			return
		}
		var m struct {
			ID     *int              `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
			Error  json.RawMessage   `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Method == "" {
			if m.ID != nil && len(m.Error) > 0 && string(m.Error) != "null" {
				c.mu.Lock()
				c.refused[c.ids[*m.ID]] = true
				c.mu.Unlock()
			}
			if n++; n == want {
				close(answered)
			}
			continue
		}
		c.mu.Lock()
		switch {
		case m.Method == "blockchain.scripthash.subscribe" && len(m.Params) == 2:
			var sh string
			if json.Unmarshal(m.Params[0], &sh) == nil {
				c.status[sh] = now
			}
		case m.Method == "blockchain.headers.subscribe" && len(m.Params) == 1:
			var h struct {
				Height int32 `json:"height"`
			}
			if json.Unmarshal(m.Params[0], &h) == nil && h.Height > c.header {
				c.header = h.Height
			}
		}
		c.changed.Broadcast()
		c.mu.Unlock()
	}
}

// await waits until the header of height has been notified and every
// script of scripts (those not refused) has a notification after since, or
// until tipWait passed; it returns the notification times that came and the
// scripts that had none. A header not notified in time is an error.
func (c *notifyClient) await(height int32, scripts []string, since time.Time) ([]time.Time, []string, error) {
	deadline := time.Now().Add(tipWait)
	timer := time.AfterFunc(tipWait, func() {
		c.mu.Lock()
		c.changed.Broadcast()
		c.mu.Unlock()
	})
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		var (
			got     []time.Time
			missing []string
		)
		for _, sh := range scripts {
			if c.refused[sh] {
				continue
			}
			if t, ok := c.status[sh]; ok && t.After(since) {
				got = append(got, t)
			} else {
				missing = append(missing, sh)
			}
		}
		if c.header >= height && len(missing) == 0 {
			return got, nil, nil
		}
		if c.err != nil {
			return got, missing, c.err
		}
		if time.Now().After(deadline) {
			if c.header < height {
				return got, missing, fmt.Errorf("block %d: header notified to %d after %v", height, c.header, tipWait)
			}
			return got, missing, nil
		}
		c.changed.Wait()
	}
}

func (c *notifyClient) Close() error { return c.conn.Close() }

// tipResult is what the tip phase measured, in milliseconds: submitblock's
// latency per block, from submitblock's answer to each status notification
// of a script the block pays and of a heavy script it touched, and from the
// index's commit of the block to the latter; and how many of the heavy
// scripts' notifications did not come.
type tipResult struct {
	submit, notify, heavy, heavyCommit []float64
	heavyMissing                       int
}

// runTip sends the tip blocks one at a time after a pause; with ePort not
// 0, a wallet subscribed to the blocks' scripts and to the heavy ones times
// the notifications. committed gives when the index committed a block
// (false: not known).
func runTip(rc *rpcClient, ePort int, blocks []tipBlock, heavy []string,
	committed func(height int32) (time.Time, bool)) (res tipResult, err error) {
	var nc *notifyClient
	if ePort != 0 {
		if nc, err = dialNotify("127.0.0.1:"+strconv.Itoa(ePort), blocks, heavy); err != nil {
			return res, err
		}
		defer nc.Close()
	}
	ms := func(d time.Duration) float64 {
		// A notification before submitblock's answer counts as 0.
		return max(float64(d.Microseconds())/1000, 0)
	}
	lost := map[string]bool{}
	time.Sleep(tipPause)
	for _, b := range blocks {
		body := rc.submitBody(hex.AppendEncode(nil, b.raw))
		start := time.Now()
		out, err := rc.post(body)
		connected := time.Now()
		if err != nil {
			return res, fmt.Errorf("submitblock %d: %w", b.height, err)
		}
		if string(out) != "null" {
			return res, fmt.Errorf("submitblock %d rejected: %s", b.height, out)
		}
		res.submit = append(res.submit, ms(connected.Sub(start)))
		if nc != nil {
			times, missing, err := nc.await(b.height, b.scripts, start)
			if err == nil && len(missing) > 0 {
				err = fmt.Errorf("block %d: %d of its scripts not notified after %v", b.height, len(missing), tipWait)
			}
			if err != nil {
				return res, err
			}
			for _, t := range times {
				res.notify = append(res.notify, ms(t.Sub(connected)))
			}
			// The heavy scripts the block touched are awaited before the
			// next block is sent, so that a notification slower than the
			// pause is timed for its own block and never for the next.
			// A script whose notification did not come is neither timed
			// nor counted again: a late one could not be told from the
			// next block's.
			var wait []string
			for _, sh := range b.heavy {
				if !lost[sh] {
					wait = append(wait, sh)
				}
			}
			times, missing, err = nc.await(b.height, wait, start)
			if err != nil {
				return res, err
			}
			res.heavyMissing += len(missing)
			for _, sh := range missing {
				lost[sh] = true
			}
			at, ok := committed(b.height)
			for _, t := range times {
				res.heavy = append(res.heavy, ms(t.Sub(connected)))
				if ok {
					res.heavyCommit = append(res.heavyCommit, ms(t.Sub(at)))
				}
			}
		}
		time.Sleep(tipPause)
	}
	return res, nil
}

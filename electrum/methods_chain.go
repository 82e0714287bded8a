package electrum

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// headerResult is the blockchain.headers.subscribe result and notification.
type headerResult struct {
	Height int32  `json:"height"`
	Hex    string `json:"hex"`
}

// proofResult is a header with its cp_height proof.
type proofResult struct {
	Branch []string `json:"branch"`
	Header string   `json:"header"`
	Root   string   `json:"root"`
}

// headerAt returns the hex of the main-chain header at height.
func (s *Server) headerAt(height int32) (string, error) {
	h, err := s.headerOf(height)
	if err != nil {
		return "", err
	}
	return headerHex(&h)
}

// headerOf returns the main-chain header at height, or the protocol's
// error.
func (s *Server) headerOf(height int32) (wire.BlockHeader, error) {
	h, err := s.backend.BlockHeader(height)
	if err != nil {
		if notFound(err) {
			return h, heightError(int64(height))
		}
		return h, internal("header", err)
	}
	return h, nil
}

// headerProof returns the display-hex branch and root proving the block
// leaf, the header answered at height, against cp_height (docs/PROTOCOL.md
// §4.5); errChainMoved when the chain reorganized while the header and the
// proof were read (the caller reads both again).
func (s *Server) headerProof(height, cpHeight int64, tipHeight int32, leaf chainhash.Hash) ([]string, string, error) {
	if !(height <= cpHeight && cpHeight <= int64(tipHeight)) {
		return nil, "", badRequest("require header height %d <= cp_height %d <= chain height %d", height, cpHeight, tipHeight)
	}
	branch, root, err := s.headers.proof(int32(height), int32(cpHeight), s.linkedHashes(int32(height), leaf))
	switch {
	case errors.Is(err, errChainMoved):
		return nil, "", err
	case err != nil:
		return nil, "", internal("header proof", err)
	}
	return hashesHex(branch), root.String(), nil
}

// proofReads bounds how often a header and its proof are read again while
// the chain moves.
const proofReads = 3

// errChainMoved is linkedHashes' answer for a header that does not link to
// the one it read at the height below, or is not the header answered.
var errChainMoved = errors.New("the chain moved while the proof was read")

// linkedHashes returns a reader of main-chain block hashes for one proof
// of leaf at height: a header read right after the height below must link
// to it, and the one at height be leaf, else the read fails with
// errChainMoved (they came from two branches).
func (s *Server) linkedHashes(height int32, leaf chainhash.Hash) func(int32) (chainhash.Hash, error) {
	prevHeight, prevHash := int32(-2), chainhash.Hash{}
	return func(h int32) (chainhash.Hash, error) {
		hdr, err := s.backend.BlockHeader(h)
		if err != nil {
			return chainhash.Hash{}, err
		}
		hash := hdr.BlockHash()
		if (h == prevHeight+1 && hdr.PrevBlock != prevHash) || (h == height && hash != leaf) {
			return chainhash.Hash{}, errChainMoved
		}
		prevHeight, prevHash = h, hash
		return hash, nil
	}
}

// proofCost is what a cp_height proof adds to its call's cost, as in
// ElectrumX: the proof reads and hashes the block hashes of the header's
// 1,024-block chunk and of the checkpoint's, hundreds of times a header's
// own work.
const proofCost = 1.0

// hashesHex formats hashes in display hex.
func hashesHex(hs []chainhash.Hash) []string {
	out := make([]string, len(hs))
	for i := range hs {
		out[i] = hs[i].String()
	}
	return out
}

// hBlockHeader returns one header, with a proof when cp_height > 0.
func hBlockHeader(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	height, err := argInt(args[0], "height")
	if err != nil {
		return nil, err
	}
	cp, err := argOptInt(args[1], "cp_height")
	if err != nil {
		return nil, err
	}
	tip, err := ss.srv.backend.ChainTip()
	if err != nil {
		return nil, internal("tip", err)
	}
	if height > int64(tip.Height) {
		return nil, heightError(height)
	}
	if cp == 0 {
		return ss.srv.headerAt(int32(height))
	}
	ss.charge(proofCost)
	for attempt := 1; ; attempt++ {
		h, err := ss.srv.headerOf(int32(height))
		if err != nil {
			return nil, err
		}
		branch, root, err := ss.srv.headerProof(height, cp, tip.Height, h.BlockHash())
		switch {
		case errors.Is(err, errChainMoved) && attempt < proofReads:
			continue
		case errors.Is(err, errChainMoved):
			return nil, internal("header proof", err)
		case err != nil:
			return nil, err
		}
		hdr, err := headerHex(&h)
		if err != nil {
			return nil, err
		}
		return proofResult{Branch: branch, Header: hdr, Root: root}, nil
	}
}

// hBlockHeaders returns up to 2016 consecutive headers: concatenated hex
// before 1.6, a list from 1.6 on.
func hBlockHeaders(_ context.Context, ss *session, args []json.RawMessage) (any, error) {
	start, err := argInt(args[0], "start_height")
	if err != nil {
		return nil, err
	}
	count, err := argInt(args[1], "count")
	if err != nil {
		return nil, err
	}
	cp, err := argOptInt(args[2], "cp_height")
	if err != nil {
		return nil, err
	}
	tip, err := ss.srv.backend.ChainTip()
	if err != nil {
		return nil, internal("tip", err)
	}
	if count > DefaultHeadersMax {
		count = DefaultHeadersMax
	}
	if start > int64(tip.Height) {
		count = 0
	} else if start+count-1 > int64(tip.Height) {
		count = int64(tip.Height) - start + 1
	}
	ss.charge(float64(count) / 50)
	form := cacheHeaders
	if ss.version.atLeast(version16) {
		form = cacheHeaders16
	}
	proof := count > 0 && cp > 0
	key := cacheKey{kind: form, start: start, count: count}
	var last chainhash.Hash
	cacheable := count >= cacheMinHeaders
	if cacheable {
		// The block at the range's last height commits to every header
		// in it: an entry for that block is the range the chain has.
		if last, err = ss.srv.backend.BlockHash(int32(start + count - 1)); err != nil {
			cacheable = false
		}
	}
	var hx []byte
	if cacheable {
		e := ss.srv.answers.get(key)
		if e == nil || e.last != last {
			other := key
			other.kind = cacheHeaders + cacheHeaders16 - form
			e = ss.srv.answers.get(other)
		}
		if e != nil && e.last == last {
			ss.srv.counters.cacheHits.Add(1)
			if !proof && e.key.kind == form && e.body != nil {
				return json.RawMessage(e.body), nil
			}
			hx = e.hex
		} else {
			ss.srv.counters.cacheMisses.Add(1)
		}
	}
	built := hx == nil
	if built {
		var linked bool
		if hx, linked, err = ss.srv.headersHex(start, count, last); err != nil {
			return nil, err
		}
		// A range read while the chain reorganized may mix two chains:
		// answered, but not kept.
		cacheable = cacheable && linked
	}
	var branch []string
	var root string
	if proof {
		ss.charge(proofCost)
		for attempt := 1; ; attempt++ {
			branch, root, err = ss.srv.headerProof(start+count-1, cp, tip.Height, lastHeaderHash(hx))
			if !errors.Is(err, errChainMoved) || attempt == proofReads {
				break
			}
			// The headers or the proof were read across a
			// reorganization: both again, and not kept.
			if hx, _, err = ss.srv.headersHex(start, count, chainhash.Hash{}); err != nil {
				return nil, err
			}
			cacheable = false
		}
		if errors.Is(err, errChainMoved) {
			return nil, internal("header proof", err)
		}
		if err != nil {
			return nil, err
		}
	}
	// The keys in the order encoding/json writes a map's.
	out := make([]byte, 0, len(hx)+len(hx)/80+256)
	out = append(out, '{')
	if proof {
		b, _ := json.Marshal(branch)
		out = append(append(append(out, `"branch":`...), b...), ',')
	}
	out = strconv.AppendInt(append(out, `"count":`...), count, 10)
	const hexLen = 2 * wire.MaxBlockHeaderPayload
	if form == cacheHeaders16 {
		out = append(out, `,"headers":[`...)
		for i := 0; i < len(hx); i += hexLen {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(append(append(out, '"'), hx[i:i+hexLen]...), '"')
		}
		out = append(out, ']')
	} else {
		out = append(append(append(out, `,"hex":"`...), hx...), '"')
	}
	out = strconv.AppendInt(append(out, `,"max":`...), DefaultHeadersMax, 10)
	if proof {
		b, _ := json.Marshal(root)
		out = append(append(out, `,"root":`...), b...)
	}
	out = append(out, '}')
	switch {
	case cacheable && !proof:
		ss.srv.answers.put(&cacheEntry{key: key, last: last, hex: hx, body: out})
	case cacheable && built:
		// The headers for the next request, with or without a proof.
		ss.srv.answers.put(&cacheEntry{key: key, last: last, hex: hx})
	}
	return json.RawMessage(out), nil
}

// lastHeaderHash returns the block hash of the last header of hx, headers
// in hex.
func lastHeaderHash(hx []byte) chainhash.Hash {
	var raw [wire.MaxBlockHeaderPayload]byte
	if _, err := hex.Decode(raw[:], hx[len(hx)-2*len(raw):]); err != nil {
		return chainhash.Hash{}
	}
	return chainhash.DoubleHashH(raw[:])
}

// headersHex returns the main chain's headers from start, count of them,
// serialized and hex-encoded into one buffer (up to 2,016 headers, asked
// for by every wallet that syncs: no string per header). linked reports
// that each header read links to the one before it and the last is the
// block last: one chain's range, which the answer cache may keep.
func (s *Server) headersHex(start, count int64, last chainhash.Hash) (hx []byte, linked bool, err error) {
	raw := bytes.NewBuffer(make([]byte, 0, count*wire.MaxBlockHeaderPayload))
	linked = count > 0
	var prev chainhash.Hash
	for h := start; h < start+count; h++ {
		hdr, err := s.headerOf(int32(h))
		if err != nil {
			return nil, false, err
		}
		if err := hdr.Serialize(raw); err != nil {
			return nil, false, internal("header", err)
		}
		if linked && last != (chainhash.Hash{}) {
			if h > start && hdr.PrevBlock != prev {
				linked = false
			}
			prev = hdr.BlockHash()
		}
	}
	linked = linked && prev == last
	hx = make([]byte, hex.EncodedLen(raw.Len()))
	hex.Encode(hx, raw.Bytes())
	return hx, linked, nil
}

// hHeadersSubscribe subscribes to new tips and returns the current one.
// Tip notifications wait until the answer is queued, with claims as a
// script's subscribe holds them (hSubscribe).
func hHeadersSubscribe(_ context.Context, ss *session, _ []json.RawMessage) (any, error) {
	n := ss.srv.notifier
	ss.subMu.Lock()
	fresh := !ss.headersSub
	ss.headersSub = true
	ss.headersClaims++
	ss.subMu.Unlock()
	handedOff := false
	defer func() {
		if !handedOff {
			ss.subMu.Lock()
			ss.settleHeadersLocked()
			ss.subMu.Unlock()
		}
	}()
	if fresh {
		n.addHeaders(ss)
	}
	if ss.closed() {
		n.dropSession(ss, nil)
		return nil, rpcErrorf(codeServerBusy, "session closed")
	}
	seq := n.currentSeq()
	tip, err := ss.srv.backend.ChainTip()
	var h wire.BlockHeader
	if err == nil {
		h, err = ss.srv.backend.BlockHeader(tip.Height)
	}
	var x string
	if err == nil {
		x, err = headerHex(&h)
	}
	res := headerResult{Height: tip.Height, Hex: x}
	var msg []byte
	if err == nil {
		msg, err = encodeNotification("blockchain.headers.subscribe", []headerResult{res})
	}
	ss.subMu.Lock()
	defer ss.subMu.Unlock()
	if err != nil {
		return nil, internal("tip header", err)
	}
	answered := headerMark{height: tip.Height, hash: h.BlockHash(), seq: seq, set: true, msg: msg}
	if !ss.lastHeader.set || ss.lastHeader.seq <= seq {
		ss.lastHeader = answered
	}
	handedOff = true
	return afterAnswer{v: res, after: func() {
		ss.subMu.Lock()
		defer ss.subMu.Unlock()
		if ss.headersSub {
			ss.headersAnswered, ss.headersTold = true, answered
			ss.settleHeadersLocked()
		}
	}, unsent: func() {
		ss.subMu.Lock()
		defer ss.subMu.Unlock()
		if ss.headersSub {
			if !ss.headersAnswered {
				ss.headersAnswered, ss.headersTold = true, answered
			}
			ss.settleHeadersLocked()
		}
	}, dropped: func() {
		ss.subMu.Lock()
		defer ss.subMu.Unlock()
		ss.settleHeadersLocked()
	}}, nil
}

// settleHeadersLocked settles one claim of a headers.subscribe, as
// settleSubLocked does a script's. subMu is held.
func (ss *session) settleHeadersLocked() {
	if !ss.headersSub {
		return
	}
	if ss.headersClaims--; ss.headersClaims > 0 {
		return
	}
	if !ss.headersAnswered {
		ss.headersSub = false
		ss.srv.notifier.dropSession(ss, nil)
		return
	}
	last, told := ss.lastHeader, ss.headersTold
	if last.msg != nil && (last.hash != told.hash || last.height != told.height) {
		ss.headersTold = last
		ss.sendHeld(last.msg)
	}
}

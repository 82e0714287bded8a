package electrum

import (
	"github.com/btcd-electrum/btcd-electrum/indexers"
	"github.com/btcd-electrum/btcd-electrum/internal/lru"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// answerCache keeps encoded answers that many clients ask for alike, or
// one client again and again: chunks of headers (every wallet that syncs
// asks for the same 2,016-header chunks) and confirmed histories (a
// wallet's at every status change and reconnection; an exchange's or a
// service's address, looked up by every wallet that paid it). Building a
// chunk costs thousands of header reads, an encoding and a few hundred KB
// of garbage, and even a short history two database cursors; an answer
// from here is sent as it is (executeMsg sends large results in parts,
// without a copy). Without it, a few hundred clients a
// second asking for such answers (and never reading them) kept the
// garbage collector and both cores busy and the wallets beside them waited
// (docs/RELIABILITY.md, "Hostile clients").
//
// Every entry says what it is valid for and is checked on each use, so no
// block connected or disconnected has to reach the cache: a history is
// valid at the index tip (hash and height) it was read at, a chunk of
// headers while the main chain has the same block at its last height
// (which commits to every header below it). An entry is never changed
// once stored: its bytes are handed out as they are.
//
// The cache holds at most max bytes of entries, least recently used out
// first; max <= 0 disables it.
type answerCache struct {
	c *lru.Cache[cacheKey, *cacheEntry]
}

// cacheKey names an answer: a script's confirmed history, or a range of
// headers in one of the two forms block.headers has.
type cacheKey struct {
	kind  byte
	sh    indexers.ScriptHash
	start int64
	count int64
}

// The kinds of cacheKey.
const (
	cacheHistory   byte = 'h'
	cacheHeaders   byte = 'x' // concatenated hex, protocol before 1.6
	cacheHeaders16 byte = 'l' // a list of hex headers, protocol 1.6
)

// cacheEntry is one cached answer and what it is valid for.
type cacheEntry struct {
	key cacheKey
	// tip is the index tip a history was read at.
	tip indexers.Tip
	// last is the hash of the last header of a range.
	last chainhash.Hash
	// n is the number of history entries in body.
	n int
	// body is the answer as sent: a JSON list of confirmed history
	// entries, or block.headers' result without a proof.
	body []byte
	// hex is a range's headers in hex, for answers with a proof.
	hex []byte
}

func (e *cacheEntry) size() int64 {
	// With the map's and the list's share of it.
	return int64(len(e.body)+len(e.hex)) + 256
}

// Ranges of fewer headers are built each time: a wallet asks for a few
// headers at the tip, each range its own, and reading them costs little.
// Histories of any length are kept: even a short one costs two database
// cursors to read (about 0.1 ms, more than the rest of its request), and
// wallets ask for the same ones again at every status change and every
// reconnection.
const cacheMinHeaders = 100

func newAnswerCache(max int64) *answerCache {
	if max <= 0 {
		return nil
	}
	return &answerCache{c: lru.New[cacheKey, *cacheEntry](max)}
}

// get returns the entry of key, nil when there is none.
func (c *answerCache) get(key cacheKey) *cacheEntry {
	if c == nil {
		return nil
	}
	e, _ := c.c.Get(key)
	return e
}

// put stores e in place of any entry of its key, then drops the least
// recently used entries over the budget. An entry larger than an eighth
// of the budget is not kept.
func (c *answerCache) put(e *cacheEntry) {
	if c == nil || e.size() > c.c.Max()/8 {
		return
	}
	c.c.Put(e.key, e, e.size(), nil)
}

// stats returns the entries and bytes held.
func (c *answerCache) stats() (entries int, bytes int64) {
	if c == nil {
		return 0, 0
	}
	return c.c.Len()
}

// currentTip is the index tip readers see or are about to see: the one the
// index last wrote when the backend knows it without a read.
func (s *Server) currentTip() (indexers.Tip, bool) {
	if lt, ok := s.backend.(latestTipper); ok {
		if now, ok := lt.LatestTip(); ok {
			return now, true
		}
	}
	now, err := s.backend.ChainTip()
	return now, err == nil
}

// confirmedHistory returns a script's confirmed history as a JSON list of
// get_history entries, its number of entries and the tip it was read at:
// from the cache when it holds the history at the current tip, read from
// the index (and kept) otherwise.
func (s *Server) confirmedHistory(sh indexers.ScriptHash, limit int) ([]byte, int, indexers.Tip, error) {
	key := cacheKey{kind: cacheHistory, sh: sh}
	now, known := s.currentTip()
	if e := s.answers.get(key); e != nil && known && e.tip == now && e.n <= limit {
		s.counters.cacheHits.Add(1)
		return e.body, e.n, e.tip, nil
	}
	hist, tip, err := s.backend.History(sh, limit)
	if err != nil {
		return nil, 0, tip, err
	}
	body := historyItems(hist, nil)
	s.counters.cacheMisses.Add(1)
	if known && tip == now {
		s.answers.put(&cacheEntry{key: key, tip: tip, n: len(hist), body: body})
	}
	return body, len(hist), tip, nil
}

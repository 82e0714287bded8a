package esplora

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/address/v2/bech32"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcd-electrum/btcd-electrum/electrum"
	"github.com/btcd-electrum/btcd-electrum/indexers"
)

// errTooPopular is electrs' answer for a script whose history or unspent
// set exceeds the server's limit.
var errTooPopular = badRequest("Too many history entries")

// tipRetries bounds how often a read of two parts of the index is retried
// when a block came between them.
const tipRetries = 5

// atOneTip returns what read answers at one index tip: read, which reads
// the index and the unconfirmed view, runs again (at most tipRetries
// times; then its last answer stands) while the index tip after it is not
// the one before it. A block committed or undone between its reads would
// count a transaction in neither part, or in both. The request's
// transactions are read again each time: their places may have moved.
func atOneTip[T any](s *Server, q *request, read func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		clear(q.txs)
		before, err := s.index.ChainTip()
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := read()
		if err != nil || attempt == tipRetries {
			return v, err
		}
		if after, err := s.index.ChainTip(); err != nil || after == before {
			return v, err
		}
	}
}

// otherNets are the networks an address of another network is recognised
// from, to say so rather than call it invalid.
var otherNets = []*chaincfg.Params{&chaincfg.MainNetParams, &chaincfg.TestNet3Params,
	&chaincfg.TestNet4Params, &chaincfg.SigNetParams, &chaincfg.RegressionNetParams, &chaincfg.SimNetParams}

// decodeAddress returns the output script of an address of the node's
// network. As electrs, a regtest node also takes testnet addresses (they
// share base58 prefixes, and wallets configured for testnet use them).
func decodeAddress(s string, params *chaincfg.Params) ([]byte, error) {
	// No address is longer than bech32's 90 characters: a longer path is
	// refused before any decoding.
	if len(s) > maxAddressLen {
		return nil, badRequest("Invalid Bitcoin address")
	}
	accept := []*chaincfg.Params{params}
	if params.Name == chaincfg.RegressionNetParams.Name {
		accept = append(accept, &chaincfg.TestNet3Params)
	}
	hrp, data, enc, bechErr := bech32.DecodeGeneric(s)
	for _, p := range accept {
		if bechErr == nil {
			if script, ok := segwitScript(hrp, data, enc, p); ok {
				return script, nil
			}
			continue
		}
		if a, err := address.DecodeAddress(s, p); err == nil && a.IsForNet(p) && !isPubKey(a) {
			script, err := txscript.PayToAddrScript(a)
			if err != nil {
				return nil, badRequest("Invalid Bitcoin address")
			}
			return script, nil
		}
	}
	for _, p := range otherNets {
		if bechErr == nil {
			if _, ok := segwitScript(hrp, data, enc, p); ok {
				return nil, badRequest("Address on invalid network")
			}
			continue
		}
		if a, err := address.DecodeAddress(s, p); err == nil && a.IsForNet(p) && !isPubKey(a) {
			return nil, badRequest("Address on invalid network")
		}
	}
	return nil, badRequest("Invalid Bitcoin address")
}

// maxAddressLen is the longest address there is: bech32's limit.
const maxAddressLen = 90

// segwitScript returns the output script of a decoded bech32 string that
// is a segwit address of the network: any witness version, as BIP 173 and
// BIP 350 define them and electrs reads them (btcd's DecodeAddress knows
// versions 0 and 1 only, and takes a 20-byte program of any version for
// version 0's).
func segwitScript(hrp string, data []byte, enc bech32.Version, p *chaincfg.Params) ([]byte, bool) {
	if !strings.EqualFold(hrp, p.Bech32HRPSegwit) || len(data) == 0 || data[0] > 16 {
		return nil, false
	}
	version := data[0]
	if want := bech32.VersionM; version == 0 {
		if enc != bech32.Version0 {
			return nil, false
		}
	} else if enc != want {
		return nil, false
	}
	program, err := bech32.ConvertBits(data[1:], 5, 8, false)
	if err != nil || len(program) < 2 || len(program) > 40 ||
		(version == 0 && len(program) != 20 && len(program) != 32) {
		return nil, false
	}
	op := byte(txscript.OP_0)
	if version > 0 {
		op = txscript.OP_1 + version - 1
	}
	script, err := txscript.NewScriptBuilder().AddOp(op).AddData(program).Script()
	return script, err == nil
}

func isPubKey(a address.Address) bool {
	_, ok := a.(*address.AddressPubKey)
	return ok
}

// parseScript returns the script hash an address or scripthash path names,
// and the script itself when the path gives it (an address).
func (s *Server) parseScript(kind, str string) (indexers.ScriptHash, []byte, error) {
	if kind == "address" {
		script, err := decodeAddress(str, s.index.ChainParams())
		if err != nil {
			return indexers.ScriptHash{}, nil, err
		}
		return indexers.ScriptHashFromScript(script), script, nil
	}
	b, err := hex.DecodeString(str)
	if err != nil {
		return indexers.ScriptHash{}, nil, errInvalidHex
	}
	if len(b) != sha256.Size {
		return indexers.ScriptHash{}, nil, badRequest("Invalid scripthash")
	}
	// Esplora's script hash is the SHA-256 in natural byte order, which is
	// how the index holds it (Electrum shows it reversed).
	var sh indexers.ScriptHash
	copy(sh[:], b)
	return sh, nil, nil
}

// scriptMatcher tells outputs paying a script from the others, learning
// the script from the first output whose hash matches.
type scriptMatcher struct {
	sh     indexers.ScriptHash
	script []byte
}

func (m *scriptMatcher) match(pkScript []byte) bool {
	if m.script != nil {
		return bytes.Equal(pkScript, m.script)
	}
	if sha256.Sum256(pkScript) == m.sh {
		m.script = bytes.Clone(pkScript)
		return true
	}
	return false
}

// scriptStats is chain_stats and mempool_stats, in the order serde_json
// writes electrs' (its keys sorted).
type scriptStats struct {
	FundedTxoCount int   `json:"funded_txo_count"`
	FundedTxoSum   int64 `json:"funded_txo_sum"`
	SpentTxoCount  int   `json:"spent_txo_count"`
	SpentTxoSum    int64 `json:"spent_txo_sum"`
	TxCount        int   `json:"tx_count"`
}

// statsCacheEntries bounds the cached funded totals.
const statsCacheEntries = 100_000

// fundedTotals are the outputs a script's confirmed history funds up to a
// block: valid while that block is at that height in the chain the index
// tip ends (tipChain).
type fundedTotals struct {
	height int32
	hash   chainhash.Hash
	script []byte
	count  int
	sum    int64
	stats  scriptStats // the whole confirmed stats at that block
}

// statsCache keeps scripts' fundedTotals: a script's stats are answered
// again without a read while the tip stays, and after a new block read
// only that block's transactions.
type statsCache struct {
	mu  sync.Mutex
	max int
	m   map[indexers.ScriptHash]fundedTotals
}

func newStatsCache(max int) *statsCache {
	return &statsCache{max: max, m: make(map[indexers.ScriptHash]fundedTotals)}
}

func (c *statsCache) get(sh indexers.ScriptHash) (fundedTotals, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.m[sh]
	return f, ok
}

// evictSample is how many entries put compares to choose the one it drops.
const evictSample = 8

// put keeps f. A script without a history is not kept: it is read again in
// a seek, and stats asked for made-up scripts would fill the cache. When
// full, the shortest history of a few entries in map order goes: a long
// history's totals cost far more to read again.
func (c *statsCache) put(sh indexers.ScriptHash, f fundedTotals) {
	if f.stats.TxCount == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[sh]; !ok && len(c.m) >= c.max {
		var victim indexers.ScriptHash
		shortest, seen := -1, 0
		for k, v := range c.m {
			if shortest < 0 || v.stats.TxCount < shortest {
				victim, shortest = k, v.stats.TxCount
			}
			if seen++; seen == evictSample {
				break
			}
		}
		delete(c.m, victim)
	}
	c.m[sh] = f
}

// historyCacheMin is the shortest history kept between requests (a
// variable for tests), and historyCacheEntries bounds the entries kept (36
// bytes each).
var historyCacheMin = 1_000

const historyCacheEntries = 2_000_000

// historyCache keeps long histories with the tip they were read at: the
// spenders of a page of a long history's transactions (/outspends of each)
// read it once per tip instead of once per transaction.
type historyCache struct {
	mu      sync.Mutex
	entries int
	m       map[indexers.ScriptHash]cachedHistory
}

type cachedHistory struct {
	tip  indexers.Tip
	hist []indexers.HistoryEntry
}

func (c *historyCache) get(sh indexers.ScriptHash) (cachedHistory, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[sh]
	return h, ok
}

func (c *historyCache) put(sh indexers.ScriptHash, h cachedHistory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[indexers.ScriptHash]cachedHistory)
	}
	if old, ok := c.m[sh]; ok {
		c.entries -= len(old.hist)
		delete(c.m, sh)
	}
	for k, v := range c.m { // evict at random (map order) until it fits
		if c.entries+len(h.hist) <= historyCacheEntries {
			break
		}
		c.entries -= len(v.hist)
		delete(c.m, k)
	}
	if c.entries+len(h.hist) <= historyCacheEntries {
		c.m[sh] = h
		c.entries += len(h.hist)
	}
}

// historyKey names a read of a script's history at an index tip.
type historyKey struct {
	sh  indexers.ScriptHash
	tip indexers.Tip
}

// historyFlight is a read of a history under way; done closes when it
// ends, ok set when it read (else its waiters read for themselves).
type historyFlight struct {
	done chan struct{}
	ok   bool
	hist []indexers.HistoryEntry
	tip  indexers.Tip
	err  error
}

// historyFlights are the reads of histories under way.
type historyFlights struct {
	mu sync.Mutex
	m  map[historyKey]*historyFlight
}

// join returns the read under way of key, or a new one that the caller
// makes (lead true) and ends with finish.
func (fs *historyFlights) join(key historyKey) (f *historyFlight, lead bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.m[key]; ok {
		return f, false
	}
	if fs.m == nil {
		fs.m = make(map[historyKey]*historyFlight)
	}
	f = &historyFlight{done: make(chan struct{})}
	fs.m[key] = f
	return f, true
}

func (fs *historyFlights) finish(key historyKey, f *historyFlight) {
	fs.mu.Lock()
	delete(fs.m, key)
	fs.mu.Unlock()
	close(f.done)
}

// history reads a script's confirmed history within the server's limit;
// a long one comes from the cache while the index tip is the one it was
// read at. The slice is shared: callers do not modify it. A read takes one
// of the server's history reader places (histReaders), and requests for
// the same script at the same tip wait for the read under way and share its
// slice, so the server reads no more histories at once than it has places,
// however many clients ask.
func (s *Server) history(q *request, sh indexers.ScriptHash) ([]indexers.HistoryEntry, indexers.Tip, error) {
	now, err := s.index.ChainTip()
	if err != nil {
		return nil, indexers.Tip{}, err
	}
	if h, ok := s.histories.get(sh); ok && h.tip == now {
		return h.hist, h.tip, nil
	}
	key := historyKey{sh, now}
	for {
		f, lead := s.flights.join(key)
		if lead {
			s.readHistory(q, key, f)
		} else {
			select {
			case <-f.done:
			case <-q.ctx.Done():
				return nil, indexers.Tip{}, q.ctx.Err()
			}
		}
		if f.ok {
			return f.hist, f.tip, f.err
		}
		if err := q.ctx.Err(); err != nil {
			return nil, indexers.Tip{}, err
		}
		// The request that led the read went before it had a reader
		// place: this one reads, or waits for another that does.
	}
}

// readHistory makes the read f of a history, within a history reader
// place.
func (s *Server) readHistory(q *request, key historyKey, f *historyFlight) {
	defer s.flights.finish(key, f)
	select {
	case s.histReaders <- struct{}{}:
		defer func() { <-s.histReaders }()
	case <-q.ctx.Done():
		return
	}
	hist, tip, err := s.index.History(key.sh, s.cfg.MaxHistory)
	if errors.Is(err, indexers.ErrHistoryTooLarge) {
		hist, err = nil, errTooPopular
	}
	if err == nil && len(hist) >= historyCacheMin {
		s.histories.put(key.sh, cachedHistory{tip: tip, hist: hist})
	}
	f.hist, f.tip, f.err, f.ok = hist, tip, err, true
}

// chainStats derives a script's confirmed stats from its history and its
// unspent outputs read at one tip: tx_count is the history's length; the
// funded outputs are those of the history's transactions paying the script
// (each transaction read once, or only those of new blocks when the
// script's totals are cached); every spent output was funded in the
// history, so spent = funded - unspent.
func (s *Server) chainStats(q *request, sh indexers.ScriptHash, script []byte) (scriptStats, error) {
	for attempt := 0; attempt < tipRetries; attempt++ {
		cached, haveCached := s.stats.get(sh)
		if now, err := s.index.ChainTip(); err == nil {
			if haveCached && now.Hash == cached.hash {
				return cached.stats, nil
			}
		}
		hist, tip, err := s.history(q, sh)
		if err != nil {
			return scriptStats{}, err
		}
		// The length is taken now so that the slice is not held while
		// fundedIn waits for a reader place.
		txCount := len(hist)
		unspentCount, unspentSum, tip2, err := s.index.UnspentTotals(sh)
		if err != nil {
			return scriptStats{}, err
		}
		if tip != tip2 {
			continue
		}
		m := &scriptMatcher{sh: sh, script: script}
		var funded fundedTotals
		start := 0
		at, err := s.tipChain(tip)
		if err != nil {
			return scriptStats{}, err
		}
		if haveCached && cached.height <= tip.Height {
			if hash, ok := at.hash(cached.height); ok && hash == cached.hash {
				funded = cached
				if m.script == nil {
					m.script = cached.script
				}
				for start < len(hist) && hist[start].Height <= cached.height {
					start++
				}
			}
		}
		count, sum, err := s.fundedIn(q, sh, start, tip, m)
		if errors.Is(err, errTipMoved) {
			continue
		}
		if err != nil {
			return scriptStats{}, err
		}
		funded.count += count
		funded.sum += sum
		if !at.still() {
			continue
		}
		st := scriptStats{
			FundedTxoCount: funded.count, FundedTxoSum: funded.sum,
			SpentTxoCount: funded.count - unspentCount, SpentTxoSum: funded.sum - unspentSum,
			TxCount: txCount,
		}
		s.stats.put(sh, fundedTotals{height: tip.Height, hash: tip.Hash, script: m.script,
			count: funded.count, sum: funded.sum, stats: st})
		return st, nil
	}
	return scriptStats{}, errors.New("the chain kept moving while the stats were read")
}

// errTipMoved is fundedIn's answer when the index read the history at
// another tip than the caller's: the caller reads again.
var errTipMoved = errors.New("the index tip moved")

// fundedIn counts and sums the outputs paying the script in the
// transactions of its history from entry from on, which the index hands
// out in bulk at one tip (HistoryTxs); errTipMoved when that is not tip.
// A long history's transactions take one of the server's reader places
// while they are read, so the first-time stats of long histories leave the
// other requests the rest of the CPU.
func (s *Server) fundedIn(q *request, sh indexers.ScriptHash, from int, tip indexers.Tip, m *scriptMatcher) (int, int64, error) {
	select {
	case s.readers <- struct{}{}:
		defer func() { <-s.readers }()
	case <-q.ctx.Done():
		return 0, 0, q.ctx.Err()
	}
	count, sum := 0, int64(0)
	read, err := s.index.HistoryTxs(sh, from, func(_ int, _ indexers.HistoryEntry, raw []byte) error {
		if err := q.ctx.Err(); err != nil {
			return err
		}
		n, v, err := paidBy(raw, m)
		count, sum = count+n, sum+v
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	if read != tip {
		return 0, 0, errTipMoved
	}
	return count, sum, nil
}

// paidBy counts and sums the outputs of a serialized transaction paying the
// script.
func paidBy(raw []byte, m *scriptMatcher) (int, int64, error) {
	if n, v, ok := paidIn(raw, m); ok {
		return n, v, nil
	}
	c, err := parseCached(raw, true, indexers.TxLocation{})
	if err != nil {
		return 0, 0, err
	}
	n, v := 0, int64(0)
	for _, o := range c.tx.TxOut {
		if m.match(o.PkScript) {
			n++
			v += o.Value
		}
	}
	return n, v, nil
}

// paidIn walks a serialized transaction to its outputs and counts and sums
// those paying the script, without building the transaction: a long
// history's stats read tens of thousands of them. ok is false when the
// bytes do not parse (the caller then deserializes them).
func paidIn(raw []byte, m *scriptMatcher) (n int, sum int64, ok bool) {
	r := raw
	take := func(k uint64) bool {
		if uint64(len(r)) < k {
			return false
		}
		r = r[k:]
		return true
	}
	varint := func() (uint64, bool) {
		if len(r) == 0 {
			return 0, false
		}
		b := r[0]
		r = r[1:]
		switch b {
		case 0xfd:
			if len(r) < 2 {
				return 0, false
			}
			v := uint64(binary.LittleEndian.Uint16(r))
			r = r[2:]
			return v, true
		case 0xfe:
			if len(r) < 4 {
				return 0, false
			}
			v := uint64(binary.LittleEndian.Uint32(r))
			r = r[4:]
			return v, true
		case 0xff:
			if len(r) < 8 {
				return 0, false
			}
			v := binary.LittleEndian.Uint64(r)
			r = r[8:]
			return v, true
		}
		return uint64(b), true
	}
	if !take(4) {
		return 0, 0, false
	}
	if len(r) >= 2 && r[0] == 0x00 && r[1] == 0x01 { // segwit marker and flag
		r = r[2:]
	}
	ins, ok := varint()
	if !ok || ins == 0 {
		return 0, 0, false
	}
	for i := uint64(0); i < ins; i++ {
		if !take(36) {
			return 0, 0, false
		}
		l, ok := varint()
		if !ok || !take(l) || !take(4) {
			return 0, 0, false
		}
	}
	outs, ok := varint()
	if !ok {
		return 0, 0, false
	}
	for i := uint64(0); i < outs; i++ {
		if len(r) < 8 {
			return 0, 0, false
		}
		value := int64(binary.LittleEndian.Uint64(r))
		r = r[8:]
		l, ok := varint()
		if !ok || uint64(len(r)) < l {
			return 0, 0, false
		}
		if m.match(r[:l]) {
			n++
			sum += value
		}
		r = r[l:]
	}
	return n, sum, true
}

// mempoolStats derives a script's unconfirmed stats from its mempool
// transactions: their outputs paying it, and their inputs spending its
// outputs (confirmed or unconfirmed).
func (s *Server) mempoolStatsOf(q *request, sh indexers.ScriptHash, script []byte) (scriptStats, error) {
	var st scriptStats
	m := &scriptMatcher{sh: sh, script: script}
	for _, c := range s.mempoolTxsOf(q, sh, 0) {
		st.TxCount++
		for _, o := range c.tx.TxOut {
			if m.match(o.PkScript) {
				st.FundedTxoCount++
				st.FundedTxoSum += o.Value
			}
		}
		for _, in := range c.tx.TxIn {
			prev, err := s.prevOut(q, in.PreviousOutPoint)
			if err != nil {
				return st, err
			}
			if prev != nil && m.match(prev.PkScript) {
				st.SpentTxoCount++
				st.SpentTxoSum += prev.Value
			}
		}
	}
	return st, nil
}

// mempoolTxsOf returns up to limit (0: all) unconfirmed transactions
// touching a script, in mempoolEntries' order.
func (s *Server) mempoolTxsOf(q *request, sh indexers.ScriptHash, limit int) []*cachedTx {
	return s.mempoolTxsIn(q, s.mempoolEntries(sh), limit)
}

// mempoolEntries returns the unconfirmed transactions touching a script by
// txid as displayed. Unlike the Electrum protocol's order, which puts those
// with an unconfirmed input last, it does not change while they stay
// unconfirmed, so ?after_txid= paging past one skips none of the others
// when a parent is mined between pages.
func (s *Server) mempoolEntries(sh indexers.ScriptHash) []electrum.MempoolEntry {
	es := s.index.MempoolEntries(sh)
	slices.SortFunc(es, func(a, b electrum.MempoolEntry) int {
		switch {
		case indexers.DisplayLess(&a.TxHash, &b.TxHash):
			return -1
		case a.TxHash == b.TxHash:
			return 0
		}
		return 1
	})
	return es
}

// mempoolTxsIn is mempoolTxsOf for a script's entries already read.
func (s *Server) mempoolTxsIn(q *request, es []electrum.MempoolEntry, limit int) []*cachedTx {
	var out []*cachedTx
	for _, e := range es {
		if limit > 0 && len(out) >= limit {
			break
		}
		raw, ok := s.index.MempoolTx(e.TxHash)
		if !ok {
			continue // mined or evicted since the view was read
		}
		c, err := parseCached(raw, false, indexers.TxLocation{})
		if err != nil {
			continue
		}
		q.txs[e.TxHash] = c
		out = append(out, c)
	}
	return out
}

// GET /address/:address and /scripthash/:hash
func (s *Server) scriptStats(q *request, kind, str string) (*reply, error) {
	sh, script, err := s.parseScript(kind, str)
	if err != nil {
		return nil, err
	}
	both, err := atOneTip(s, q, func() ([2]scriptStats, error) {
		chain, err := s.chainStats(q, sh, script)
		if err != nil {
			return [2]scriptStats{}, err
		}
		mem, err := s.mempoolStatsOf(q, sh, script)
		return [2]scriptStats{chain, mem}, err
	})
	if err != nil {
		return nil, err
	}
	chain, mem := both[0], both[1]
	// The keys sorted, as serde_json writes electrs' answer.
	type addressStats struct {
		Address      string      `json:"address"`
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
	}
	type scripthashStats struct {
		ChainStats   scriptStats `json:"chain_stats"`
		MempoolStats scriptStats `json:"mempool_stats"`
		Scripthash   string      `json:"scripthash"`
	}
	if kind == "address" {
		return jsonReply(addressStats{str, chain, mem}, ttlShort)
	}
	return jsonReply(scripthashStats{chain, mem, str}, ttlShort)
}

// chainPage returns up to 25 confirmed transactions of a script, newest
// first, after lastSeen when given (none when lastSeen is not in the
// history, as electrs answers).
func (s *Server) chainPage(q *request, sh indexers.ScriptHash, lastSeen *chainhash.Hash) ([]*txValue, error) {
	hist, _, err := s.index.HistoryPage(sh, lastSeen, chainTxsPerPage, s.cfg.MaxHistory)
	if errors.Is(err, indexers.ErrHistoryTooLarge) {
		return nil, errTooPopular
	}
	if err != nil {
		return nil, err
	}
	out := []*txValue{}
	for i := len(hist) - 1; i >= 0; i-- {
		if err := q.ctx.Err(); err != nil {
			return nil, err
		}
		c, err := s.lookupTx(q, hist[i].TxHash)
		if err != nil {
			return nil, err
		}
		if c == nil || !c.confirmed {
			continue // reorganized away since the history was read
		}
		v, err := s.txJSON(q, c)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Server) mempoolValues(q *request, sh indexers.ScriptHash) ([]*txValue, error) {
	return s.mempoolValuesIn(q, s.mempoolEntries(sh))
}

// mempoolValuesIn is mempoolValues for a script's entries already read.
func (s *Server) mempoolValuesIn(q *request, es []electrum.MempoolEntry) ([]*txValue, error) {
	out := []*txValue{}
	for _, c := range s.mempoolTxsIn(q, es, maxMempoolTxs) {
		v, err := s.txJSON(q, c)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// GET /address/:address/txs: up to 50 unconfirmed transactions, then the
// first page of confirmed ones when no unconfirmed one is left past those
// 50. With ?after_txid= (mempool.space's paging, which its clients use):
// after an unconfirmed transaction, the same from the unconfirmed ones
// after it; after a confirmed one, the confirmed page after it; 422
// "after_txid not found" for any other. A page therefore ends on an
// unconfirmed transaction while more follow, as mempool.space's does, and
// paging by its last txid reaches every one.
func (s *Server) scriptTxs(q *request, kind, str string) (*reply, error) {
	sh, _, err := s.parseScript(kind, str)
	if err != nil {
		return nil, err
	}
	var after *chainhash.Hash
	if q.query.Has("after_txid") {
		if h, err := parseTxid(q.query.Get("after_txid")); err == nil {
			after = &h
		}
	}
	return atOneTip(s, q, func() (*reply, error) { return s.scriptTxsAt(q, sh, after) })
}

// scriptTxsAt is scriptTxs's answer, read once.
func (s *Server) scriptTxsAt(q *request, sh indexers.ScriptHash, after *chainhash.Hash) (*reply, error) {
	// after_txid is looked for among all the script's unconfirmed
	// transactions, not only the first page's.
	es := s.mempoolEntries(sh)
	if after != nil {
		i := 0
		for i < len(es) && es[i].TxHash != *after {
			i++
		}
		if i == len(es) {
			// Not unconfirmed: the confirmed page after it, if it is in
			// the script's history.
			if _, err := s.index.TxLocation(*after); errors.Is(err, indexers.ErrNotFound) {
				return nil, &httpError{http.StatusUnprocessableEntity, "after_txid not found"}
			} else if err != nil {
				return nil, err
			}
			page, err := s.chainPage(q, sh, after)
			if err != nil {
				return nil, err
			}
			return jsonReply(page, ttlShort)
		}
		es = es[i+1:]
	}
	mem, err := s.mempoolValuesIn(q, es)
	if err != nil {
		return nil, err
	}
	if len(es) > maxMempoolTxs {
		return jsonReply(mem, ttlShort)
	}
	chain, err := s.chainPage(q, sh, nil)
	if err != nil {
		return nil, err
	}
	return jsonReply(append(mem, chain...), ttlShort)
}

// GET /address/:address/txs/chain[/:last_seen_txid]: a last_seen_txid that
// is not a txid is ignored, as electrs ignores it, and so is one that is not
// confirmed: /txs ends on an unconfirmed transaction while more follow, and
// clients of Blockstream's API (BDK, esplora-client) pass a page's last txid
// here, which may meanwhile have been replaced or evicted too.
func (s *Server) scriptChainTxs(q *request, kind, str, last string) (*reply, error) {
	sh, _, err := s.parseScript(kind, str)
	if err != nil {
		return nil, err
	}
	var lastSeen *chainhash.Hash
	if last != "" {
		if h, err := parseTxid(last); err == nil {
			lastSeen = &h
		}
	}
	if lastSeen != nil {
		if _, err := s.index.TxLocation(*lastSeen); errors.Is(err, indexers.ErrNotFound) {
			lastSeen = nil
		} else if err != nil {
			return nil, err
		}
	}
	// At one tip: an entry undone between the history's read and its
	// transaction's would leave a short page, where a pager stops.
	page, err := atOneTip(s, q, func() ([]*txValue, error) { return s.chainPage(q, sh, lastSeen) })
	if err != nil {
		return nil, err
	}
	return jsonReply(page, ttlShort)
}

// GET /address/:address/txs/mempool
func (s *Server) scriptMempoolTxs(q *request, kind, str string) (*reply, error) {
	sh, _, err := s.parseScript(kind, str)
	if err != nil {
		return nil, err
	}
	mem, err := s.mempoolValues(q, sh)
	if err != nil {
		return nil, err
	}
	return jsonReply(mem, ttlShort)
}

type utxoValue struct {
	TxID   string   `json:"txid"`
	Vout   uint32   `json:"vout"`
	Status txStatus `json:"status"`
	Value  int64    `json:"value"`
}

// GET /address/:address/utxo: the confirmed unspent outputs no mempool
// transaction spends, in chain order, then the unconfirmed ones.
func (s *Server) scriptUtxo(q *request, kind, str string) (*reply, error) {
	sh, _, err := s.parseScript(kind, str)
	if err != nil {
		return nil, err
	}
retry:
	for attempt := 0; attempt < tipRetries; attempt++ {
		// The read leaves room for the outputs the mempool spends, which
		// the answer leaves out: MaxUtxos bounds the confirmed outputs
		// returned.
		uns, tip, err := s.index.Unspent(sh, s.cfg.MaxUtxos+s.index.MempoolSpends(sh))
		if errors.Is(err, indexers.ErrHistoryTooLarge) {
			return nil, errTooPopular
		}
		if err != nil {
			return nil, err
		}
		at, err := s.tipChain(tip)
		if err != nil {
			return nil, err
		}
		statuses := make(map[int32]txStatus)
		out := []utxoValue{}
		for _, u := range uns {
			if s.index.MempoolIsSpent(wire.OutPoint{Hash: u.TxHash, Index: u.Vout}) {
				continue
			}
			st, ok := statuses[u.Height]
			if !ok {
				hash, ok := at.hash(u.Height)
				if !ok {
					continue retry
				}
				if st, err = s.statusAt(u.Height, hash); err != nil {
					return nil, err
				}
				statuses[u.Height] = st
			}
			out = append(out, utxoValue{u.TxHash.String(), u.Vout, st, u.Value})
		}
		if !at.still() {
			continue
		}
		if len(out) > s.cfg.MaxUtxos {
			return nil, errTooPopular
		}
		for _, u := range s.index.MempoolUnspent(sh) {
			out = append(out, utxoValue{u.TxHash.String(), u.Vout, txStatus{}, u.Value})
		}
		if now, err := s.index.ChainTip(); err == nil && now != tip && attempt+1 < tipRetries {
			continue // a block came between the two parts
		}
		// The limit bounds the confirmed outputs, not the unconfirmed
		// ones the mempool adds.
		return jsonReply(out, ttlShort)
	}
	return nil, errors.New("the chain kept moving while the outputs were read")
}

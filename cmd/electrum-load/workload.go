package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
)

// argKind says what a method's parameters are drawn from.
type argKind int

const (
	argNone     argKind = iota
	argScript           // a script hash from the scripts file
	argHeight           // a height in [0, tip]
	argTx               // a txid
	argFee              // a confirmation target
	argTxHeight         // a confirmed txid and its block's height
	argBlock            // a block hash
)

// methodSpec is one method the tool can put in a mix: an Electrum method
// (RPC) or an Esplora HTTP request (Path, with %s for the argument).
type methodSpec struct {
	Name string // short name used in -mix and reports
	RPC  string // Electrum method
	Path string // Esplora GET path
	Arg  argKind
}

// esplora says whether the spec is an Esplora request.
func (s methodSpec) esplora() bool { return s.Path != "" }

// methodSpecs lists the methods a mix may name, by short or full name.
var methodSpecs = []methodSpec{
	{"get_balance", "blockchain.scripthash.get_balance", "", argScript},
	{"get_history", "blockchain.scripthash.get_history", "", argScript},
	{"listunspent", "blockchain.scripthash.listunspent", "", argScript},
	{"get_mempool", "blockchain.scripthash.get_mempool", "", argScript},
	{"subscribe", "blockchain.scripthash.subscribe", "", argScript},
	{"block.header", "blockchain.block.header", "", argHeight},
	{"headers.subscribe", "blockchain.headers.subscribe", "", argNone},
	{"transaction.get", "blockchain.transaction.get", "", argTx},
	{"get_merkle", "blockchain.transaction.get_merkle", "", argTxHeight},
	{"estimatefee", "blockchain.estimatefee", "", argFee},
	{"features", "server.features", "", argNone},
	{"ping", "server.ping", "", argNone},
	// Esplora (-esplora): a script's stats, the first page of its
	// confirmed transactions, its unspent outputs; a transaction's
	// status; a block's header; the tip.
	{"esplora.stats", "", "/scripthash/%s", argScript},
	{"esplora.txs", "", "/scripthash/%s/txs/chain", argScript},
	{"esplora.utxo", "", "/scripthash/%s/utxo", argScript},
	{"esplora.tx.status", "", "/tx/%s/status", argTx},
	{"esplora.header", "", "/block/%s/header", argBlock},
	{"esplora.tip", "", "/blocks/tip/height", argNone},
}

// defaultMix is the wallet-like request mix used without -mix.
const defaultMix = "get_balance=3,get_history=2,listunspent=2,block.header=2,headers.subscribe=1"

// defaultEsploraMix is the same wallet's requests to an Esplora API, the
// mix used with -esplora and without -mix. Its Electrum counterpart, for
// the same load on the same scripts, is electrumForEsploraMix.
const (
	defaultEsploraMix     = "esplora.stats=3,esplora.txs=2,esplora.utxo=2,esplora.tx.status=1,esplora.header=2"
	electrumForEsploraMix = "get_balance=3,get_history=2,listunspent=2,get_merkle=1,block.header=2"
)

// mixEntry is a method and its weight.
type mixEntry struct {
	Spec   methodSpec
	Weight int
}

// mix draws methods in proportion to their weights.
type mix struct {
	Entries []mixEntry
	cum     []int
	total   int
}

// parseMix reads "name=weight,..." (a weight may be left out: 1).
func parseMix(s string) (*mix, error) {
	m := &mix{}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, hasW := strings.Cut(part, "=")
		weight := 1
		if hasW {
			var err error
			weight, err = strconv.Atoi(strings.TrimSpace(w))
			if err != nil || weight < 0 {
				return nil, fmt.Errorf("mix %q: weight must be a whole number ≥ 0", part)
			}
		}
		spec, ok := lookupMethod(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("mix: unknown method %q (known: %s)", name, knownMethods())
		}
		if seen[spec.Name] {
			return nil, fmt.Errorf("mix: %s named twice", spec.Name)
		}
		seen[spec.Name] = true
		if weight == 0 {
			continue
		}
		m.total += weight
		m.Entries = append(m.Entries, mixEntry{spec, weight})
		m.cum = append(m.cum, m.total)
	}
	if m.total == 0 {
		return nil, fmt.Errorf("mix %q has no method with a weight above 0", s)
	}
	return m, nil
}

// pick returns the index of a method drawn by weight.
func (m *mix) pick(rng *rand.Rand) int {
	x := rng.IntN(m.total)
	return sort.SearchInts(m.cum, x+1)
}

// needs says whether any method of the mix takes arguments of kind k.
func (m *mix) needs(k argKind) bool {
	for _, e := range m.Entries {
		if e.Spec.Arg == k {
			return true
		}
	}
	return false
}

// String formats the mix as -mix takes it.
func (m *mix) String() string {
	parts := make([]string, len(m.Entries))
	for i, e := range m.Entries {
		parts[i] = e.Spec.Name + "=" + strconv.Itoa(e.Weight)
	}
	return strings.Join(parts, ",")
}

func lookupMethod(name string) (methodSpec, bool) {
	for _, s := range methodSpecs {
		if s.Name == name || s.RPC == name {
			return s, true
		}
	}
	return methodSpec{}, false
}

func knownMethods() string {
	names := make([]string, len(methodSpecs))
	for i, s := range methodSpecs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// hashList is a list of hashes (script hashes, txids or block hashes)
// read from a file or collected from the server, kept both as written and
// as JSON strings ready for a request.
type hashList struct {
	Raw    []string
	Quoted []string
	// Heights are the heights of collected txids' blocks (none for a
	// file's).
	Heights []int64
	// Odd counts entries that are not 64 hex digits; they are sent as
	// they are (the server's answer is an error, counted as such).
	Odd int
}

// readHashes reads one hash per line: the first whitespace-separated
// field; '#' starts a comment; blank lines are skipped.
func readHashes(path string) (*hashList, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l := &hashList{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		l.add(fields[0])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(l.Raw) == 0 {
		return nil, fmt.Errorf("%s: no hashes", path)
	}
	return l, nil
}

func (l *hashList) add(h string) {
	if !isHash(h) {
		l.Odd++
	}
	l.Raw = append(l.Raw, h)
	l.Quoted = append(l.Quoted, quoted(h))
}

// isHash says whether s is 64 hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// requestArgs draws the parameters of one request.
type requestArgs struct {
	scripts *hashList
	txids   *hashList // transaction.get's: -txids, else harvested
	mined   *hashList // get_merkle's: harvested, with their heights
	blocks  *hashList
	tip     int64
	buf     []string
}

// params returns the JSON parameters of a request of spec; the slice is
// reused by the next call.
func (a *requestArgs) params(spec methodSpec, rng *rand.Rand) []string {
	p := a.buf[:0]
	switch spec.Arg {
	case argScript:
		p = append(p, a.scripts.Quoted[rng.IntN(len(a.scripts.Quoted))])
	case argHeight:
		p = append(p, strconv.FormatInt(rng.Int64N(a.tip+1), 10))
	case argTx:
		p = append(p, a.txids.Quoted[rng.IntN(len(a.txids.Quoted))])
	case argTxHeight:
		i := rng.IntN(len(a.mined.Quoted))
		p = append(p, a.mined.Quoted[i], strconv.FormatInt(a.mined.Heights[i], 10))
	case argBlock:
		p = append(p, a.blocks.Quoted[rng.IntN(len(a.blocks.Quoted))])
	case argFee:
		p = append(p, "6")
	}
	a.buf = p
	return p
}

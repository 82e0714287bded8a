package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// singleOrder is the default order of the single-request timings for each
// heavy script; "subscribe" is scripthash.subscribe timed twice on one
// session (first and second call). The first method of a script meets the
// server's caches cold for it.
const singleOrder = "get_history,listunspent,get_balance,subscribe"

// esploraSingleOrder is singleOrder with -esplora: a script's stats (the
// first call reads them from the history's transactions), its first page,
// its unspent outputs.
const esploraSingleOrder = "esplora.stats,esplora.txs,esplora.utxo"

// singleResult is one method's timing for one script on an idle server.
type singleResult struct {
	Script string
	Index  int    // line among the scripts (0 = first)
	Method string // short name; "subscribe#1" and "subscribe#2" for the two subscribe calls
	// Times are the answered repetitions': a failed one (no answer) is
	// not a timing.
	Times []time.Duration
	// Entries is the number of elements of an array result (-1 for other
	// results); Bytes the result's size in bytes; Result whether any
	// repetition was answered with a result (else both are meaningless).
	Entries int
	Bytes   int
	Result  bool
	// Error is the first error answer or failure of the repetitions, if
	// any; a later answer does not clear it. After a failure, First is
	// not the server's first call.
	Error string
}

// First, Best and Median summarise the answered repetitions (0 when none
// was answered).
func (r *singleResult) First() time.Duration {
	if len(r.Times) == 0 {
		return 0
	}
	return r.Times[0]
}

// Best is the fastest repetition.
func (r *singleResult) Best() time.Duration {
	if len(r.Times) == 0 {
		return 0
	}
	b := r.Times[0]
	for _, t := range r.Times {
		b = min(b, t)
	}
	return b
}

// Median is the median repetition (the lower middle one for an even
// count).
func (r *singleResult) Median() time.Duration {
	if len(r.Times) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), r.Times...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2]
}

// parseSingleOrder checks a -single-order list.
func parseSingleOrder(s string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name != "subscribe" {
			if _, ok := lookupMethod(name); !ok {
				return nil, fmt.Errorf("-single-order: unknown method %q", name)
			}
		}
		out = append(out, name)
	}
	return out, nil
}

// runSingle times the methods of order for the first n scripts, each
// repeated repeat times, on idle sessions.
func runSingle(ctx context.Context, d target, scripts *hashList, n, repeat int, order []string) ([]*singleResult, error) {
	n = min(n, len(scripts.Raw))
	if n <= 0 || repeat <= 0 {
		return nil, nil
	}
	var out []*singleResult
	for i := 0; i < n && ctx.Err() == nil; i++ {
		for _, name := range order {
			rs, err := timeSingle(ctx, d, scripts, i, name, repeat)
			out = append(out, rs...)
			if err != nil {
				return out, err
			}
		}
	}
	return out, ctx.Err()
}

// timeSingle times one method for script i, repeat times, on a session of
// its own; "subscribe" times the first and the second call of
// scripthash.subscribe on a new session each repetition (the first computes
// the status, the second may find it cached).
func timeSingle(ctx context.Context, d target, scripts *hashList, i int, name string, repeat int) ([]*singleResult, error) {
	sh := scripts.Quoted[i]
	spec, results := methodSpec{Name: "subscribe", RPC: "blockchain.scripthash.subscribe", Arg: argScript}, []*singleResult{
		{Script: scripts.Raw[i], Index: i, Method: "subscribe#1", Entries: -1},
		{Script: scripts.Raw[i], Index: i, Method: "subscribe#2", Entries: -1},
	}
	perSession := 2
	if name != "subscribe" {
		spec, _ = lookupMethod(name)
		perSession = 1
		results = []*singleResult{{Script: scripts.Raw[i], Index: i, Method: name, Entries: -1}}
	}
	var c session
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for k := 0; k < repeat && ctx.Err() == nil; k++ {
		if c == nil || perSession > 1 {
			if c != nil {
				c.Close()
			}
			var err error
			if c, _, err = d.open(ctx); err != nil {
				return nil, err
			}
		}
		for j := 0; j < perSession; j++ {
			r := results[j]
			start := time.Now()
			a, err := c.do(spec, []string{sh})
			took := time.Since(start)
			if err != nil {
				if r.Error == "" {
					r.Error = failureKind(err)
				}
				c.Close()
				c = nil
				break
			}
			r.Times = append(r.Times, took)
			if a.errKind == "" {
				r.Entries, r.Bytes, r.Result = a.entries, a.bytes, true
			} else if r.Error == "" {
				r.Error = a.errKind
			}
		}
	}
	// A method none of whose repetitions was answered is reported with
	// its failure.
	var out []*singleResult
	for _, r := range results {
		if len(r.Times) > 0 || r.Error != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

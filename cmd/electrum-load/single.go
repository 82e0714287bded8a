package main

import (
	"context"
	"sort"
	"time"
)

// singleMethods are timed one request at a time for each heavy script, in
// this order; scripthash.subscribe is timed separately, first and second
// call on one session.
var singleMethods = []string{"get_history", "listunspent", "get_balance"}

// singleResult is one method's timing for one script on an idle server.
type singleResult struct {
	Script string
	Index  int    // line among the scripts (0 = first)
	Method string // short name; "subscribe#1" and "subscribe#2" for the two subscribe calls
	Times  []time.Duration
	// Entries is the number of elements of an array result (-1 for other
	// results); Bytes the result's size in bytes.
	Entries int
	Bytes   int
	Error   string // the error answer or failure, if any
}

// First, Best and Median summarise the repetitions.
func (r *singleResult) First() time.Duration { return r.Times[0] }

// Best is the fastest repetition.
func (r *singleResult) Best() time.Duration {
	b := r.Times[0]
	for _, t := range r.Times {
		b = min(b, t)
	}
	return b
}

// Median is the median repetition (the lower middle one for an even
// count).
func (r *singleResult) Median() time.Duration {
	s := append([]time.Duration(nil), r.Times...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2]
}

// runSingle times the single-request methods for the first n scripts,
// each repeated repeat times, on idle sessions.
func runSingle(ctx context.Context, d *dialer, scripts *hashList, n, repeat int) ([]*singleResult, error) {
	n = min(n, len(scripts.Raw))
	if n <= 0 || repeat <= 0 {
		return nil, nil
	}
	var c *conn
	var err error
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var out []*singleResult
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sh := scripts.Quoted[i]
		for _, name := range singleMethods {
			spec, _ := lookupMethod(name)
			r := &singleResult{Script: scripts.Raw[i], Index: i, Method: name, Entries: -1}
			for k := 0; k < repeat && ctx.Err() == nil; k++ {
				if c == nil {
					if c, _, err = d.dial(ctx); err != nil {
						return out, err
					}
				}
				start := time.Now()
				m, err := c.call(spec.RPC, false, sh)
				r.Times = append(r.Times, time.Since(start))
				if err != nil {
					r.Error = failureKind(err)
					c.Close()
					c = nil
					continue
				}
				r.note(m)
			}
			if len(r.Times) > 0 {
				out = append(out, r)
			}
		}

		// scripthash.subscribe twice on a new session each repetition:
		// the first call computes the status, the second may find it
		// cached.
		sub := [2]*singleResult{
			{Script: scripts.Raw[i], Index: i, Method: "subscribe#1", Entries: -1},
			{Script: scripts.Raw[i], Index: i, Method: "subscribe#2", Entries: -1},
		}
		// One connection at a time: the session above is closed first.
		if c != nil {
			c.Close()
			c = nil
		}
		for k := 0; k < repeat && ctx.Err() == nil; k++ {
			sc, _, err := d.dial(ctx)
			if err != nil {
				return out, err
			}
			for j := range sub {
				start := time.Now()
				m, err := sc.call("blockchain.scripthash.subscribe", false, sh)
				sub[j].Times = append(sub[j].Times, time.Since(start))
				if err != nil {
					sub[j].Error = failureKind(err)
					break
				}
				sub[j].note(m)
			}
			sc.Close()
		}
		for _, r := range sub {
			if len(r.Times) > 0 {
				out = append(out, r)
			}
		}
	}
	return out, ctx.Err()
}

// note records the size or error of an answer.
func (r *singleResult) note(m *message) {
	if m.Error != nil {
		r.Error = errorKind(parseError(m.Error))
		return
	}
	r.Entries, r.Bytes = m.ResultEntries, m.ResultBytes
}

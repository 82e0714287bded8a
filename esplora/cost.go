package esplora

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/btcd-electrum/btcd-electrum/electrum"
)

// The Electrum server's cost limits, applied to Esplora's clients. A client
// address has an account, as an Electrum session has: every request adds
// requestCost and its bytes in and out over BandwidthUnit, and the account
// decays by CostHardLimit/10,000 a second. Above CostSoftLimit a request
// waits, up to RequestSleep at the hard limit; at CostHardLimit it is
// refused with 429 until the account has decayed below it. Addresses in the
// exempt networks have no account unless ThrottleExempt.

// requestCost is what one request adds before its bytes, as an Electrum
// method does.
const requestCost = 0.5

// maxAccounts bounds the accounts kept. Once sweepEvery accounts, or a
// quarter of those held, were created since the last sweep, those decayed
// to nothing go (a sweep reads them all). Past the bound a new account
// takes the place of one under the soft limit among accountSample read,
// never of a throttled one: a flood of new addresses must not wipe a
// client's debt. With none, the addresses without an account share one
// (overflow), so that they are charged and throttled together.
const (
	maxAccounts   = 100_000
	sweepEvery    = 256
	accountSample = 64
)

// errExcessiveUsage refuses a client at the hard limit.
var errExcessiveUsage = &httpError{http.StatusTooManyRequests, "Too Many Requests: excessive resource usage"}

// costLimits are the limits in use; a hard limit <= 0 disables them.
type costLimits struct {
	soft, hard float64
	sleep      time.Duration
	unit       float64
}

// limitsOf takes the limits from cfg, with the Electrum server's defaults
// for zero fields.
func limitsOf(cfg *Config) costLimits {
	l := costLimits{soft: cfg.CostSoftLimit, hard: cfg.CostHardLimit, sleep: cfg.RequestSleep,
		unit: float64(cfg.BandwidthUnit)}
	if l.soft == 0 {
		l.soft = electrum.DefaultCostSoftLimit
	}
	if l.hard == 0 {
		l.hard = electrum.DefaultCostHardLimit
	}
	if l.sleep == 0 {
		l.sleep = electrum.DefaultRequestSleep
	}
	if l.unit <= 0 {
		l.unit = electrum.DefaultBandwidthUnit
	}
	return l
}

// costAccounts holds the accounts by client address.
type costAccounts struct {
	mu       sync.Mutex
	m        map[string]*costAccount
	overflow costAccount
	created  int // accounts created since the last sweep
}

type costAccount struct {
	cost  float64
	stamp time.Time
}

// current returns ip's account with its cost decayed to now, creating it
// on the address's first request; the shared overflow account when there
// is no room for it.
func (a *costAccounts) current(ip string, l costLimits, now time.Time) *costAccount {
	if a.m == nil {
		a.m = make(map[string]*costAccount)
	}
	acc := a.m[ip]
	if acc == nil {
		if a.created++; a.created >= max(sweepEvery, len(a.m)/4) {
			a.sweep(l, now)
		}
		if len(a.m) < maxAccounts || a.evictCheap(l, now) {
			acc = &costAccount{stamp: now}
			a.m[ip] = acc
		} else {
			acc = &a.overflow
		}
	}
	acc.cost = acc.decayed(l, now)
	acc.stamp = now
	return acc
}

// decayed is the account's cost at now.
func (acc *costAccount) decayed(l costLimits, now time.Time) float64 {
	return max(acc.cost-now.Sub(acc.stamp).Seconds()*l.hard/10000, 0)
}

// sweep drops the accounts that have decayed to nothing.
func (a *costAccounts) sweep(l costLimits, now time.Time) {
	a.created = 0
	for ip, acc := range a.m {
		if acc.decayed(l, now) <= 0 {
			delete(a.m, ip)
		}
	}
}

// evictCheap drops an account under the soft limit among accountSample of
// them, and reports whether it found one.
func (a *costAccounts) evictCheap(l costLimits, now time.Time) bool {
	n := 0
	for ip, acc := range a.m {
		if acc.decayed(l, now) < l.soft {
			delete(a.m, ip)
			return true
		}
		if n++; n == accountSample {
			break
		}
	}
	return false
}

// admit decides a request of ip: nil to go on (after waiting when over the
// soft limit), errExcessiveUsage at the hard limit, or the context's error
// when the client left while it waited.
func (a *costAccounts) admit(ctx context.Context, ip string, l costLimits) error {
	a.mu.Lock()
	cost := a.current(ip, l, time.Now()).cost
	a.mu.Unlock()
	switch {
	case cost >= l.hard:
		return errExcessiveUsage
	case cost <= l.soft:
		return nil
	}
	t := time.NewTimer(time.Duration((cost - l.soft) / (l.hard - l.soft) * float64(l.sleep)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// charge adds a request and its bytes to ip's account.
func (a *costAccounts) charge(ip string, l costLimits, bytes int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acc := a.current(ip, l, time.Now())
	acc.cost += requestCost + float64(bytes)/l.unit
}

// countingWriter counts the bytes of an answer's body.
type countingWriter struct {
	http.ResponseWriter
	n int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += n
	return n, err
}

// countingBody counts the bytes of a request body read.
type countingBody struct {
	io.ReadCloser
	n int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += n
	return n, err
}

package main

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram layout: values (nanoseconds) below 2*subBuckets have a bucket
// each; above, every power of two is split into subBuckets equal buckets,
// so a bucket's width is under 1/subBuckets (0.8%) of its values. The
// whole int64 range takes histBuckets counters (59 KiB), however many
// samples are recorded.
const (
	subBucketBits = 7
	subBuckets    = 1 << subBucketBits
	histBuckets   = (64-subBucketBits-1)*subBuckets + 2*subBuckets
)

// histogram is a log-bucketed latency histogram in the manner of HDR
// histograms. Record is safe for concurrent use (atomic counters); read it
// once recording has stopped.
type histogram struct {
	counts [histBuckets]atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
	max    atomic.Int64
	min    atomic.Int64 // 0 until the first sample; stored as value+1
}

// bucketOf returns the bucket of a value.
func bucketOf(v int64) int {
	if v < 0 {
		v = 0
	}
	u := uint64(v)
	if u < 2*subBuckets {
		return int(u)
	}
	shift := bits.Len64(u) - subBucketBits - 1
	return shift*subBuckets + int(u>>uint(shift))
}

// bucketHigh returns the largest value of bucket b.
func bucketHigh(b int) int64 {
	if b < 2*subBuckets {
		return int64(b)
	}
	shift := b/subBuckets - 1
	sub := b - shift*subBuckets // in [subBuckets, 2*subBuckets)
	hi := (uint64(sub)+1)<<uint(shift) - 1
	if hi > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(hi)
}

// Record adds one sample.
func (h *histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(uint64(v))
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
	for {
		m := h.min.Load()
		if (m != 0 && v+1 >= m) || h.min.CompareAndSwap(m, v+1) {
			break
		}
	}
}

// Count returns the number of samples.
func (h *histogram) Count() uint64 { return h.total.Load() }

// Max returns the largest sample.
func (h *histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Min returns the smallest sample (0 without samples).
func (h *histogram) Min() time.Duration {
	m := h.min.Load()
	if m == 0 {
		return 0
	}
	return time.Duration(m - 1)
}

// Mean returns the average sample.
func (h *histogram) Mean() time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / n)
}

// Quantile returns the value at or below which a fraction q of the samples
// lie: the top of the bucket holding the sample of rank ceil(q*n), capped
// by the largest sample, so it overstates by under 0.8% and quantiles are
// ordered as q is.
func (h *histogram) Quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	var seen uint64
	for b := range h.counts {
		seen += h.counts[b].Load()
		if seen >= rank {
			v := bucketHigh(b)
			if m := h.max.Load(); v > m {
				v = m
			}
			if lo := h.Min(); time.Duration(v) < lo {
				v = int64(lo)
			}
			return time.Duration(v)
		}
	}
	return h.Max()
}

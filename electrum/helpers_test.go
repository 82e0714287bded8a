package electrum

import (
	"context"
	"math/rand"
	"time"
)

// newRand returns a seeded random source.
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// contextWithTimeout returns a context that ends after d (its cancel runs
// when it expires).
func contextWithTimeout(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	time.AfterFunc(d, cancel)
	return ctx
}

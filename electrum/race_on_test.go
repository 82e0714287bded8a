//go:build race

package electrum

// raceDetector: the tests run under the race detector, whose sync.Pool
// drops a random share of what is put back, so allocation counts that rest
// on a pool do not hold.
const raceDetector = true

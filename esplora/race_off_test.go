//go:build !race

package esplora

// raceDetector says whether the tests run under the race detector, which
// makes them several times slower: long tests shrink their chains.
const raceDetector = false

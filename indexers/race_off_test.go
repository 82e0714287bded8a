//go:build !race

package indexers_test

// raceDetector: the tests run without the race detector.
const raceDetector = false

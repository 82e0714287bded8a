//go:build race

package indexers_test

// raceDetector: the tests run under the race detector, several times slower;
// the tests on generated chains use smaller ones.
const raceDetector = true

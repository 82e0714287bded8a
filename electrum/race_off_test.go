//go:build !race

package electrum

// raceDetector: the tests run without the race detector.
const raceDetector = false

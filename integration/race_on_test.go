//go:build race

package integration

// raceDetector: the tests run under the race detector, several times slower;
// the long-running tests drive fewer sessions.
const raceDetector = true

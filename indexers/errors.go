package indexers

import "fmt"

// CorruptError reports index rows that contradict each other. It is returned
// by reads and never by the block path.
type CorruptError struct{ msg string }

// Error implements error.
func (e *CorruptError) Error() string { return "electrum index corrupt: " + e.msg }

func corruptf(format string, args ...interface{}) error {
	return &CorruptError{msg: fmt.Sprintf(format, args...)}
}

//go:build !linux

package integration

import "syscall"

// childAttrs has no parent-death signal to set off Linux: a test killed by
// go test's -timeout leaves its children running there.
func childAttrs() *syscall.SysProcAttr { return nil }

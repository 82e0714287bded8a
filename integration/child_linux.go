package integration

import "syscall"

// childAttrs makes a node or btcd process the harness starts itself (Start,
// StartBtcdProcess) die with the test process: a test killed by go test's
// -timeout runs no cleanup, and the child would otherwise keep its ports
// and directories.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

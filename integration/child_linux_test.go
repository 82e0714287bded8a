package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestChildDiesWithTest: a node binary the harness started is killed when
// the process that started it dies without its cleanup (as a test killed
// by go test's -timeout): here that process is this test binary run again
// as a child, which starts a node, prints its PID and is killed.
func TestChildDiesWithTest(t *testing.T) {
	if os.Getenv("HARNESS_CHILD_PID_FILE") != "" {
		n, err := Start(NodeConfig{Binary: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(os.Getenv("HARNESS_CHILD_PID_FILE"), []byte(strconv.Itoa(n.cmd.Process.Pid)), 0o600); err != nil {
			t.Fatal(err)
		}
		select {} // until killed
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithTest$")
	cmd.Env = append(os.Environ(), "HARNESS_CHILD_PID_FILE="+pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	var pid int
	WaitFor(t, ctx, "the child's node", func() bool {
		b, err := os.ReadFile(pidFile)
		if err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(string(b))
		}
		return pid > 0
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	WaitFor(t, ctx, "the node to die with the process that started it", func() bool {
		// Gone, or a zombie its new parent has yet to reap.
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return syscall.Kill(pid, 0) != nil || err != nil || bytes.Contains(stat, []byte(") Z "))
	})
}

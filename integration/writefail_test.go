package integration

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// limitFileSize sets the running node's limit on the size of the files it
// writes (RLIMIT_FSIZE) to the size of the largest file it writes now plus
// margin bytes: a write beyond fails with EFBIG (Go ignores SIGXFSZ), as
// writes fail on a disk that is full or failing.
func limitFileSize(t *testing.T, n *Node, margin int64) {
	t.Helper()
	largest := int64(0)
	for _, root := range []string{n.DataDir, n.LogDir, n.Dir} {
		_ = filepath.Walk(root, func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && fi.Size() > largest {
				largest = fi.Size()
			}
			return nil
		})
	}
	limitFileSizeTo(t, n, largest+margin)
}

// metadataJournalSize returns the size of the journal of the block
// database's leveldb (the newest *.log of its metadata directory), which
// every flush of ffldb's write cache appends to.
func metadataJournalSize(t *testing.T, n *Node) int64 {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(n.DataDir, "regtest", "blocks_ffldb", "metadata", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no journal of the block database's leveldb: %v", err)
	}
	newest := logs[0]
	for _, l := range logs[1:] {
		if l > newest {
			newest = l
		}
	}
	fi, err := os.Stat(newest)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// limitFileSizeTo sets the running node's RLIMIT_FSIZE to limit bytes.
func limitFileSizeTo(t *testing.T, n *Node, limit int64) {
	t.Helper()
	lim := syscall.Rlimit{Cur: uint64(limit), Max: uint64(limit)}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(n.cmd.Process.Pid),
		uintptr(syscall.RLIMIT_FSIZE), uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		t.Fatalf("prlimit: %v", errno)
	}
}

// waitExit waits for the node's process to end and returns its log since
// its last start.
func waitExit(t *testing.T, n *Node) string {
	t.Helper()
	select {
	case <-n.exited:
	case <-time.After(time.Minute):
		t.Fatal("the node did not stop after its write failed")
	}
	// Its output, not its log file: the node's writes to files fail.
	logged, err := n.Output()
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.LastIndex(logged, "[INF] NODE: Version"); i >= 0 {
		logged = logged[i:]
	}
	return logged
}

// TestWriteFailureStopsNode makes the node binary's writes fail (its files
// may not grow, as on a full or failing disk) while blocks connect at the
// tip, and while it shuts down and flushes: it stops with a clear log line,
// and once writes work again it starts without a rebuild, its index at the
// chain tip, verified, answering as the model, and the chain goes on.
func TestWriteFailureStopsNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the node binary")
	}
	dir := t.TempDir()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := &crashRun{t: t, ctx: testContext(t), dir: dir, landed: map[string]int{}, rng: rand.New(rand.NewSource(seed)),
		blocks: buildCrashChain(t, dir, seed, 101+50, 101+20), next: 101 + 20}
	n := r.restart()

	// At the tip: a block whose file write fails.
	limitFileSize(t, n, 64<<10)
	failed := false
	for r.next < len(r.blocks) && !failed {
		// rpcclient retries a request whose server went away for many
		// seconds: the node's exit settles it first.
		res := make(chan error, 1)
		go func(i int) { res <- n.RPC.SubmitBlock(r.blocks[i], nil) }(r.next)
		select {
		case err := <-res:
			failed = err != nil
		case <-n.exited:
			failed = true
		}
		if !failed {
			r.next++
		}
	}
	if !failed {
		t.Fatal("every block was stored under the file size limit; raise the chain's size")
	}
	logged := waitExit(t, n)
	if n.exitErr == nil {
		t.Fatalf("the node exited without an error after a failed write:\n%s", logged)
	}
	if !strings.Contains(logged, "Database write failed") {
		t.Fatalf("no clear log line about the failed write:\n%s", logged)
	}
	t.Logf("stopped at block %d: %s", r.next+1, lastLine(logged, "Database write failed"))

	// Writes work again: the node resumes from its last commit.
	n = r.restart()
	for i := 0; i < 5; i++ {
		r.submit(n)
	}

	// While it shuts down: the flush of btcd's caches and of ffldb's
	// write cache fails. The limit is the journal's size, which the flush
	// appends to, whatever the size of the node's other files (the index's
	// base among them).
	limitFileSizeTo(t, n, metadataJournalSize(t, n))
	_ = n.cmd.Process.Signal(syscall.SIGINT)
	logged = waitExit(t, n)
	if n.exitErr == nil {
		t.Fatalf("the node exited without an error after its shutdown writes failed:\n%s", logged)
	}
	if !strings.Contains(logged, "Database write failed") && !strings.Contains(logged, "Close block database") {
		t.Fatalf("no clear log line about the failed writes:\n%s", logged)
	}
	t.Logf("shutdown: %s%s", lastLine(logged, "Database write failed"), lastLine(logged, "Close block database"))
	n = r.restart()
	if _, err := n.RPC.Generate(1); err != nil {
		t.Fatalf("generate after the restart: %v", err)
	}
	r.check(n)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
}

// lastLine returns the last log line containing s, or "".
func lastLine(logged, s string) string {
	i := strings.LastIndex(logged, s)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(logged[:i], "\n") + 1
	end := strings.Index(logged[i:], "\n")
	if end < 0 {
		return logged[start:]
	}
	return logged[start : i+end]
}

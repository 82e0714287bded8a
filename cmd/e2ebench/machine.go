package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/btcd-electrum/btcd-electrum/internal/hostile"
)

// The hostile benchmark compares a wallet's p99 with and without an
// attack, and on a virtual machine an idle CPU is halted: waking it takes
// the host's scheduler, up to milliseconds. A line echoed over loopback
// every 20 ms between two idle processes here took p99 1.1 to 10.9 ms per
// 20 s window, and 0.55 ms with the CPUs kept busy. Without the attack the
// CPUs idle, during it the attacker keeps them awake, so the wallet's
// unloaded p99 measured the host, and an attack could look cheaper than
// nothing. Two helpers make the windows comparable and say what the
// machine gives: spinners keep every CPU awake at the lowest priority,
// and an echo process measured beside the wallet is the machine's floor.

// helper is a child process of e2ebench that runs until its standard input
// closes (also when e2ebench itself dies).
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// line is the first line the helper wrote (the echo's address).
	line string
}

// startHelper starts e2ebench sub as a helper, at SCHED_IDLE when idle,
// and waits for its first line when wantLine.
func startHelper(self, sub string, idle, wantLine bool) (*helper, error) {
	cmd := exec.Command(self, sub)
	if idle {
		cmd = exec.Command("chrt", "--idle", "0", self, sub)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &helper{cmd: cmd, stdin: stdin}
	if wantLine {
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() {
			h.stop()
			return nil, fmt.Errorf("e2ebench %s wrote nothing: %v", sub, sc.Err())
		}
		h.line = sc.Text()
	}
	go io.Copy(io.Discard, stdout)
	return h, nil
}

// stop ends the helper.
func (h *helper) stop() {
	h.stdin.Close()
	done := make(chan struct{})
	go func() {
		h.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}

// stopHelpers stops each helper.
func stopHelpers(hs []*helper) {
	for _, h := range hs {
		h.stop()
	}
}

// startSpinners starts one spinner per CPU at SCHED_IDLE.
func startSpinners(self string) ([]*helper, error) {
	var hs []*helper
	for range runtime.NumCPU() {
		h, err := startHelper(self, "hostile-spin", true, false)
		if err != nil {
			stopHelpers(hs)
			return nil, err
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// runHostileSpin keeps one CPU out of its idle state until standard input
// closes. It yields at every turn: run at SCHED_IDLE, it gives way at once
// to any other process, the attacker (also SCHED_IDLE) included.
func runHostileSpin() error {
	runtime.GOMAXPROCS(1)
	var stop atomic.Bool
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	for !stop.Load() {
		syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		// The loop spends its time in the system call, where the
		// runtime cannot preempt it: let the goroutine that reads
		// standard input run.
		runtime.Gosched()
	}
	return nil
}

// runHostileEcho serves hostile.ServeEcho on a loopback port, writes its
// address, and runs until standard input closes.
func runHostileEcho() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr().String())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		l.Close()
	}()
	if err := hostile.ServeEcho(l); !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// measureWindow runs the wallet for d and, beside it, the floor probe
// against the echo at echoAddr (none when empty).
func measureWindow(g *hostile.GoodClient, echoAddr string, d, interval time.Duration) (wallet, floor hostile.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	if echoAddr != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			floor = hostile.Floor(ctx, echoAddr, interval)
		}()
	}
	wallet = g.Run(ctx, interval, 0)
	wg.Wait()
	return wallet, floor
}

// What a window cost the machine outside the wallet's own requests. A
// wallet's request waits, beyond the node's work, for the node's reading
// thread to get a CPU, and for the wallet's own thread to get one when the
// answer comes. On the project's 2-core virtual machine (a kernel that does
// not preempt in kernel mode, 250 Hz ticks) those waits, not the node's
// work, were what attacks added to the wallet's p99 (docs/RELIABILITY.md,
// "Hostile clients", item 14). The counters say who held the CPUs: the
// node's threads' time waiting for one, and the kernel's own threads
// (kdamond, the virtual machine's DAMON memory reclaim, held a CPU for
// 3 to 4.5 ms at a time, twice a second).

// machineSnap is a moment's counters.
type machineSnap struct {
	at time.Time
	// nodeWait and selfWait are the seconds the node's and this process's
	// threads spent runnable, waiting for a CPU (schedstat).
	nodeWait, selfWait float64
	// kernel and damon are the CPU seconds of every kernel thread, and of
	// kdamond's.
	kernel, damon float64
}

// machineUse is a window's share of the counters, per second of it.
type machineUse struct {
	// NodeWait and WalletWait are milliseconds per second: the node's
	// threads', and the benchmark's own (the wallet's), waiting for a
	// CPU.
	NodeWait   float64 `json:"node_cpu_wait_ms_per_s"`
	WalletWait float64 `json:"wallet_cpu_wait_ms_per_s"`
	// KernelCPU and DamonCPU are cores: every kernel thread (softirq
	// threads, workers, kdamond), and kdamond alone.
	KernelCPU float64 `json:"kernel_threads_cpu_cores"`
	DamonCPU  float64 `json:"kdamond_cpu_cores"`
}

// snapMachine reads the counters for the node's process nodePID.
func snapMachine(nodePID int) machineSnap {
	s := machineSnap{at: time.Now(), nodeWait: threadsWait(nodePID), selfWait: threadsWait(os.Getpid())}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		raw, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(raw)
		if !procIsKernelThread(st) {
			continue
		}
		cpu := parseProcStatCPU(st)
		s.kernel += cpu
		if strings.Contains(st, "(kdamond") {
			s.damon += cpu
		}
	}
	return s
}

// to returns the share of the window from a to b.
func (a machineSnap) to(b machineSnap) machineUse {
	wall := b.at.Sub(a.at).Seconds()
	if wall <= 0 {
		return machineUse{}
	}
	return machineUse{
		NodeWait:   (b.nodeWait - a.nodeWait) / wall * 1e3,
		WalletWait: (b.selfWait - a.selfWait) / wall * 1e3,
		KernelCPU:  (b.kernel - a.kernel) / wall,
		DamonCPU:   max(0, b.damon-a.damon) / wall,
	}
}

// threadsWait returns the seconds pid's threads have spent runnable but
// not running (the second field of /proc/PID/task/TID/schedstat).
func threadsWait(pid int) float64 {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var ns int64
	for _, t := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(raw)); len(f) >= 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				ns += v
			}
		}
	}
	return float64(ns) / 1e9
}

// procIsKernelThread reports whether a /proc/PID/stat line is a kernel
// thread's (PF_KTHREAD in its flags, the ninth field).
func procIsKernelThread(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 7 {
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&0x00200000 != 0
}

// damonState returns the state of the machine's DAMON monitors ("on",
// "off"), or "none" when it has none.
func damonState() string {
	paths, _ := filepath.Glob("/sys/kernel/mm/damon/admin/kdamonds/*/state")
	var states []string
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			states = append(states, strings.TrimSpace(string(b)))
		}
	}
	if len(states) == 0 {
		return "none"
	}
	return strings.Join(states, ",")
}

// add adds u times w to m.
func (m *machineUse) add(u machineUse, w float64) {
	m.NodeWait += u.NodeWait * w
	m.WalletWait += u.WalletWait * w
	m.KernelCPU += u.KernelCPU * w
	m.DamonCPU += u.DamonCPU * w
}

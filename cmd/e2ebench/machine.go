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
	"runtime"
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

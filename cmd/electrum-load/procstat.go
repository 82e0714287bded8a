package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat CPU
// times; 100 on every Linux architecture Go supports.
const clockTicks = 100

// rssSampler reads a process's resident memory (VmRSS of
// /proc/PID/status) every interval and keeps the peak since the last
// reset.
type rssSampler struct {
	pid      int
	interval time.Duration

	mu   sync.Mutex
	last int64 // KiB
	peak int64 // KiB since resetPeak
	err  error

	stop chan struct{}
	done chan struct{}
}

// startRSS checks that the process can be read and starts sampling.
func startRSS(pid int, interval time.Duration) (*rssSampler, error) {
	kib, err := readRSS(pid)
	if err != nil {
		return nil, err
	}
	s := &rssSampler{pid: pid, interval: interval, last: kib, peak: kib,
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.loop()
	return s, nil
}

func (s *rssSampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

// sample reads the RSS once and returns it (KiB).
func (s *rssSampler) sample() int64 {
	kib, err := readRSS(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return s.last
	}
	s.last = kib
	if kib > s.peak {
		s.peak = kib
	}
	return kib
}

// now samples immediately and returns the RSS in KiB.
func (s *rssSampler) now() int64 { return s.sample() }

// resetPeak starts a new peak from the current RSS.
func (s *rssSampler) resetPeak() {
	kib := s.sample()
	s.mu.Lock()
	s.peak = kib
	s.mu.Unlock()
}

// peakKiB returns the peak since the last reset, sampling once more.
func (s *rssSampler) peakKiB() int64 {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// lastErr is the last read error (the process may have exited).
func (s *rssSampler) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *rssSampler) close() {
	close(s.stop)
	<-s.done
}

// readRSS returns VmRSS of /proc/PID/status in KiB.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "123456 kB"
		if len(f) == 0 {
			break
		}
		return strconv.ParseInt(string(f[0]), 10, 64)
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// processCPU returns the user+system CPU time the process has used, from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// fields after it start at state (field 3).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	// utime and stime are fields 14 and 15: f[11] and f[12].
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// selfCPU returns the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

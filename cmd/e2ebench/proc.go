package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// sampleEvery is the interval of the resident-memory sampler.
const sampleEvery = 100 * time.Millisecond

// proc is a node process under measurement: its output goes to a log file
// and, line by line, to onLine; its resident memory is sampled every
// sampleEvery.
type proc struct {
	cmd   *exec.Cmd
	start time.Time
	log   *os.File

	mu      sync.Mutex
	onLine  func(t time.Duration, line string)
	rssKB   int64 // latest sample
	peakKB  int64
	samples []rssSample

	outDone chan struct{}
	exited  chan struct{}
	waitErr error
	stop    chan struct{}
}

// rssSample is one resident-memory sample.
type rssSample struct {
	T     time.Duration
	RSSKB int64
}

var (
	childrenMu sync.Mutex
	children   = map[*proc]bool{}
)

// startProc starts bin with args, its output written to logPath. onLine is
// called for every output line, from one goroutine, with the time since
// start.
func startProc(bin string, args []string, logPath string, onLine func(time.Duration, string)) (*proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	// Its own process group: a terminal's Ctrl-C reaches e2ebench, which
	// stops the node itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &proc{cmd: cmd, log: lf, onLine: onLine, outDone: make(chan struct{}),
		exited: make(chan struct{}), stop: make(chan struct{})}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	childrenMu.Lock()
	children[p] = true
	childrenMu.Unlock()
	go func() {
		p.waitErr = cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	go p.readOutput(pr)
	go p.sample()
	return p, nil
}

// readOutput copies the process output to the log file and hands every line
// to onLine.
func (p *proc) readOutput(r io.Reader) {
	defer close(p.outDone)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			p.log.WriteString(line)
			if p.onLine != nil {
				p.onLine(time.Since(p.start), strings.TrimRight(line, "\r\n"))
			}
		}
		if err != nil {
			return
		}
	}
}

// sample reads the process's resident memory every sampleEvery until it
// exits or is being stopped.
func (p *proc) sample() {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		p.takeSample()
		select {
		case <-t.C:
		case <-p.exited:
			return
		case <-p.stop:
			return
		}
	}
}

func (p *proc) takeSample() {
	st, err := readProcStatus(p.cmd.Process.Pid)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rss := st["VmRSS"]
	p.rssKB = rss
	if rss > p.peakKB {
		p.peakKB = rss
	}
	p.samples = append(p.samples, rssSample{T: time.Since(p.start), RSSKB: rss})
}

// peakSince returns the highest resident-memory sample taken since t
// (sampling once more now).
func (p *proc) peakSince(t time.Time) int64 {
	p.takeSample()
	since := t.Sub(p.start)
	p.mu.Lock()
	defer p.mu.Unlock()
	var peak int64
	for i := len(p.samples) - 1; i >= 0 && p.samples[i].T >= since; i-- {
		peak = max(peak, p.samples[i].RSSKB)
	}
	return peak
}

// RSSKB returns the latest resident-memory sample.
func (p *proc) RSSKB() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rssKB
}

// PeakKB returns the highest resident-memory sample.
func (p *proc) PeakKB() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peakKB
}

// HWMKB returns the kernel's peak resident memory of the process (VmHWM);
// it must be read before the process exits.
func (p *proc) HWMKB() int64 {
	st, err := readProcStatus(p.cmd.Process.Pid)
	if err != nil {
		return 0
	}
	return st["VmHWM"]
}

// CPUSeconds returns the CPU time (user and system) the process has used so
// far: with the wall time, how much of the machine a configuration takes,
// which stays comparable when other work shares the machine.
func (p *proc) CPUSeconds() float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	return parseProcStatCPU(string(raw))
}

// parseProcStatCPU returns utime plus stime of a /proc/PID/stat line, in
// seconds (the kernel counts them in USER_HZ ticks, 100 per second on
// Linux). The command name, in parentheses, may hold spaces: fields are
// counted after its closing parenthesis.
func parseProcStatCPU(s string) float64 {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// After the name: state(3) ppid ... utime is field 14, stime 15.
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return float64(ut+st) / 100
}

// Exited is closed when the process has exited.
func (p *proc) Exited() <-chan struct{} { return p.exited }

// Stop interrupts the process (SIGINT, as Ctrl-C), waits for it to exit and
// returns how long the shutdown took. After timeout it is killed.
func (p *proc) Stop(timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	select {
	case <-p.exited:
	default:
		close(p.stop)
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(timeout):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.finish()
			return time.Since(t0), fmt.Errorf("%s did not stop within %v after SIGINT; killed", filepath.Base(p.cmd.Path), timeout)
		}
	}
	p.finish()
	took := time.Since(t0)
	var ee *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &ee) {
		return took, p.waitErr
	}
	return took, nil
}

func (p *proc) finish() {
	<-p.outDone
	p.log.Close()
	childrenMu.Lock()
	delete(children, p)
	childrenMu.Unlock()
}

// ExitError describes how the process ended, for a process that exited
// before it was asked to.
func (p *proc) ExitError() error {
	if p.waitErr != nil {
		return fmt.Errorf("%s exited early: %v (log %s)", filepath.Base(p.cmd.Path), p.waitErr, p.log.Name())
	}
	return fmt.Errorf("%s exited early (log %s)", filepath.Base(p.cmd.Path), p.log.Name())
}

// stopAllChildren interrupts every running node and waits for them.
func stopAllChildren() {
	childrenMu.Lock()
	ps := make([]*proc, 0, len(children))
	for p := range children {
		ps = append(ps, p)
	}
	childrenMu.Unlock()
	for _, p := range ps {
		p.Stop(2 * time.Minute)
	}
}

// readProcStatus returns the kB fields of /proc/PID/status (VmRSS, VmHWM, ...).
func readProcStatus(pid int) (map[string]int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	return parseProcStatus(string(raw)), nil
}

// parseProcStatus parses the "Name:   value kB" lines of a status file.
func parseProcStatus(s string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				out[k] = n
			}
		}
	}
	return out
}

// diskUsage returns the bytes a directory tree occupies on disk, as du
// counts them (allocated blocks).
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	return total, err
}

// copyTree copies the directory src to dst (which must not exist), regular
// files and directories only; src is only read.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		default:
			return nil
		}
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// compactedSize compacts the block database's metadata (leveldb, opened
// with ffldb's options) and returns the database's size on disk. Plain du
// depends on when leveldb last compacted: a run that triggers compaction of
// the chain's own rows can even shrink the directory. Compacted, the
// difference between two copies is the rows they differ by.
func compactedSize(dbPath string) (int64, error) {
	open := func() (*leveldb.DB, error) {
		ldb, err := leveldb.OpenFile(filepath.Join(dbPath, "metadata"), &opt.Options{
			ErrorIfMissing: true,
			Strict:         opt.DefaultStrict,
			Compression:    opt.NoCompression,
			Filter:         filter.NewBloomFilter(10),
		})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", dbPath, err)
		}
		return ldb, nil
	}
	ldb, err := open()
	if err != nil {
		return 0, err
	}
	if err := ldb.CompactRange(util.Range{}); err != nil {
		ldb.Close()
		return 0, fmt.Errorf("compact %s: %w", dbPath, err)
	}
	if err := ldb.Close(); err != nil {
		return 0, err
	}
	// leveldb removes the tables a compaction made obsolete in the
	// background; opening the database again removes any left over.
	if ldb, err = open(); err != nil {
		return 0, err
	}
	if err := ldb.Close(); err != nil {
		return 0, err
	}
	return diskUsage(dbPath)
}

// compactedLevelDB compacts the leveldb database in dir fully, as
// compactedSize does the chain's, and returns its size on disk.
func compactedLevelDB(dir string) (int64, error) {
	for i := 0; i < 2; i++ {
		ldb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true, Compression: opt.NoCompression})
		if err != nil {
			return 0, fmt.Errorf("open %s: %w", dir, err)
		}
		if i == 0 {
			if err := ldb.CompactRange(util.Range{}); err != nil {
				ldb.Close()
				return 0, fmt.Errorf("compact %s: %w", dir, err)
			}
		}
		// Opened a second time: leveldb removes the tables the
		// compaction made obsolete.
		if err := ldb.Close(); err != nil {
			return 0, err
		}
	}
	return diskUsage(dir)
}

// Pid returns the process id of the node.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

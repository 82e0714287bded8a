package electrum

import (
	"sync"
	"time"
)

// workerIdle is how long a worker goroutine waits for more work before it
// exits.
const workerIdle = 10 * time.Second

// workers runs request work on goroutines that outlive one request. A
// goroutine starts with a small stack and grows it, by copying, to the depth
// of an index read; a new goroutine per request paid that copy on every
// request, a tenth of a get_balance's CPU. A worker keeps its grown stack
// until it has been idle for workerIdle. There is no bound: the sessions'
// request slots and the work gate bound the work, and a worker is started
// whenever none is idle.
type workers struct {
	idle chan func()     // receives work only while a worker waits
	quit <-chan struct{} // closed when the server stops: idle workers exit
	// busy counts the work running: the server's, which Shutdown waits
	// for, as requests read the index the node closes after it.
	busy *sync.WaitGroup
}

func newWorkers(quit <-chan struct{}, busy *sync.WaitGroup) *workers {
	return &workers{idle: make(chan func()), quit: quit, busy: busy}
}

// run runs fn on an idle worker, or on a new one. Its caller (a session)
// is itself counted in busy.
func (w *workers) run(fn func()) {
	w.busy.Add(1)
	select {
	case w.idle <- fn:
	default:
		go w.loop(fn)
	}
}

// loop runs fn and then whatever run hands it, until it has been idle for
// workerIdle or the server stops.
func (w *workers) loop(fn func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		fn()
		w.busy.Done()
		fn = nil // let fn's captures go while idle
		t.Reset(workerIdle)
		select {
		case fn = <-w.idle:
		case <-t.C:
			return
		case <-w.quit:
			return
		}
	}
}

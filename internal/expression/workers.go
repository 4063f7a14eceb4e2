// Copyright 2026 The KubeStellar Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package expression

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// workerEnv names the environment variable that makes a process a worker
// (ServeWorker); its value is the worker's workerConfig in JSON.
const workerEnv = "STAGER_CEL_WORKER"

// workerConfig is what a worker needs to evaluate as its engine would.
type workerConfig struct {
	CostLimit          uint64
	EstimatedCostLimit uint64
	EvalTimeout        time.Duration
	CacheSize          int
	ConversionBytes    uint64
	// Memory is how much the worker's address space may grow once it is
	// ready.
	Memory uint64
	// RetireAfter, when above 0, retires the worker after that many
	// answers (Isolation.retireAfter).
	RetireAfter int
}

// workerReady is a worker's first message.
type workerReady struct {
	Ready bool
	// PID is the worker's process ID, for the logs of tests.
	PID int
}

// workerPool holds an engine's workers: iso.Workers that stay, and, while
// every one of them is busy, up to iso.MaxWorkers in all, each of the extra
// ones ended once it has served its evaluation unless another evaluation
// waits for one. So evaluations that hold workers until their deadline (a
// hostile policy's) delay the others by at most overflowAfter and a
// worker's start while the pool can grow. Every change of the pool (a
// worker freed, ended or started, the pool closed) wakes the evaluations
// waiting, which look again.
type workerPool struct {
	iso    Isolation
	config workerConfig

	mu     sync.Mutex
	closed bool
	// idle holds the ready workers that serve no evaluation.
	idle []*worker
	// live counts the workers started or starting; waiting, the
	// evaluations waiting for one.
	live, waiting int
	all           map[*worker]struct{}
	// changed is closed, and replaced, at every change of the pool.
	changed chan struct{}
	// started and retired count the workers started and those that ended
	// past their memory (retiring), for tests.
	started, retired atomic.Int64
}

// overflowAfter is how long an evaluation waits for a free worker before it
// starts an extra one, if the pool may grow.
const overflowAfter = 50 * time.Millisecond

// newWorkerPool returns a pool of iso.Workers workers, started in the
// background.
func newWorkerPool(iso Isolation, c workerConfig) *workerPool {
	p := &workerPool{iso: iso, config: c, all: map[*worker]struct{}{}, changed: make(chan struct{})}
	p.live = iso.Workers
	for range iso.Workers {
		go func() {
			w, err := p.start()
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.live--
			} else {
				p.idle = append(p.idle, w)
			}
			p.wake()
		}()
	}
	return p
}

// wake tells the waiting evaluations that the pool changed; p.mu is held.
func (p *workerPool) wake() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// acquire returns a free worker, or one it starts, and how long it waited
// for it. A fresh one has answered no evaluation: a free worker that has
// is retired for one started in its place.
func (p *workerPool) acquire(fresh bool) (*worker, time.Duration, error) {
	start := time.Now()
	overflowAt, giveUpAt := start.Add(overflowAfter), start.Add(p.iso.Wait)
	p.mu.Lock()
	p.waiting++
	defer func() {
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, time.Since(start), errors.New("the expression engine is closed")
		}
		for len(p.idle) > 0 {
			w := p.idle[len(p.idle)-1]
			p.idle = p.idle[:len(p.idle)-1]
			if w.exited() {
				// It died idle (the kernel's out-of-memory killer
				// prefers workers): no evaluation's doing.
				p.live--
				delete(p.all, w)
				continue
			}
			if fresh && w.evaluations > 0 {
				p.retired.Add(1)
				p.live--
				delete(p.all, w)
				w.closing.Store(true)
				w.kill()
				break
			}
			p.mu.Unlock()
			return w, time.Since(start), nil
		}
		now := time.Now()
		if p.live < p.iso.Workers || (!now.Before(overflowAt) && p.live < p.iso.MaxWorkers) {
			p.live++
			p.mu.Unlock()
			w, err := p.start()
			if err != nil {
				p.mu.Lock()
				p.live--
				p.wake()
				p.mu.Unlock()
				return nil, time.Since(start), err
			}
			return w, time.Since(start), nil
		}
		if !now.Before(giveUpAt) {
			p.mu.Unlock()
			return nil, time.Since(start), fmt.Errorf("no evaluation worker was free within %s", p.iso.Wait)
		}
		next := giveUpAt
		if now.Before(overflowAt) {
			next = overflowAt
		}
		changed := p.changed
		p.mu.Unlock()
		timer := time.NewTimer(time.Until(next))
		select {
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
		p.mu.Lock()
	}
}

// release makes w free again. It ends w instead if the pool has more than
// the workers that stay and no evaluation waits. A worker that ended is
// forgotten, and replaced by the next acquire.
func (p *workerPool) release(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case w.exited() || p.closed:
		p.live--
		delete(p.all, w)
	case w.retiring:
		p.retired.Add(1)
		p.live--
		delete(p.all, w)
		w.closing.Store(true)
	case p.live > p.iso.Workers && p.waiting == 0:
		p.live--
		delete(p.all, w)
		w.closing.Store(true)
		w.kill()
	default:
		p.idle = append(p.idle, w)
	}
	p.wake()
}

// start starts a worker and waits until it is ready.
func (p *workerPool) start() (*worker, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errors.New("the expression engine is closed")
	}
	w, err := startWorker(p.config, p.iso.Wait, p.iso.OnWorkerStopped)
	if err != nil {
		return nil, fmt.Errorf("starting an evaluation worker: %w", err)
	}
	p.started.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		w.closing.Store(true)
		w.kill()
		return nil, errors.New("the expression engine is closed")
	}
	p.all[w] = struct{}{}
	return w, nil
}

// close kills every worker; evaluations after it fail.
func (p *workerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for w := range p.all {
		w.closing.Store(true)
		w.kill()
	}
	p.all = map[*worker]struct{}{}
	p.idle = nil
	p.wake()
}

// worker is one worker process and its pipes.
type worker struct {
	cmd       *exec.Cmd
	requests  *bufio.Writer
	encoder   *json.Encoder
	responses chan evalResponse
	// done is closed once the process has ended and been waited for.
	done   chan struct{}
	stderr *firstBytes
	memory uint64
	// killedBy is why the pool killed the worker ("timeout"), if it did.
	killedBy string
	// retiring is set when the worker said it ends after its answer.
	retiring bool
	// evaluations counts the evaluations it answered: a worker that has
	// answered none is fresh.
	evaluations int
	// closing is set when the engine closes, so that the worker's end is
	// not reported.
	closing   atomic.Bool
	onStopped func(why string)
}

// startWorker starts a worker process with config c and waits up to wait
// for it to be ready.
func startWorker(c workerConfig, wait time.Duration, onStopped func(string)) (*worker, error) {
	self, err := runningBinary()
	if err != nil {
		return nil, fmt.Errorf("finding the running binary: %w", err)
	}
	config, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW)
		return nil, err
	}
	w := &worker{
		responses: make(chan evalResponse, 1),
		done:      make(chan struct{}),
		stderr:    &firstBytes{max: 4096},
		memory:    c.Memory,
		onStopped: onStopped,
	}
	cmd := exec.Command(self)
	cmd.Env = append(workerEnviron(), workerEnv+"="+string(config), "GOMAXPROCS=1")
	cmd.ExtraFiles = []*os.File{reqR, respW} // fds 3 and 4
	cmd.Stderr = w.stderr
	cmd.SysProcAttr = workerSysProcAttr()
	if err := cmd.Start(); err != nil {
		closeAll(reqR, reqW, respR, respW)
		return nil, fmt.Errorf("running %s as a worker: %w", self, err)
	}
	// The worker's ends are the worker's now.
	closeAll(reqR, respW)
	w.cmd = cmd
	w.requests = bufio.NewWriter(reqW)
	w.encoder = json.NewEncoder(w.requests)
	ready := make(chan error, 1)
	go func() {
		defer closeAll(respR)
		decoder := json.NewDecoder(bufio.NewReader(respR))
		var hello workerReady
		if err := decoder.Decode(&hello); err != nil || !hello.Ready {
			ready <- fmt.Errorf("the worker did not say it was ready: %w", err)
			return
		}
		ready <- nil
		for {
			var res evalResponse
			if err := decoder.Decode(&res); err != nil {
				close(w.responses)
				return
			}
			w.responses <- res
		}
	}()
	go func() {
		_ = cmd.Wait()
		closeAll(reqW)
		close(w.done)
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err == nil {
			return w, nil
		}
		w.kill()
		return nil, fmt.Errorf("%w (%s)", err, w.exitDetail())
	case <-timer.C:
		w.kill()
		return nil, fmt.Errorf("the worker was not ready within %s", wait)
	}
}

// closeAll closes files whose closing can fail only if they were closed.
func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// workerEnviron is this process's environment without the variables that
// would configure the worker's runtime or make it something else.
func workerEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, workerEnv+"=") || strings.HasPrefix(kv, "GOMAXPROCS=") ||
			strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GOGC=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// errNotSent says that a request never reached its worker, which had ended:
// the evaluation is not the worker's end, and may be sent to another.
var errNotSent = errors.New("the worker had ended before the request reached it")

// evaluate sends req and returns the worker's response, or why the worker
// ended instead: killed at killAt, out of memory, or exited; or errNotSent.
func (w *worker) evaluate(req *evalRequest, killAt time.Time) (evalResponse, *workerStop, error) {
	if err := w.encoder.Encode(req); err != nil {
		w.kill()
		return evalResponse{}, nil, errNotSent
	}
	if err := w.requests.Flush(); err != nil {
		w.kill()
		return evalResponse{}, nil, errNotSent
	}
	timer := time.NewTimer(time.Until(killAt))
	defer timer.Stop()
	select {
	case res, ok := <-w.responses:
		if ok {
			if !res.NeedStatus {
				w.evaluations++
			}
			return res, nil, nil
		}
	case <-timer.C:
		w.killedBy = "timeout"
	}
	// Its answers ended or it is late: either way it goes.
	w.kill()
	<-w.done
	stop := &workerStop{why: w.why(), detail: w.exitDetail(), memory: w.memory}
	if w.onStopped != nil && !w.closing.Load() {
		w.onStopped(stop.why)
	}
	return evalResponse{}, stop, nil
}

// why says why the worker ended: the pool killed it at its deadline, it ran
// out of memory (the Go runtime's fatal error when its address space is
// used up, or a kill by the kernel's out-of-memory killer, which prefers
// workers: see setWorkerLimits), or it exited on its own.
func (w *worker) why() string {
	if w.killedBy != "" {
		return w.killedBy
	}
	if w.closing.Load() {
		return "closed"
	}
	words := w.stderr.String()
	if strings.Contains(words, "out of memory") || strings.Contains(words, "cannot allocate memory") {
		return "memory"
	}
	if status, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && status.Signaled() && status.Signal() == syscall.SIGKILL {
		return "memory"
	}
	return "exited"
}

// exitDetail is the worker's exit status and the first line of its last
// words.
func (w *worker) exitDetail() string {
	select {
	case <-w.done:
	case <-time.After(time.Second):
		return "still running"
	}
	detail := w.cmd.ProcessState.String()
	for _, line := range strings.Split(w.stderr.String(), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "fatal error") || strings.HasPrefix(line, "panic") {
			return detail + ": " + line
		}
	}
	return detail
}

func (w *worker) kill() {
	if w.cmd != nil && w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
	}
}

// exited reports whether the worker process has ended.
func (w *worker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// firstBytes keeps the first max bytes written to it: a worker writes
// nothing but its last words, and the Go runtime's fatal error comes first,
// before the goroutines' stacks.
type firstBytes struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *firstBytes) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *firstBytes) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

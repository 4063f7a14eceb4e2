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

// Package process runs the programs of the test stacks (the stager binary,
// KubeStellar's controllers, OCM's work agent, kwok, the WECs'
// kube-controller-manager and kube-scheduler, kcp, Prometheus) as child
// processes: each logs to a file, tells when it is
// ready by a line it logs, and stops with SIGTERM before SIGKILL.
package process

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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubestellar/workload-stager/test/framework"
)

const (
	// PortInUse is in the log of a process whose port was taken meanwhile.
	PortInUse = "address already in use"
	// TailLines is how many of its last log lines a failing process's
	// error quotes.
	TailLines = 15
	// DefaultStopTimeout is how long a process gets after SIGTERM before
	// SIGKILL, unless Spec.StopTimeout says otherwise.
	DefaultStopTimeout = 10 * time.Second
)

// Spec says what to run.
type Spec struct {
	// Name names the process in errors, such as "kwok of dev1".
	Name string
	// Binary and Args are the command line.
	Binary string
	Args   []string
	// Env, when not nil, is added to this process's environment.
	Env []string
	// LogPath receives the command line and the process's output (appended).
	LogPath string
	// Ready is called with each line the process logs, in order, until it
	// returns true: then the process is ready. Nil: ready once started.
	Ready func(line string) bool
	// TermTwice sends a second SIGTERM 300 ms after the first, for programs
	// that cancel their work on the first and exit on the second.
	TermTwice bool
	// StopTimeout is how long the process gets after SIGTERM before
	// SIGKILL. Default: DefaultStopTimeout.
	StopTimeout time.Duration
}

// Process is a running child process started by Start.
type Process struct {
	spec Spec
	cmd  *exec.Cmd

	// done is closed once the process has exited and its output is drained.
	done    chan struct{}
	exitErr error
	// ready is closed when Spec.Ready has returned true.
	ready chan struct{}

	mu        sync.Mutex
	tail      []string
	portInUse bool

	stopOnce sync.Once
	stopErr  error
}

// FreeAddress returns a loopback address with a port nobody listens on.
// A process given more than one should get them from FreeAddresses.
func FreeAddress() (string, error) {
	addrs, err := FreeAddresses(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// FreeAddresses returns n loopback addresses with distinct ports nobody
// listens on. It holds each port until it has found them all: ports found
// one at a time may repeat once the first is closed, and then the second
// of a process's servers fails to listen.
func FreeAddresses(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer func() { _ = l.Close() }()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// Start starts the process, appending its output to spec.LogPath. The
// process gets its own process group and, on Linux, is killed if this
// process dies without stopping it.
func Start(spec Spec) (*Process, error) {
	if spec.StopTimeout <= 0 {
		spec.StopTimeout = DefaultStopTimeout
	}
	logFile, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s, %s: %w", spec.Name, spec.LogPath, err)
	}
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().Format(time.RFC3339), spec.Binary, strings.Join(spec.Args, " "))
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("making a pipe: %w", err)
	}

	cmd := exec.Command(spec.Binary, spec.Args...)
	cmd.Stdout, cmd.Stderr = pw, pw
	if spec.Env != nil {
		cmd.Env = append(os.Environ(), spec.Env...)
	}
	cmd.SysProcAttr = framework.ProcessAttributes()
	p := &Process{spec: spec, cmd: cmd, done: make(chan struct{}), ready: make(chan struct{})}
	if spec.Ready == nil {
		close(p.ready)
	}

	// The process is started from a goroutine locked to its OS thread, which
	// stays alive (waiting for the process) as long as the process runs:
	// on Linux the parent-death signal fires when the thread that forked the
	// child exits, not only when this process does.
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		_ = pr.Close()
		_ = pw.Close()
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", spec.Name, spec.Binary, err)
	}
	_ = pw.Close() // the child holds the write end now

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer func() { _ = pr.Close() }()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		ready := spec.Ready == nil
		for sc.Scan() {
			line := sc.Text()
			_, _ = logFile.WriteString(line + "\n")
			p.mu.Lock()
			p.portInUse = p.portInUse || strings.Contains(line, PortInUse)
			p.tail = append(p.tail, line)
			if len(p.tail) > TailLines {
				p.tail = p.tail[len(p.tail)-TailLines:]
			}
			p.mu.Unlock()
			if !ready && spec.Ready(line) {
				ready = true
				close(p.ready)
			}
		}
		if err := sc.Err(); err != nil {
			// A line too long to scan: keep the pipe drained, or the
			// process dies of SIGPIPE on its next write.
			fmt.Fprintf(logFile, "=== reading the output stopped (%v); the rest is copied as is\n", err)
			_, _ = io.Copy(logFile, pr)
		}
	}()
	go func() {
		err := <-exited
		<-drained
		_ = logFile.Close()
		p.exitErr = err
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath returns the path of the process's log.
func (p *Process) LogPath() string { return p.spec.LogPath }

// Tail returns the last lines the process logged.
func (p *Process) Tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// PortTaken says whether the process logged that a port was taken.
func (p *Process) PortTaken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.portInUse
}

// WaitReady waits until the process is ready. It fails if the process exits
// first or ctx ends.
func (p *Process) WaitReady(ctx context.Context) error {
	select {
	case <-p.ready:
		return nil
	case <-p.done:
		exitErr := p.exitErr
		if exitErr == nil {
			exitErr = errors.New("exit status 0")
		}
		return fmt.Errorf("%s exited (%w) before it was ready; log %s ends with:\n%s",
			p.spec.Name, exitErr, p.spec.LogPath, p.Tail())
	case <-ctx.Done():
		return fmt.Errorf("%s is not ready (%w); log %s ends with:\n%s",
			p.spec.Name, context.Cause(ctx), p.spec.LogPath, p.Tail())
	}
}

// Exited reports, without blocking, whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop ends the process and waits for it: SIGTERM (twice when
// Spec.TermTwice), then SIGKILL after Spec.StopTimeout. Calling Stop again is
// harmless.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		if p.Exited() {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		if p.spec.TermTwice {
			select {
			case <-p.done:
				return
			case <-time.After(300 * time.Millisecond):
			}
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-p.done:
			return
		case <-time.After(p.spec.StopTimeout):
		}
		if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			p.stopErr = fmt.Errorf("killing %s (pid %d): %w", p.spec.Name, p.Pid(), err)
		}
		select {
		case <-p.done:
		case <-time.After(p.spec.StopTimeout):
			p.stopErr = errors.Join(p.stopErr, fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.spec.Name, p.Pid()))
		}
	})
	return p.stopErr
}

// Name returns the process's name (Spec.Name).
func (p *Process) Name() string { return p.spec.Name }

// Kill kills the process with SIGKILL, as a crash would, and waits until it
// has exited and its output is drained.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s (pid %d): %w", p.spec.Name, p.Pid(), err)
	}
	<-p.done
	return nil
}

// Wait waits until the process exits or ctx ends.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flag returns the value of a --name=value argument the process was started
// with, or "" when it has none.
func (p *Process) Flag(name string) string { return FlagValue(p.spec.Args, name) }

// FlagValue returns the value of a --name=value argument in args, or "" when
// there is none.
func FlagValue(args []string, name string) string {
	prefix := "--" + name + "="
	for _, arg := range args {
		if value, ok := strings.CutPrefix(arg, prefix); ok {
			return value
		}
	}
	return ""
}

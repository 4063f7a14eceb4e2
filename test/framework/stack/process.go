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

package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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
	// readyMarker is logged once by each of the two controllers of
	// KubeStellar's controller-manager (binding, then status) when its
	// workers run; the status controller logs it only after it has received
	// the binding controller's listers.
	readyMarker = "Started workers"
	// readyMarkers is how many readyMarker lines mean "ready".
	readyMarkers = 2
	// portInUse is in the log (and panic message) of a controller-manager
	// whose metrics, health or pprof port was taken meanwhile.
	portInUse = "address already in use"
	// tailLines is how many of its last log lines a failing
	// controller-manager's error quotes.
	tailLines = 15
)

// controllerManager is one running KubeStellar controller-manager process.
type controllerManager struct {
	wds     string
	logPath string
	cmd     *exec.Cmd

	// done is closed once the process has exited and its output is drained.
	done    chan struct{}
	exitErr error

	// ready is closed when the readyMarkers lines have been logged.
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

// startControllerManager starts KubeStellar's controller-manager for one WDS
// and one ITS, with the hosting space's kubeconfig and free loopback ports,
// appending its output to logPath. The process gets its own process group
// and, on Linux, is killed if this process dies without stopping it.
func startControllerManager(binary, hostingKubeconfig, wds, its, logPath string, extraArgs []string) (*controllerManager, error) {
	addrs, err := FreeAddresses(3)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + hostingKubeconfig,
		"--wds-name=" + wds,
		"--its-name=" + its,
		"--metrics-bind-address=" + addrs[0],
		"--health-probe-bind-address=" + addrs[1],
		"--pprof-bind-address=" + addrs[2],
	}, extraArgs...)

	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the controller-manager log %s: %w", logPath, err)
	}
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().Format(time.RFC3339), binary, strings.Join(args, " "))
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("making a pipe: %w", err)
	}

	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = framework.ProcessAttributes()
	cm := &controllerManager{wds: wds, logPath: logPath, cmd: cmd, done: make(chan struct{}), ready: make(chan struct{})}

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
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	_ = pw.Close() // the child holds the write end now

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer func() { _ = pr.Close() }()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		seen := 0
		for sc.Scan() {
			line := sc.Text()
			_, _ = logFile.WriteString(line + "\n")
			cm.mu.Lock()
			cm.portInUse = cm.portInUse || strings.Contains(line, portInUse)
			cm.tail = append(cm.tail, line)
			if len(cm.tail) > tailLines {
				cm.tail = cm.tail[len(cm.tail)-tailLines:]
			}
			cm.mu.Unlock()
			if strings.Contains(line, readyMarker) {
				if seen++; seen == readyMarkers {
					close(cm.ready)
				}
			}
		}
	}()
	go func() {
		err := <-exited
		<-drained
		_ = logFile.Close()
		cm.exitErr = err
		close(cm.done)
	}()
	return cm, nil
}

// logTail returns the last lines the process logged.
func (cm *controllerManager) logTail() string {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return strings.Join(cm.tail, "\n")
}

// portTaken says whether the process failed because a port was taken.
func (cm *controllerManager) portTaken() bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.portInUse
}

// waitReady waits until both controllers of the process run their workers.
// It fails if the process exits first or ctx ends.
func (cm *controllerManager) waitReady(ctx context.Context) error {
	select {
	case <-cm.ready:
		return nil
	case <-cm.done:
		exitErr := cm.exitErr
		if exitErr == nil {
			exitErr = errors.New("exit status 0")
		}
		return fmt.Errorf("KubeStellar's controller-manager for %s exited (%w) before it was ready; log %s ends with:\n%s",
			cm.wds, exitErr, cm.logPath, cm.logTail())
	case <-ctx.Done():
		return fmt.Errorf("KubeStellar's controller-manager for %s is not ready (%w); log %s ends with:\n%s",
			cm.wds, context.Cause(ctx), cm.logPath, cm.logTail())
	}
}

// exitedEarly reports, without blocking, whether the process has exited.
func (cm *controllerManager) exitedEarly() bool {
	select {
	case <-cm.done:
		return true
	default:
		return false
	}
}

// stop ends the process and waits for it: KubeStellar's controller-manager
// cancels its context on the first SIGTERM and exits on the second; if it
// is still there after stopTimeout, it gets SIGKILL. Calling stop again is
// harmless.
func (cm *controllerManager) stop() error {
	cm.stopOnce.Do(func() {
		if cm.exitedEarly() {
			return
		}
		_ = cm.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-cm.done:
			return
		case <-time.After(300 * time.Millisecond):
		}
		_ = cm.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-cm.done:
			return
		case <-time.After(stopTimeout):
		}
		if err := cm.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			cm.stopErr = fmt.Errorf("killing KubeStellar's controller-manager for %s (pid %d): %w", cm.wds, cm.cmd.Process.Pid, err)
		}
		select {
		case <-cm.done:
		case <-time.After(stopTimeout):
			cm.stopErr = errors.Join(cm.stopErr, fmt.Errorf("KubeStellar's controller-manager for %s (pid %d) did not exit after SIGKILL", cm.wds, cm.cmd.Process.Pid))
		}
	})
	return cm.stopErr
}

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

package environment

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/kubestellar/workload-stager/test/framework"
)

// apiServerStopTimeout is how long a kube-apiserver gets to stop after
// SIGTERM before it gets SIGKILL.
const apiServerStopTimeout = 30 * time.Second

// apiServerRestart is what StopAPIServer and StartAPIServer keep of a
// space's kube-apiserver.
type apiServerRestart struct {
	mu sync.Mutex
	// args is the stopped server's command line, nil while it runs.
	args []string
	// cmd is the server StartAPIServer started (nil: envtest's own runs),
	// done closed when it has exited.
	cmd  *exec.Cmd
	done chan struct{}
}

// apiServerProcess returns the pid and command line of the space's running
// kube-apiserver, found by its --secure-port among this machine's processes.
func (s *Space) apiServerProcess() (int, []string, error) {
	u, err := url.Parse(s.Config.Host)
	if err != nil {
		return 0, nil, fmt.Errorf("space %s: parsing the API server address %q: %w", s.Name, s.Config.Host, err)
	}
	flag := "--secure-port=" + u.Port()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, fmt.Errorf("space %s: listing processes: %w", s.Name, err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "kube-apiserver" || !slices.Contains(args, flag) {
			continue
		}
		return pid, args, nil
	}
	return 0, nil, fmt.Errorf("space %s: no kube-apiserver process with %s", s.Name, flag)
}

// KillAPIServer kills the space's kube-apiserver with SIGKILL, as a crash
// would, leaving etcd running; Stop still cleans up afterwards. Clients of
// the space see their connections refused from then on.
func (s *Space) KillAPIServer() error {
	pid, _, err := s.apiServerProcess()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("space %s: killing kube-apiserver (pid %d): %w", s.Name, pid, err)
	}
	return nil
}

// StopAPIServer stops the space's kube-apiserver as an operator would:
// SIGTERM, and SIGKILL if it has not exited after 30 s. It returns once the
// process has gone. etcd with the space's data and the server's
// certificates stay, so that StartAPIServer starts it again at the same
// address for the same clients. Clients see their connections refused
// meanwhile.
func (s *Space) StopAPIServer() error {
	r := &s.restart
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.args != nil {
		return fmt.Errorf("space %s: its kube-apiserver is stopped already", s.Name)
	}
	pid, args, err := s.apiServerProcess()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("space %s: stopping kube-apiserver (pid %d): %w", s.Name, pid, err)
	}
	if !waitGone(pid, apiServerStopTimeout) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !waitGone(pid, apiServerStopTimeout) {
			return fmt.Errorf("space %s: kube-apiserver (pid %d) did not exit after SIGKILL", s.Name, pid)
		}
	}
	r.args = args
	return nil
}

// waitGone waits up to timeout until a child process has exited and been
// reaped (by envtest or StartAPIServer, which wait for their processes), and
// reports whether it has.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); errors.Is(err, os.ErrNotExist) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartAPIServer starts the kube-apiserver that StopAPIServer stopped, with
// the same command line, and returns once it answers /readyz or ctx ends.
// Stop stops it with the rest of the space.
func (s *Space) StartAPIServer(ctx context.Context) error {
	r := &s.restart
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.args == nil {
		return fmt.Errorf("space %s: its kube-apiserver runs; StopAPIServer first", s.Name)
	}
	cmd := exec.Command(r.args[0], r.args[1:]...)
	cmd.SysProcAttr = framework.ProcessAttributes()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("space %s: starting kube-apiserver again: %w", s.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.args, r.cmd, r.done = nil, cmd, done

	dc, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		return fmt.Errorf("space %s: %w", s.Name, err)
	}
	return Poll(ctx, 100*time.Millisecond, defaultStartTimeout, fmt.Sprintf("space %s's kube-apiserver to be ready again", s.Name), func() error {
		select {
		case <-done:
			return fmt.Errorf("kube-apiserver (pid %d) exited", cmd.Process.Pid)
		default:
		}
		_, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
}

// stopRestartedAPIServer stops the kube-apiserver StartAPIServer started,
// if any; envtest stops its own.
func (s *Space) stopRestartedAPIServer() error {
	r := &s.restart
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return nil
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
		return nil
	case <-time.After(apiServerStopTimeout):
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing the restarted kube-apiserver (pid %d): %w", r.cmd.Process.Pid, err)
	}
	<-r.done
	return nil
}

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

// Package framework is the reusable test harness of the stager, shaped as
// Cluster API's test/framework: its sub-packages run the real parts
// (environment: kube-apiservers and etcd; stack: KubeStellar's
// controller-manager and simulated WECs; kubestellar: a KubeStellar
// simulator; kcp and kcpstack: a real kcp; prometheus: a real Prometheus;
// policytest: waiting on StagedBindingPolicies), and this package runs a test
// package's shared set-up (Main; stack.Main for the suites that run the
// stager binary). The suites (test/integration, test/e2e, test/realdataplane,
// test/install, test/kcpe2e, test/chaos, test/waves, test/plugin, test/scale) sit beside
// it.
package framework

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Suite is the set-up a test package's tests share: a context that ends
// with the package, a work directory for logs, a logger writing to it, and
// the clean-ups that stop what the set-up started.
type Suite struct {
	// Name names the suite in its messages and its work directory.
	Name string
	// Ctx is cancelled when the package's tests have ended.
	Ctx context.Context
	// WorkDir holds the suite's logs and files; it is kept when the suite
	// fails and removed when it passes.
	WorkDir string
	// Logger writes to WorkDir/suite.log; Main also makes it
	// controller-runtime's logger.
	Logger logr.Logger

	mu       sync.Mutex
	cleanups []func() error
	cleaned  bool
}

// Defer registers a clean-up. Clean-ups run once, last registered first:
// after the package's tests, after a failed set-up, on SIGINT or SIGTERM, and
// shortly before the test binary's -test.timeout, whose panic would otherwise
// leave every API server, etcd and controller the suite started running.
func (s *Suite) Defer(cleanup func() error) {
	s.mu.Lock()
	cleaned := s.cleaned
	if !cleaned {
		s.cleanups = append(s.cleanups, cleanup)
	}
	s.mu.Unlock()
	if cleaned { // the guard stopped the suite while it was being set up
		_ = cleanup()
	}
}

// cleanUp runs the registered clean-ups once and returns their errors.
func (s *Suite) cleanUp() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cleaned {
		return nil
	}
	s.cleaned = true
	var errs []error
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, s.cleanups[i]())
	}
	return errors.Join(errs...)
}

// Main runs a test package whose tests share what setUp starts; a TestMain
// is one line:
//
//	func TestMain(m *testing.M) { os.Exit(framework.Main(m, "integration", setUp)) }
//
// setUp registers a clean-up (Suite.Defer) for everything it starts, as it
// starts it. Main returns the exit code: 1 when setUp fails, when a clean-up
// fails, or when a test fails. It keeps the work directory and names it when
// anything failed.
func Main(m *testing.M, name string, setUp func(*Suite) error) int {
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &Suite{Name: name, Ctx: ctx}
	var err error
	if s.WorkDir, err = os.MkdirTemp("", "stager-"+name+"-"); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s set-up: %v\n", name, err)
		return 1
	}
	logFile, err := os.Create(filepath.Join(s.WorkDir, "suite.log"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s set-up: %v\n", name, err)
		return 1
	}
	defer func() { _ = logFile.Close() }()
	s.Logger = zap.New(zap.WriteTo(logFile), zap.UseDevMode(true))
	log.SetLogger(s.Logger)

	stopGuard := s.guard(testTimeout())
	defer stopGuard()

	code := 0
	if err := setUp(s); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s set-up: %v\n", name, err)
		code = 1
	} else {
		code = m.Run()
	}
	cancel()
	if err := s.cleanUp(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s clean-up: %v\n", name, err)
		code = 1
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "%s: logs are in %s\n", name, s.WorkDir)
	} else {
		_ = os.RemoveAll(s.WorkDir)
	}
	return code
}

// testTimeout returns the test binary's -test.timeout (0: none).
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return 0
	}
	d, _ := getter.Get().(time.Duration)
	return d
}

// guardMargin is how long before -test.timeout the guard stops the suite:
// a tenth of the timeout, at most 30s.
func guardMargin(timeout time.Duration) time.Duration {
	return min(timeout/10, 30*time.Second)
}

// guard runs the clean-ups when the process is told to stop (SIGINT,
// SIGTERM) and shortly before the testing package's timeout panics, which
// runs no deferred function; whatever they leave behind of the suite's
// children it kills. It returns a function that disarms it.
func (s *Suite) guard(timeout time.Duration) (disarm func()) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	var deadline <-chan time.Time
	var timer *time.Timer
	var margin time.Duration
	if timeout > 0 {
		margin = guardMargin(timeout)
		timer = time.NewTimer(timeout - margin)
		deadline = timer.C
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case sig := <-signals:
			fmt.Fprintf(os.Stderr, "%s: %s: stopping everything the suite started (logs in %s)\n", s.Name, sig, s.WorkDir)
			s.stopNow(5 * time.Second)
			os.Exit(1)
		case <-deadline:
			fmt.Fprintf(os.Stderr, "%s: the test binary's timeout (%s) is %s away: stopping everything the suite started (logs in %s)\n",
				s.Name, timeout, margin, s.WorkDir)
			s.stopNow(margin / 2)
		}
	}()
	return func() {
		signal.Stop(signals)
		if timer != nil {
			timer.Stop()
		}
		close(done)
	}
}

// stopNow runs the clean-ups for at most wait, then kills the process's
// remaining child processes and their process groups.
func (s *Suite) stopNow(wait time.Duration) {
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		if err := s.cleanUp(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: clean-up: %v\n", s.Name, err)
		}
	}()
	select {
	case <-cleaned:
	case <-time.After(wait):
		fmt.Fprintf(os.Stderr, "%s: clean-up still running after %s\n", s.Name, wait)
	}
	for _, pid := range ChildProcesses() {
		killGroup(pid)
	}
}

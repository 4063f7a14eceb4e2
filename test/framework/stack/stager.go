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
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/process"
)

// Where the stager finds the spaces of a stack.
const (
	// StagerSecretNamespace holds the WDSes' kubeconfig Secrets in the hosting space.
	StagerSecretNamespace = "kubestellar-stager"
	// StagerUser is the stager's identity in every WDS.
	StagerUser = "kubestellar-stager"
	// StagerBinaryEnv names the stager binary to run; unset, StagerBinary builds it.
	StagerBinaryEnv = "STAGER_BINARY"
)

// StagerBinary returns the stager binary named by $STAGER_BINARY, or builds
// cmd/stager into dir and returns its path.
func StagerBinary(dir string) (string, error) {
	if path := os.Getenv(StagerBinaryEnv); path != "" {
		return path, process.CheckExecutable(path)
	}
	root, err := environment.RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "stager")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/stager")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the stager: %w\n%s", err, out)
	}
	return path, nil
}

// RegisterWithStager gives the stager an identity in a WDS of the stack,
// bound to the generated space role, and registers that identity's
// kubeconfig as a Secret in the hosting space, where a stager run with
// StagerArgs finds it.
func (s *Stack) RegisterWithStager(ctx context.Context, wds string) error {
	s.mu.Lock()
	space, ok := s.WDS[wds]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("no WDS %q in the stack", wds)
	}
	return space.RegisterWithStager(ctx, s.Hosting.Client, StagerSecretNamespace, StagerUser)
}

// StagerArgs are the stager's arguments to serve the WDSes registered with
// RegisterWithStager, with free loopback ports for metrics and probes.
func (s *Stack) StagerArgs() ([]string, error) {
	addrs, err := process.FreeAddresses(2)
	if err != nil {
		return nil, err
	}
	return []string{
		"--kubeconfig=" + s.HostingKubeconfig,
		"--provider=kubeconfig",
		"--kubeconfig-namespace=" + StagerSecretNamespace,
		"--metrics-bind-address=" + addrs[0],
		"--health-probe-bind-address=" + addrs[1],
		"--space-probe-interval=2s",
	}, nil
}

// Process is a running binary started by StartProcess.
type Process struct {
	// Args are the arguments it was started with.
	Args []string
	// Log is the file receiving its output.
	Log string

	cmd       *exec.Cmd
	logOffset int64
	done      chan struct{}
	stopOnce  sync.Once
	stopErr   error
}

// StartProcess runs a binary with its output appended to logPath. The process
// gets its own process group and, on Linux, is killed if this process dies.
func StartProcess(binary string, args []string, logPath string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", logPath, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = framework.ProcessAttributes()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	p := &Process{Args: args, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// StartStager starts the stager binary with the arguments args returns, its
// output appended to logPath, and waits until it serves its health probes
// and metrics (waitServing): a stager that could not start fails here,
// quoting its log, not minutes later in whatever waits for its work. If it
// exits first because a port was taken meanwhile, it is started again with
// fresh arguments, up to portAttempts times, as a controller-manager is.
func StartStager(ctx context.Context, binary string, args func() ([]string, error), logPath string) (*Process, error) {
	for attempt := 1; ; attempt++ {
		a, err := args()
		if err != nil {
			return nil, err
		}
		p, err := startLogged(binary, a, logPath)
		if err != nil {
			return nil, err
		}
		err = p.waitServing(ctx, time.Minute)
		if err == nil {
			return p, nil
		}
		if !p.Exited() {
			_ = p.Stop(15 * time.Second)
			return nil, err
		}
		if !strings.Contains(p.output(), process.PortInUse) || attempt == portAttempts {
			return nil, err
		}
	}
}

// startLogged is StartProcess, remembering where in logPath this run's
// output starts.
func startLogged(binary string, args []string, logPath string) (*Process, error) {
	var offset int64
	if info, err := os.Stat(logPath); err == nil {
		offset = info.Size()
	}
	p, err := StartProcess(binary, args, logPath)
	if err != nil {
		return nil, err
	}
	p.logOffset = offset
	return p, nil
}

// servingMetrics is what controller-runtime logs once the metrics server
// listens: the health probe server listens from the start, the metrics
// server only once the manager runs, and a taken metrics port ends the
// process after /healthz has answered.
const servingMetrics = "Serving metrics server"

// waitServing waits until the process answers /healthz at the address of
// its --health-probe-bind-address and, unless its --metrics-bind-address
// is "0", has logged that its metrics server listens. It fails if the
// process exits first or is not serving within timeout.
func (p *Process) waitServing(ctx context.Context, timeout time.Duration) error {
	addr := p.Flag("health-probe-bind-address")
	if addr == "" || addr == "0" {
		return fmt.Errorf("%s serves no health probes to wait for", p.cmd.Path)
	}
	metrics := p.Flag("metrics-bind-address") != "0"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if p.answersHealthz(ctx, client, addr) && (!metrics || strings.Contains(p.output(), servingMetrics)) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was serving at %s; its log %s ends with:\n%s",
				p.cmd.Path, addr, p.Log, lastLines(p.output(), process.TailLines))
		case <-ctx.Done():
			return fmt.Errorf("%s is not serving at %s (%w); its log %s ends with:\n%s",
				p.cmd.Path, addr, context.Cause(ctx), p.Log, lastLines(p.output(), process.TailLines))
		case <-tick.C:
		}
	}
}

// answersHealthz says whether GET /healthz at addr answers 200.
func (p *Process) answersHealthz(ctx context.Context, client *http.Client, addr string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// output returns what this run of the process has written to its log.
func (p *Process) output() string {
	f, err := os.Open(p.Log)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(p.logOffset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Kill kills the process with SIGKILL, as a crash would, and waits for it.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing pid %d: %w", p.cmd.Process.Pid, err)
	}
	<-p.done
	return nil
}

// Stop stops the process with SIGTERM, then SIGKILL after the timeout, and
// waits for it. Calling it more than once is harmless.
func (p *Process) Stop(timeout time.Duration) error {
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(timeout):
		}
		p.stopErr = p.Kill()
	})
	return p.stopErr
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits until the process exits or ctx is done.
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
func (p *Process) Flag(name string) string {
	prefix := "--" + name + "="
	for _, arg := range p.Args {
		if value, ok := strings.CutPrefix(arg, prefix); ok {
			return value
		}
	}
	return ""
}

// Pid returns the process ID.
func (p *Process) Pid() int {
	return p.cmd.Process.Pid
}

// The identity that scrapes the stager's metrics in a stack, as Prometheus's
// ServiceAccount does in a cluster.
const (
	// MetricsReaderNamespace holds the metrics reader's ServiceAccount in the hosting space.
	MetricsReaderNamespace = "monitoring"
	// MetricsReaderName names the metrics reader's ServiceAccount.
	MetricsReaderName = "prometheus"
)

// MetricsReaderToken returns a token of the ServiceAccount
// MetricsReaderNamespace/MetricsReaderName of the hosting space, bound to the
// shipped metrics-reader ClusterRole: with it, a stager run with StagerArgs
// lets its metrics be scraped over HTTPS.
func (s *Stack) MetricsReaderToken(ctx context.Context) (string, error) {
	if err := s.Hosting.GrantMetricsReader(ctx, MetricsReaderNamespace, MetricsReaderName); err != nil {
		return "", err
	}
	return s.Hosting.ServiceAccountToken(ctx, MetricsReaderNamespace, MetricsReaderName)
}

// ScrapeMetrics reads the metrics exposition of a stager serving them at
// addr with its default, secure, endpoint: over HTTPS, without verifying the
// stager's self-signed certificate, with a bearer token of an identity bound
// to the metrics-reader ClusterRole (MetricsReaderToken).
func ScrapeMetrics(ctx context.Context, addr, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := metricsHTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("scraping the stager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("reading the stager's metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("scraping the stager's metrics: status %d: %.200s", resp.StatusCode, body)
	}
	return string(body), nil
}

// metricsHTTPClient scrapes the stager, whose certificate is self-signed.
var metricsHTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the stager's certificate is self-signed
}}

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
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

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

// StagerArgs are the stager's arguments to serve the WDSes registered with
// ServeWDS, with free loopback ports for metrics and probes.
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

// stagerStopTimeout is how long a stager gets after SIGTERM before SIGKILL.
const stagerStopTimeout = 15 * time.Second

// StartProcess runs a binary (the stager, as a replica or standing in for a
// pod) with its output appended to logPath; Stop gives it 15 s after
// SIGTERM. See process.Start.
func StartProcess(binary string, args []string, logPath string) (*process.Process, error) {
	return startStagerProcess(binary, args, logPath, nil)
}

// startStagerProcess is StartProcess, ready when ready says so (nil: once
// started).
func startStagerProcess(binary string, args []string, logPath string, ready func(line string) bool) (*process.Process, error) {
	return process.Start(process.Spec{
		Name:        filepath.Base(binary),
		Binary:      binary,
		Args:        args,
		LogPath:     logPath,
		Ready:       ready,
		StopTimeout: stagerStopTimeout,
	})
}

// StartStager starts the stager binary with the arguments args returns, its
// output appended to logPath, and waits until it serves its health probes
// and metrics (waitServing): a stager that could not start fails here,
// quoting its log, not minutes later in whatever waits for its work. If it
// exits first because a port was taken meanwhile, it is started again with
// fresh arguments, up to portAttempts times, as a controller-manager is.
func StartStager(ctx context.Context, binary string, args func() ([]string, error), logPath string) (*process.Process, error) {
	for attempt := 1; ; attempt++ {
		a, err := args()
		if err != nil {
			return nil, err
		}
		// The health probe server listens from the start, the metrics
		// server only once the manager runs, and a taken metrics port ends
		// the process after /healthz has answered: unless its metrics are
		// off, the stager is ready once it has logged servingMetrics.
		var ready func(string) bool
		if process.FlagValue(a, "metrics-bind-address") != "0" {
			ready = func(line string) bool { return strings.Contains(line, servingMetrics) }
		}
		p, err := startStagerProcess(binary, a, logPath, ready)
		if err != nil {
			return nil, err
		}
		err = waitServing(ctx, p, time.Minute)
		if err == nil {
			return p, nil
		}
		if !p.Exited() {
			_ = p.Stop()
			return nil, err
		}
		if !p.PortTaken() || attempt == portAttempts {
			return nil, err
		}
	}
}

// servingMetrics is what controller-runtime logs once the metrics server
// listens.
const servingMetrics = "Serving metrics server"

// waitServing waits until the process answers /healthz at the address of
// its --health-probe-bind-address and is ready (has logged that its
// metrics server listens, unless its --metrics-bind-address is "0"). It
// fails if the process exits first or is not serving within timeout.
func waitServing(ctx context.Context, p *process.Process, timeout time.Duration) error {
	addr := p.Flag("health-probe-bind-address")
	if addr == "" || addr == "0" {
		return fmt.Errorf("%s serves no health probes to wait for", p.Name())
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !answersHealthz(ctx, client, addr) {
		if p.Exited() {
			return fmt.Errorf("%s exited before it was serving at %s; its log %s ends with:\n%s",
				p.Name(), addr, p.LogPath(), p.Tail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not serving at %s (%w); its log %s ends with:\n%s",
				p.Name(), addr, context.Cause(ctx), p.LogPath(), p.Tail())
		case <-tick.C:
		}
	}
	return p.WaitReady(ctx)
}

// answersHealthz says whether GET /healthz at addr answers 200.
func answersHealthz(ctx context.Context, client *http.Client, addr string) bool {
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

// The identity that scrapes the stager's metrics in a stack, as Prometheus's
// ServiceAccount does in a cluster.
const (
	// MetricsReaderNamespace holds the metrics reader's ServiceAccount in the hosting space.
	MetricsReaderNamespace = "monitoring"
	// MetricsReaderName names the metrics reader's ServiceAccount.
	MetricsReaderName = "prometheus"
)

// MetricsReaderToken returns a token of the metrics reader of the stack's
// hosting space (HostingMetricsReaderToken): with it, a stager run with
// StagerArgs lets its metrics be scraped over HTTPS.
func (s *Stack) MetricsReaderToken(ctx context.Context) (string, error) {
	return HostingMetricsReaderToken(ctx, s.Hosting)
}

// HostingMetricsReaderToken returns a token of the ServiceAccount
// MetricsReaderNamespace/MetricsReaderName of a hosting space, bound to the
// shipped metrics-reader ClusterRole: with it, a stager whose --kubeconfig
// is that space's lets its metrics be scraped over HTTPS.
func HostingMetricsReaderToken(ctx context.Context, hosting *environment.Space) (string, error) {
	if err := hosting.GrantMetricsReader(ctx, MetricsReaderNamespace, MetricsReaderName); err != nil {
		return "", err
	}
	return hosting.ServiceAccountToken(ctx, MetricsReaderNamespace, MetricsReaderName)
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

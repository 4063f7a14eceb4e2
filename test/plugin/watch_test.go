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

package plugin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	stagerapp "github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// liveSpace starts a WDS of its own with a KubeStellar simulator and a
// stager serving it (in-process, provider single), so that rollouts there
// progress for real, and returns it with its kubeconfig file and the
// simulator's availability.
func liveSpace(t *testing.T) (*environment.Space, string, *kubestellar.Availability, *kubestellar.Simulator) {
	t.Helper()
	scheme, err := stagerapp.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	wds, err := environment.StartSpace("live", environment.WithStagerCRDs(), environment.WithKubeStellarCRDs(), environment.WithScheme(scheme))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wds.Stop() })
	if err := wds.Client.Create(suite.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	availability := kubestellar.NewAvailability(policytest.Collector, "configmaps")
	sim := kubestellar.New(wds.Client, clusters, kubestellar.WithReporter(availability.Report), kubestellar.WithInterval(200*time.Millisecond))
	ctx, cancel := context.WithCancel(suite.ctx)
	var running sync.WaitGroup
	running.Add(2)
	t.Cleanup(func() { cancel(); running.Wait() })
	go func() { defer running.Done(); _ = sim.Run(ctx) }()

	opts := stagerapp.NewOptions()
	opts.Providers.Kind = "single"
	opts.LeaderElectionNamespace = metav1.NamespaceDefault
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.SpaceProbeInterval = time.Second
	opts.AllowSeveralInProcess = true
	stager, err := stagerapp.New(ctx, wds.Config, opts, suite.logger)
	if err != nil {
		t.Fatal(err)
	}
	go func() { defer running.Done(); _ = stager.Start(ctx) }()

	kubeconfig := filepath.Join(t.TempDir(), "live.kubeconfig")
	if err := os.WriteFile(kubeconfig, wds.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	return wds, kubeconfig, availability, sim
}

// screen collects what a terminal shows.
type screen struct{ framework.LockedBuffer }

// frame returns the last frame drawn (what follows the last clear-screen
// sequence), without the terminal's carriage returns and colours, and how
// many frames were drawn.
func (s *screen) frame() (string, int) {
	frames := strings.Split(s.String(), "\x1b[H\x1b[2J")
	last := strings.ReplaceAll(frames[len(frames)-1], "\r", "")
	for _, code := range []string{"\x1b[0m", "\x1b[32m", "\x1b[34m", "\x1b[36m", "\x1b[31m", "\x1b[2m", "\x1b[1m"} {
		last = strings.ReplaceAll(last, code, "")
	}
	return last, len(frames) - 1
}

// TestWatchInATerminal runs `kubectl stager get --watch` in a pseudo-terminal
// while a rollout progresses for real (a stager and the KubeStellar
// simulator): the view is redrawn, coloured, as each stage starts and ends,
// down to the completed rollout; written to a file instead, it is plain text.
func TestWatchInATerminal(t *testing.T) {
	wds, kubeconfig, availability, sim := liveSpace(t)
	const name = "watched"
	if err := wds.Client.Create(suite.ctx, policytest.Deployment(namespace, name)); err != nil {
		t.Fatal(err)
	}
	if err := wds.Client.Create(suite.ctx, policytest.ThreeStages(name, name)); err != nil {
		t.Fatal(err)
	}

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ptmx.Close() }()
	var terminal screen
	go func() { _, _ = io.Copy(&terminal, ptmx) }()
	ctx, cancel := context.WithCancel(suite.ctx)
	done := make(chan error, 1)
	go func() {
		cmd := app.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: tty, ErrOut: tty}, time.Now)
		cmd.SetArgs([]string{"--kubeconfig=" + kubeconfig, "get", "--watch", "--interval=200ms"})
		done <- cmd.ExecuteContext(ctx)
	}()

	shows := func(what string, lines ...string) {
		t.Helper()
		environment.Eventually(t, time.Minute, "the terminal to show "+what, func() error {
			frame, _ := terminal.frame()
			for _, l := range lines {
				if !strings.Contains(frame, l) {
					return fmt.Errorf("no %q in the frame:\n%s", l, frame)
				}
			}
			return nil
		})
	}
	shows("dev active", "watched  Progressing", "▶ dev   dev1,dev2", "· test  -", "· prod  -")
	for _, stage := range []string{"dev", "test", "prod"} {
		availability.SetAvailable(v1alpha1.StagePlacement(name, stage).String(), true)
		sim.Resync()
	}
	shows("the completed rollout", "watched  Completed", "✓ dev ", "✓ test ", "✓ prod  prod1")
	frame, frames := terminal.frame()
	t.Logf("the terminal's last frame, of %d:\n%s", frames, frame)
	raw := terminal.String()
	if frames < 3 || !strings.Contains(raw, "\x1b[32m✓") {
		t.Errorf("%d frames, want the view redrawn as the rollout went, with coloured marks:\n%q", frames, raw)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("--watch ended with %v", err)
	}
	_ = tty.Close()

	// Not on a terminal: plain text, each view once.
	var plain bytes.Buffer
	ctx, cancel = context.WithCancel(suite.ctx)
	defer time.AfterFunc(time.Second, cancel).Stop()
	cmd := app.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &plain, ErrOut: &plain}, time.Now)
	cmd.SetArgs([]string{"--kubeconfig=" + kubeconfig, "get", name, "--watch", "--interval=100ms"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	views := strings.Split(plain.String(), "\n\n")
	if strings.Contains(plain.String(), "\x1b") || !strings.HasPrefix(views[len(views)-1], "watched  Completed") {
		t.Errorf("--watch to a file printed %q, want views of the completed rollout, without escape sequences", plain.String())
	}
	for i := 1; i < len(views); i++ {
		if views[i] == views[i-1] {
			t.Errorf("--watch to a file printed the same view twice: %q", plain.String())
		}
	}
}

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

package main

// The demo: a hosting space, an ITS and two WDSes, each WDS with the real
// KubeStellar controller-manager, simulated WECs (dev1, dev2, test1, prod1,
// prod2) that turn healthy stage after stage, and the stager binary serving
// both WDSes (test/framework/stack). It prints the rollouts' progress as it
// happens and runs until its context is cancelled, then stops everything it
// started.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/providers"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// Names used by the demo.
const (
	// PolicyName is the sample StagedBindingPolicy applied in every WDS.
	PolicyName = "nginx-staged-bindingpolicy"
	// Collector is the StatusCollector the sample policy's conditions read.
	Collector = "deployments-aggregator"
	// WorkloadNamespace holds the sample workload in every WDS.
	WorkloadNamespace = "demo"
)

// Clusters is the simulated inventory of WECs.
var Clusters = kubestellar.EnvClusters("dev1", "dev2", "test1", "prod1", "prod2")

// Options configure a demo.
type Options struct {
	// StagerBinary is the path of the stager binary to run.
	StagerBinary string
	// WorkDir receives the kubeconfigs and the stager's log.
	WorkDir string
	// Spaces are the names of the WDSes. Default: wds1, wds2.
	Spaces []string
	// StageDelay is how long the WECs of an active stage take to report the
	// workload available. Default: 8s.
	StageDelay time.Duration
	// Out receives the progress report.
	Out io.Writer
	// Logger receives the stack's own log.
	Logger logr.Logger
}

// wds is one WDS of the demo.
type wds struct {
	name       string
	client     client.Client
	kubeconfig string
	// madeAvailable records the stages whose WECs turned healthy.
	madeAvailable map[string]bool
}

// Run runs the demo until ctx is cancelled.
func Run(ctx context.Context, o Options) (err error) {
	if len(o.Spaces) == 0 {
		o.Spaces = []string{"wds1", "wds2"}
	}
	if o.StageDelay <= 0 {
		o.StageDelay = 8 * time.Second
	}
	if _, err := os.Stat(o.StagerBinary); err != nil {
		return fmt.Errorf("%w: %w", errNoBinary, err)
	}
	out := o.Out
	var cleanups []func()
	defer func() {
		fmt.Fprintln(out, "Stopping everything the demo started...")
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		fmt.Fprintln(out, "Stopped.")
	}()

	fmt.Fprintln(out, "Starting the hosting space, the ITS and the WDSes (real kube-apiservers and etcds),")
	fmt.Fprintln(out, "one real KubeStellar controller-manager per WDS, and the simulated WECs...")
	scheme, err := app.NewScheme()
	if err != nil {
		return err
	}
	st, err := stack.Start(ctx, stack.Options{
		WDSes:      o.Spaces,
		Clusters:   Clusters,
		WorkDir:    o.WorkDir,
		WDSOptions: []environment.SpaceOption{environment.WithStagerCRDs(), environment.WithScheme(scheme)},
		Logger:     o.Logger,
	})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { _ = st.Stop() })

	var spaces []*wds
	for _, name := range o.Spaces {
		w, err := prepareSpace(ctx, st, name, o.WorkDir)
		if err != nil {
			return err
		}
		spaces = append(spaces, w)
	}
	args := func() ([]string, error) { return kubeFlexStagerArgs(ctx, st) }
	stager, err := stack.StartStager(ctx, o.StagerBinary, args, filepath.Join(o.WorkDir, "stager.log"))
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { _ = stager.Stop(15 * time.Second) })

	for _, w := range spaces {
		if err := w.client.Create(ctx, SamplePolicy()); err != nil {
			return fmt.Errorf("applying the sample policy in %s: %w", w.name, err)
		}
	}
	// The stager serves its metrics over HTTPS to the metrics reader only.
	token, err := st.MetricsReaderToken(ctx)
	if err != nil {
		return err
	}
	tokenFile := filepath.Join(o.WorkDir, "metrics-reader.token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", tokenFile, err)
	}
	printGuide(out, o, st.HostingKubeconfig, spaces, stager.Flag("metrics-bind-address"), tokenFile)
	return follow(ctx, out, st, stager, spaces, o.StageDelay)
}

// kubeFlexStagerArgs returns the stager's arguments to find the WDSes on its
// own, as KubeFlex ControlPlanes of the hosting space (which the stack
// created, as KubeFlex would), reading their external kubeconfigs: the
// stager runs outside the hosting cluster. Its leader election Lease goes in
// the namespace of --kubeconfig-namespace, made here.
func kubeFlexStagerArgs(ctx context.Context, st *stack.Stack) ([]string, error) {
	args, err := st.StagerArgs()
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stack.StagerSecretNamespace}}
	if err := st.Hosting.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s in the hosting space: %w", ns.Name, err)
	}
	for i, arg := range args {
		if strings.HasPrefix(arg, "--provider=") {
			args[i] = "--provider=" + providers.KindKubeFlex
		}
	}
	return append(args, "--kubeflex-kubeconfig-key=external", "--leader-election-namespace="+stack.StagerSecretNamespace), nil
}

// prepareSpace writes a WDS's kubeconfig and creates the StatusCollector and
// the sample workload. The stager finds the WDS through its ControlPlane.
func prepareSpace(ctx context.Context, st *stack.Stack, name, dir string) (*wds, error) {
	space := st.WDS[name]
	path, err := writeKubeconfig(dir, name, space.Kubeconfig())
	if err != nil {
		return nil, err
	}
	objs := append([]client.Object{stack.NewDeploymentsAggregator(Collector)}, sampleWorkload()...)
	for _, obj := range objs {
		if err := space.Client.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %T %s in %s: %w", obj, obj.GetName(), name, err)
		}
	}
	return &wds{name: name, client: space.Client, kubeconfig: path, madeAvailable: map[string]bool{}}, nil
}

// SamplePolicy is the seed's StagedBindingPolicy, extended to dev -> test -> prod.
func SamplePolicy() *v1alpha1.StagedBindingPolicy {
	return policytest.Policy(PolicyName, map[string]string{policytest.AppLabel: "nginx"},
		policytest.Stage("dev", policytest.Deployments, policytest.AvailableCombinedStatus),
		policytest.Stage("test", policytest.Deployments, policytest.AvailableCombinedStatus),
		policytest.Stage("prod", "", ""))
}

// sampleWorkload is an nginx Deployment in its namespace.
func sampleWorkload() []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: WorkloadNamespace}},
		policytest.Deployment(WorkloadNamespace, "nginx"),
	}
}

// writeKubeconfig writes a kubeconfig into dir and returns its path.
func writeKubeconfig(dir, name string, kubeconfig []byte) (string, error) {
	path := filepath.Join(dir, name+".kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// printGuide tells the person watching where to look around.
func printGuide(out io.Writer, o Options, hostingKubeconfig string, spaces []*wds, metricsAddr, tokenFile string) {
	kubectl := "kubectl"
	if assets, err := environment.AssetsDir(); err == nil {
		if _, err := os.Stat(filepath.Join(assets, "kubectl")); err == nil {
			kubectl = filepath.Join(assets, "kubectl")
		}
	}
	fmt.Fprintf(out, "\nThe demo is running. Files are in %s:\n", o.WorkDir)
	fmt.Fprintf(out, "  hosting space: %s (KubeFlex ControlPlanes: the stager finds the WDSes there, --provider=%s)\n", hostingKubeconfig, providers.KindKubeFlex)
	for _, w := range spaces {
		fmt.Fprintf(out, "  %s: %s (found by the %s provider from ControlPlane %s, through Secret %s/%s; KubeStellar's log: %s)\n",
			w.name, w.kubeconfig, providers.KindKubeFlex, w.name, stack.ControlPlaneSecretNamespace(w.name), stack.ControlPlaneSecretName,
			filepath.Join(o.WorkDir, "ks-controller-manager-"+w.name+".log"))
	}
	fmt.Fprintf(out, "  stager log: %s\n\nLook around:\n", filepath.Join(o.WorkDir, "stager.log"))
	w := spaces[0]
	fmt.Fprintf(out, "  %s --kubeconfig=%s get stagedbindingpolicies\n", kubectl, w.kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get sbp %s -o yaml\n", kubectl, w.kubeconfig, PolicyName)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get bindingpolicies,bindings\n", kubectl, w.kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get combinedstatuses -A\n", kubectl, w.kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get events.events.k8s.io -A\n", kubectl, w.kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get controlplanes -L kflex.kubestellar.io/cptype\n", kubectl, hostingKubeconfig)
	fmt.Fprintf(out, "  curl -sk -H \"Authorization: Bearer $(cat %s)\" https://%s/metrics | grep ^stager_   # HTTPS, token of ServiceAccount %s/%s (metrics-reader)\n\n",
		tokenFile, metricsAddr, stack.MetricsReaderNamespace, stack.MetricsReaderName)
	fmt.Fprintf(out, "Each stage's WECs report the nginx Deployment available %s after the stage starts.\nPress Ctrl-C to stop.\n\n", o.StageDelay)
}

// follow prints every change of the rollouts, turns the WECs of each active
// stage healthy after the delay, and returns when ctx is done, or with an
// error if the stager stops.
func follow(ctx context.Context, out io.Writer, st *stack.Stack, stager *stack.Process, spaces []*wds, delay time.Duration) error {
	last := map[string]string{}
	announced := false
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if stager.Exited() {
			return fmt.Errorf("the stager stopped: see its log, %s", stager.Log)
		}
		completed := 0
		for _, w := range spaces {
			policy := &v1alpha1.StagedBindingPolicy{}
			if err := w.client.Get(ctx, types.NamespacedName{Name: PolicyName}, policy); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("reading the policy in %s: %w", w.name, err)
			}
			if line := progressLine(w.name, policy); line != last[w.name] {
				last[w.name] = line
				fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05"), line)
			}
			if policy.Status.Phase == v1alpha1.RolloutCompleted {
				completed++
			}
			w.turnHealthy(out, st.WECs, policy, delay)
		}
		if completed == len(spaces) && !announced {
			announced = true
			fmt.Fprintf(out, "\nEvery rollout reached its final stage. Press Ctrl-C to stop.\n")
		}
	}
}

// turnHealthy makes the active stage's WECs report the workload available
// once the stage has been active for the delay.
func (w *wds) turnHealthy(out io.Writer, wecs *stack.WECs, policy *v1alpha1.StagedBindingPolicy, delay time.Duration) {
	for _, st := range policy.Status.Stages {
		if st.Phase != v1alpha1.StageActive || st.StartTime == nil || w.madeAvailable[st.Name] {
			continue
		}
		if time.Since(st.StartTime.Time) < delay {
			continue
		}
		w.madeAvailable[st.Name] = true
		wecs.SetAvailable(stack.Match{WDS: w.name, BindingPolicy: v1alpha1.BindingPolicyName(policy.Name, st.Name), Resource: "deployments"}, 1)
		wecs.Resync()
		fmt.Fprintf(out, "%s %s: the %s WECs now report nginx available\n", time.Now().Format("15:04:05"), w.name, st.Name)
	}
}

// progressLine renders one policy's progress: each stage with a mark, then
// what the active stage waits for.
func progressLine(space string, policy *v1alpha1.StagedBindingPolicy) string {
	var stages []string
	detail := ""
	for _, st := range policy.Status.Stages {
		mark := map[v1alpha1.StagePhase]string{
			v1alpha1.StagePending: "·", v1alpha1.StageActive: "▶", v1alpha1.StageSucceeded: "✓", v1alpha1.StageSkipped: "-",
		}[st.Phase]
		stages = append(stages, fmt.Sprintf("%s %s", mark, st.Name))
		if st.Name == policy.Status.ActiveStage {
			detail = st.Message
		}
	}
	if len(stages) == 0 {
		return fmt.Sprintf("%-5s %s: waiting for the stager", space, policy.Name)
	}
	return fmt.Sprintf("%-5s %-11s [%s]  %s", space, policy.Status.Phase, strings.Join(stages, " → "), detail)
}

// errNoBinary is returned when the stager binary is missing.
var errNoBinary = errors.New("the stager binary does not exist; run `make build`")

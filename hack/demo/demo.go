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
// KubeStellar controller-manager and transport controller, real WECs (dev1,
// dev2, test1, prod1, prod2) with OCM's work agent and pods run by kwok, and
// the stager binary serving both WDSes (test/framework/stack with
// RealDataPlane). Each WDS rolls revision v1 of nginx out, then v2, through a
// RolloutWave wds1 → wds2 in the hosting space: wds2 starts a revision only
// once wds1 has completed it. It prints the rollouts', the wave's and the
// WECs' progress as it happens and runs until its context is cancelled, then
// stops everything it started.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/providers"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
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
	// RevisionLabel carries the revision of the revisioned workload's objects.
	RevisionLabel = v1alpha1.DefaultRevisionLabelKey
	// WaveName is the RolloutWave that orders the sample policy's
	// revisions across the WDSes, in the order of Options.Spaces.
	WaveName = "nginx-wave"
)

// Clusters is the inventory of WECs.
var Clusters = kubestellar.EnvClusters("dev1", "dev2", "test1", "prod1", "prod2")

// Options configure a demo.
type Options struct {
	// StagerBinary is the path of the stager binary to run.
	StagerBinary string
	// WorkDir receives the kubeconfigs and the stager's log.
	WorkDir string
	// Spaces are the names of the WDSes. Default: wds1, wds2.
	Spaces []string
	// Out receives the progress report.
	Out io.Writer
	// Logger receives the stack's own log.
	Logger logr.Logger
}

// wds is one WDS of the demo, whose policy rolls out revision v1, then v2.
type wds struct {
	name       string
	client     client.Client
	kubeconfig string
}

// Run runs the demo until ctx is cancelled.
func Run(ctx context.Context, o Options) (err error) {
	if len(o.Spaces) == 0 {
		o.Spaces = []string{"wds1", "wds2"}
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
	fmt.Fprintln(out, "KubeStellar's controller-manager and transport controller per WDS, and the WECs")
	fmt.Fprintln(out, "(each an API server with kube-controller-manager, kube-scheduler, kwok and OCM's work agent)...")
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
		DataPlane:  stack.RealDataPlane,
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
	// The platform team's wave, in the hosting space, before any policy:
	// no later WDS starts a revision before the earlier ones completed it.
	hosting, err := client.New(st.Hosting.Config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("making a client of the hosting space: %w", err)
	}
	if err := hosting.Create(ctx, DemoWave(o.Spaces)); err != nil {
		return fmt.Errorf("creating RolloutWave %s: %w", WaveName, err)
	}
	args := func() ([]string, error) { return kubeFlexStagerArgs(ctx, st) }
	stager, err := stack.StartStager(ctx, o.StagerBinary, args, filepath.Join(o.WorkDir, "stager.log"))
	if err != nil {
		return err
	}
	cleanups = append(cleanups, func() { _ = stager.Stop() })

	for _, w := range spaces {
		if err := w.client.Create(ctx, RevisionedPolicy("v1")); err != nil {
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
	printGuide(out, o, st, spaces, stager.Flag("metrics-bind-address"), tokenFile)
	return follow(ctx, out, st, hosting, stager, spaces)
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
// revision v1 of the sample workload. The stager finds the WDS through its
// ControlPlane.
func prepareSpace(ctx context.Context, st *stack.Stack, name, dir string) (*wds, error) {
	space := st.WDS[name]
	path, err := writeKubeconfig(dir, name, space.Kubeconfig())
	if err != nil {
		return nil, err
	}
	objs := append([]client.Object{stack.NewDeploymentsAggregator(Collector)}, revisionedWorkload("v1")...)
	for _, obj := range objs {
		if err := space.Client.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %T %s in %s: %w", obj, obj.GetName(), name, err)
		}
	}
	return &wds{name: name, client: space.Client, kubeconfig: path}, nil
}

// SamplePolicy is the seed's StagedBindingPolicy, extended to dev -> test -> prod.
func SamplePolicy() *v1alpha1.StagedBindingPolicy {
	return policytest.Policy(PolicyName, map[string]string{policytest.AppLabel: "nginx"},
		policytest.Stage("dev", policytest.Deployments, policytest.AvailableCombinedStatus),
		policytest.Stage("test", policytest.Deployments, policytest.AvailableCombinedStatus),
		policytest.Stage("prod", "", ""))
}

// RevisionedPolicy is SamplePolicy rolling out the given revision of the
// revisioned workload (RevisionedDeployment), with placement Accumulate, so
// that every stage keeps running it and a new revision has something to
// replace stage by stage. prod waits for the workload too: a stage without
// a condition lets the old revision go as soon as KubeStellar has resolved
// the new one, and OCM's work agent may then remove the old one, and even
// the namespace both share, before the new one runs on the WEC.
func RevisionedPolicy(revision string) *v1alpha1.StagedBindingPolicy {
	policy := SamplePolicy()
	policy.Spec.Placement = v1alpha1.PlacementAccumulate
	policy.Spec.Revision = &v1alpha1.Revision{Name: revision}
	prod := &policy.Spec.Stages[len(policy.Spec.Stages)-1]
	prod.Filter, prod.Condition = policytest.Deployments, policytest.AvailableCombinedStatus
	return policy
}

// RevisionedDeployment is revision <revision> of nginx: Deployment
// nginx-<revision>, running image nginx:<tag>, labelled for the sample
// policy and with its revision.
func RevisionedDeployment(revision, tag string) client.Object {
	d := policytest.Deployment(WorkloadNamespace, "nginx")
	d.Name = "nginx-" + revision
	labels := map[string]string{policytest.AppLabel: "nginx", RevisionLabel: revision}
	d.Labels, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels = labels, labels, labels
	d.Spec.Template.Spec.Containers[0].Image = "nginx:" + tag
	return d
}

// revisionedWorkload is the namespace, which belongs to every revision,
// and revision v1 of nginx.
func revisionedWorkload(revision string) []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: WorkloadNamespace, Labels: map[string]string{policytest.AppLabel: "nginx"}}},
		RevisionedDeployment(revision, revisionTags[revision]),
	}
}

// revisionTags are the nginx image tags of the demo's revisions.
var revisionTags = map[string]string{"v1": "1.27", "v2": "1.28"}

// DemoWave is the RolloutWave that orders the sample policy through the
// given WDSes, one step each, in that order.
func DemoWave(spaces []string) *hostingv1alpha1.RolloutWave {
	w := &hostingv1alpha1.RolloutWave{
		ObjectMeta: metav1.ObjectMeta{Name: WaveName},
		Spec:       hostingv1alpha1.RolloutWaveSpec{Policies: []string{PolicyName}},
	}
	for _, space := range spaces {
		w.Spec.Steps = append(w.Spec.Steps, hostingv1alpha1.WaveStep{Name: space, Spaces: []string{space}})
	}
	return w
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
func printGuide(out io.Writer, o Options, st *stack.Stack, spaces []*wds, metricsAddr, tokenFile string) {
	kubectl := "kubectl"
	if assets, err := environment.AssetsDir(); err == nil {
		if _, err := os.Stat(filepath.Join(assets, "kubectl")); err == nil {
			kubectl = filepath.Join(assets, "kubectl")
		}
	}
	fmt.Fprintf(out, "\nThe demo is running. Files are in %s:\n", o.WorkDir)
	fmt.Fprintf(out, "  hosting space: %s (KubeFlex ControlPlanes: the stager finds the WDSes there, --provider=%s)\n", st.HostingKubeconfig, providers.KindKubeFlex)
	for _, w := range spaces {
		fmt.Fprintf(out, "  %s: %s (found by the %s provider from ControlPlane %s, through Secret %s/%s)\n",
			w.name, w.kubeconfig, providers.KindKubeFlex, w.name, stack.ControlPlaneSecretNamespace(w.name), stack.ControlPlaneSecretName)
		fmt.Fprintf(out, "      KubeStellar's logs: %s, %s\n", st.ControllerManagerLog(w.name), st.TransportLog(w.name))
	}
	fmt.Fprintf(out, "  ITS: %s\n", st.ITSKubeconfig())
	for _, c := range Clusters {
		fmt.Fprintf(out, "  WEC %s: %s (logs beside it)\n", c.Name, st.RealWECs[c.Name].Kubeconfig)
	}
	fmt.Fprintf(out, "  stager log: %s\n\nLook around:\n", filepath.Join(o.WorkDir, "stager.log"))
	w := spaces[0]
	fmt.Fprintf(out, "  %s --kubeconfig=%s get stagedbindingpolicies\n", kubectl, w.kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get sbp %s -o yaml\n", kubectl, w.kubeconfig, PolicyName)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get bindingpolicies,bindings\n", kubectl, w.kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get combinedstatuses -A\n", kubectl, w.kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get events.events.k8s.io -A\n", kubectl, w.kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get manifestworks,workstatuses -A -L transport.kubestellar.io/originWdsName   # the ITS\n", kubectl, st.ITSKubeconfig())
	fmt.Fprintf(out, "  %s --kubeconfig=%s get deployments,pods,appliedmanifestworks -A   # WEC dev1\n", kubectl, st.RealWECs[Clusters[0].Name].Kubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get controlplanes -L kflex.kubestellar.io/cptype\n", kubectl, st.HostingKubeconfig)
	fmt.Fprintf(out, "  %s --kubeconfig=%s get rolloutwave %s -o yaml   # the wave: each WDS's report in its status\n", kubectl, st.HostingKubeconfig, WaveName)
	fmt.Fprintf(out, "  curl -sk -H \"Authorization: Bearer $(cat %s)\" https://%s/metrics | grep ^stager_   # HTTPS, token of ServiceAccount %s/%s (metrics-reader)\n\n",
		tokenFile, metricsAddr, stack.MetricsReaderNamespace, stack.MetricsReaderName)
	fmt.Fprintf(out, "Each stage moves on once its WECs' nginx pods are Ready (kwok runs them) and KubeStellar reports it.\n")
	fmt.Fprintf(out, "RolloutWave %s orders the WDSes %s: each starts a revision once the ones before completed it.\nPress Ctrl-C to stop.\n\n", WaveName, strings.Join(o.Spaces, " → "))
}

// follow prints every change of the rollouts, of the wave and of what the
// WECs run, and returns when ctx is done, or with an error if the stager
// stops.
func follow(ctx context.Context, out io.Writer, st *stack.Stack, hosting client.Client, stager *process.Process, spaces []*wds) error {
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
			return fmt.Errorf("the stager stopped: see its log, %s", stager.LogPath())
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
			done := policy.Status.Phase == v1alpha1.RolloutCompleted
			if done && policy.Status.CurrentRevision == "v1" && policy.Spec.SpecRevision() == "v1" {
				fmt.Fprintf(out, "%s %-5s revision v1 is everywhere: creating nginx-v2 (nginx:%s) beside it and setting spec.revision to v2\n",
					time.Now().Format("15:04:05"), w.name, revisionTags["v2"])
				if err := rollOutV2(ctx, w.client); err != nil {
					return fmt.Errorf("rolling out v2 in %s: %w", w.name, err)
				}
				done = false
			}
			if done && policy.Status.CurrentRevision == "v2" {
				completed++
			}
		}
		wave := &hostingv1alpha1.RolloutWave{}
		if err := hosting.Get(ctx, types.NamespacedName{Name: WaveName}, wave); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("reading RolloutWave %s: %w", WaveName, err)
		}
		if line := waveLine(wave, PolicyName); line != last["wave"] {
			last["wave"] = line
			fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05"), line)
		}
		if line, err := wecsLine(ctx, st, spaces); err == nil && line != last[""] {
			last[""] = line
			fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05"), line)
		}
		if completed == len(spaces) && !announced {
			announced = true
			fmt.Fprintf(out, "\nEvery rollout reached its final stage. Press Ctrl-C to stop.\n")
		}
	}
}

// rollOutV2 creates revision v2 of nginx beside v1 and points the policy at
// it, as docs/user-guide.md's "Rolling out a change" does with kubectl.
func rollOutV2(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, RevisionedDeployment("v2", revisionTags["v2"])); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	policy := &v1alpha1.StagedBindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: PolicyName}}
	patch := []byte(`{"spec":{"revision":{"name":"v2"}}}`)
	return c.Patch(ctx, policy, client.RawPatch(types.MergePatchType, patch))
}

// wecsLine renders what each WEC runs of the sample workload, read from its
// API server: the Deployment's image, its ready replicas and the WDSes whose
// ManifestWorks applied it.
func wecsLine(ctx context.Context, st *stack.Stack, spaces []*wds) (string, error) {
	parts := make([]string, 0, len(Clusters))
	for _, c := range Clusters {
		deps, err := st.RealWECs[c.Name].Deployments(ctx, WorkloadNamespace)
		if err != nil {
			return "", err
		}
		shown := make([]string, 0, len(deps))
		for _, d := range deps {
			var from []string
			for _, w := range spaces {
				if slices.ContainsFunc(d.ManifestWorks, func(mw string) bool { return strings.Contains(mw, "-"+w.name+"-") }) {
					from = append(from, w.name)
				}
			}
			shown = append(shown, fmt.Sprintf("%s[%s] %d/%d ready, from %s", d.Name, strings.Join(d.Images, ","), d.ReadyReplicas, d.Replicas, strings.Join(from, "+")))
		}
		if len(shown) == 0 {
			shown = append(shown, "-")
		}
		parts = append(parts, c.Name+" "+strings.Join(shown, ", "))
	}
	return "WECs: " + strings.Join(parts, " | "), nil
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
		runs := ""
		if update := policy.Status.UpdateRevision; update != "" {
			runs = "@" + st.Revision
			if st.Phase == v1alpha1.StageActive && st.Revision != update {
				runs += "→" + update
			}
		}
		stages = append(stages, fmt.Sprintf("%s %s%s", mark, st.Name, runs))
		if st.Name == policy.Status.ActiveStage {
			detail = st.Message
		}
	}
	c := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionWaitingForWave)
	held := c != nil && c.Status == metav1.ConditionTrue
	if held {
		detail = "held by the wave: " + c.Message
	}
	if len(stages) == 0 {
		if held { // before its first revision: no stage recorded yet
			return fmt.Sprintf("%-5s %-11s %s", space, policy.Status.Phase, detail)
		}
		return fmt.Sprintf("%-5s %s: waiting for the stager", space, policy.Name)
	}
	return fmt.Sprintf("%-5s %-11s [%s]  %s", space, policy.Status.Phase, strings.Join(stages, " → "), detail)
}

// waveLine renders a wave's progress over one policy, as the wave's status
// reports it: each step with its spaces, and each space's phase and
// revision of the policy ("→" when it rolls out a revision other than the
// one it completed last).
func waveLine(w *hostingv1alpha1.RolloutWave, policy string) string {
	steps := make([]string, 0, len(w.Spec.Steps))
	for i, step := range w.Spec.Steps {
		spaces := make([]string, 0, len(step.Spaces))
		for _, space := range step.Spaces {
			spaces = append(spaces, space+" "+spaceState(w, space, policy))
		}
		steps = append(steps, fmt.Sprintf("%d/%d %s [%s]", i+1, len(w.Spec.Steps), step.Name, strings.Join(spaces, ", ")))
	}
	return fmt.Sprintf("wave  %s: %s", w.Name, strings.Join(steps, " → "))
}

// spaceState renders what a space reports of a policy in a wave's status.
func spaceState(w *hostingv1alpha1.RolloutWave, space, policy string) string {
	i := slices.IndexFunc(w.Status.Spaces, func(r hostingv1alpha1.WaveSpaceReport) bool { return r.Space == space })
	if i < 0 {
		return "no report yet"
	}
	report := w.Status.Spaces[i]
	state := ""
	if !report.Engaged {
		state = "not served, "
	}
	j := slices.IndexFunc(report.Policies, func(p hostingv1alpha1.WavePolicyReport) bool { return p.Name == policy })
	if j < 0 {
		return state + "no policy " + policy
	}
	p := report.Policies[j]
	revision := p.Revision
	if p.CurrentRevision != "" && p.CurrentRevision != p.Revision {
		revision = p.CurrentRevision + "→" + p.Revision
	}
	if p.Phase == "" {
		return state + "no phase yet"
	}
	state += p.Phase
	if revision != "" {
		state += " " + revision
	}
	if len(p.FailedRevisions) > 0 {
		state += " (gave up " + strings.Join(p.FailedRevisions, ",") + ")"
	}
	return state
}

// errNoBinary is returned when the stager binary is missing.
var errNoBinary = errors.New("the stager binary does not exist; run `make build`")

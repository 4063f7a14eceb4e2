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

package dataplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/process"
)

const (
	// kwokNodeAnnotation marks the nodes kwok manages.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// NodeName is the name of each WEC's one (fake) node.
	NodeName = "kwok-node-0"
	// agentNamespace is the work agent's namespace in the WEC.
	agentNamespace = "open-cluster-management-agent"
	// notReadyStagePrefix starts the names of FailPods' Stage objects.
	notReadyStagePrefix = "stager-test-pods-not-ready-"
	// touchedAnnotation is what FailPods changes on a pod so that kwok
	// looks at it again.
	touchedAnnotation = "stager.kubestellar.io/touched"
	// readyTimeout bounds the wait for a new WEC's node and service account,
	// and FailPods' and RecoverPods' waits for their pods.
	readyTimeout = 2 * time.Minute
)

// kwokStages are kwok's own stages (files of its module) that every WEC runs:
// nodes come up and keep their lease, pods become Ready at once, finish and
// go away, as with kwok's defaults.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// WECOptions configure StartWEC.
type WECOptions struct {
	// Name is the WEC's name, its ManagedCluster's and its namespace's in
	// the ITS.
	Name string
	// Binaries are the data plane's programs (FindBinaries).
	Binaries Binaries
	// HubKubeconfig is the path of the ITS's kubeconfig, the work agent's
	// hub kubeconfig.
	HubKubeconfig string
	// ITS is a client of the ITS, for the status agent.
	ITS client.Client
	// WorkDir receives the WEC's kubeconfig and its programs' logs.
	WorkDir string
	// Logger receives the status agent's progress and errors.
	Logger logr.Logger
	// StatusInterval is the time between two passes of the status agent.
	// Default: DefaultStatusInterval.
	StatusInterval time.Duration
}

// WEC is a running Workload Execution Cluster started by StartWEC.
type WEC struct {
	// Name is the WEC's name.
	Name string
	// Space is its API server.
	Space *environment.Space
	// Kubeconfig is the path of its kubeconfig.
	Kubeconfig string
	// Status is its status agent.
	Status *StatusAgent

	procs      []*process.Process
	cancel     context.CancelFunc
	statusDone chan struct{}
	stopOnce   sync.Once
	stopErr    error
}

// StartWEC starts a WEC: its API server, kube-controller-manager,
// kube-scheduler, kwok with one fake node, OCM's work agent and the status
// agent. It returns once the node is Ready and the default service account
// exists. On failure, what it started is stopped again.
func StartWEC(ctx context.Context, o WECOptions) (_ *WEC, err error) {
	dir := filepath.Join(o.WorkDir, o.Name)
	crdDir := filepath.Join(dir, "crds")
	if err := os.MkdirAll(crdDir, 0o755); err != nil {
		return nil, fmt.Errorf("making %s: %w", crdDir, err)
	}
	if err := copyWECCRDs(crdDir); err != nil {
		return nil, fmt.Errorf("WEC %s: %w", o.Name, err)
	}
	space, err := environment.StartSpace(o.Name, environment.WithCRDDirs(crdDir))
	if err != nil {
		return nil, fmt.Errorf("starting the API server of WEC %s: %w", o.Name, err)
	}
	w := &WEC{Name: o.Name, Space: space}
	defer func() {
		if err != nil {
			err = errors.Join(err, w.Stop())
		}
	}()
	if w.Kubeconfig, err = writeFile(dir, "kubeconfig", space.Kubeconfig()); err != nil {
		return nil, err
	}
	if err := prepareWEC(ctx, space.Client); err != nil {
		return nil, fmt.Errorf("WEC %s: %w", o.Name, err)
	}
	logPath := func(program string) string { return filepath.Join(dir, program+".log") }
	for _, start := range []func() (*process.Process, error){
		func() (*process.Process, error) {
			return startKubeControllerManager(o.Binaries.KubeControllerManager, o.Name, w.Kubeconfig, logPath("kube-controller-manager"),
				"*,-serviceaccount-token,-nodeipam")
		},
		func() (*process.Process, error) {
			return startScheduler(o.Binaries.KubeScheduler, o.Name, w.Kubeconfig, logPath("kube-scheduler"))
		},
		func() (*process.Process, error) {
			return startKwok(o.Binaries.Kwok, o.Name, w.Kubeconfig, logPath("kwok"))
		},
		func() (*process.Process, error) {
			return startWorkAgent(ctx, o.Binaries.WorkAgent, o.Name, o.HubKubeconfig, w.Kubeconfig, logPath("ocm-work-agent"))
		},
	} {
		p, err := start()
		if err != nil {
			return nil, err
		}
		w.procs = append(w.procs, p)
	}
	if err := w.waitReady(ctx); err != nil {
		return nil, err
	}
	w.Status = NewStatusAgent(o.Name, space.Config, o.ITS, o.Logger.WithName("status-agent").WithValues("wec", o.Name), o.StatusInterval)
	statusCtx, cancel := context.WithCancel(context.Background())
	w.cancel, w.statusDone = cancel, make(chan struct{})
	go func() {
		defer close(w.statusDone)
		w.Status.Run(statusCtx)
	}()
	return w, nil
}

// copyWECCRDs copies the CRDs a WEC needs into dir: OCM's
// AppliedManifestWork and kwok's Stage.
func copyWECCRDs(dir string) error {
	work, err := WorkCRDDir()
	if err != nil {
		return err
	}
	kwok, err := kwokDir()
	if err != nil {
		return err
	}
	for _, src := range []string{
		filepath.Join(work, "0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml"),
		filepath.Join(kwok, "kustomize", "crd", "bases", "kwok.x-k8s.io_stages.yaml"),
	} {
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("reading a CRD: %w", err)
		}
		if _, err := writeFile(dir, filepath.Base(src), data); err != nil {
			return err
		}
	}
	return nil
}

// prepareWEC creates kwok's stages, the work agent's namespace and the fake
// node.
func prepareWEC(ctx context.Context, c client.Client) error {
	kwok, err := kwokDir()
	if err != nil {
		return err
	}
	for _, file := range kwokStages {
		data, err := os.ReadFile(filepath.Join(kwok, file))
		if err != nil {
			return fmt.Errorf("reading kwok's stage: %w", err)
		}
		stage := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &stage.Object); err != nil {
			return fmt.Errorf("parsing kwok's stage %s: %w", file, err)
		}
		if err := c.Create(ctx, stage); err != nil {
			return fmt.Errorf("creating kwok's stage %s: %w", stage.GetName(), err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNamespace}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", agentNamespace, err)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: NodeName},
		},
	}
	if err := c.Create(ctx, node); err != nil {
		return fmt.Errorf("creating node %s: %w", NodeName, err)
	}
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	if err := c.Status().Update(ctx, node); err != nil {
		return fmt.Errorf("writing the capacity of node %s: %w", NodeName, err)
	}
	return nil
}

// waitReady waits until kwok has made the node Ready and the service account
// controller has made the default namespace's service account, or one of
// the WEC's programs exits.
func (w *WEC) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, p := range w.procs {
			if p.Exited() {
				return false, fmt.Errorf("%s exited; log %s ends with:\n%s", p.Name(), p.LogPath(), p.Tail())
			}
		}
		var node corev1.Node
		if err := w.Space.Client.Get(ctx, client.ObjectKey{Name: NodeName}, &node); err != nil {
			return false, nil
		}
		ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		var sa corev1.ServiceAccount
		saErr := w.Space.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "default"}, &sa)
		return ready && saErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("WEC %s is not ready (its node Ready, its default service account made): %w", w.Name, err)
	}
	return nil
}

// PodLabel selects the pods of a namespace by one label, for FailPods and
// RecoverPods; the zero value selects every pod.
type PodLabel struct{ Key, Value string }

// FailPods makes the WEC's pods in namespace (those with the label, when
// given) stop being Ready, as failing readiness probes would: a kwok Stage
// turns every such pod, Ready or new, into a Running pod that is not Ready.
// It returns once no such pod is Ready, at once when there is none yet.
// RecoverPods, with the same label, undoes it.
func (w *WEC) FailPods(ctx context.Context, namespace string, label ...PodLabel) error {
	selected := podSelector(label)
	stage := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(fmt.Sprintf(notReadyStage, notReadyStageName(namespace, selected), namespace)), &stage.Object); err != nil {
		return fmt.Errorf("parsing the not-ready stage: %w", err)
	}
	if selected.Key != "" {
		expressions, _, _ := unstructured.NestedSlice(stage.Object, "spec", "selector", "matchExpressions")
		expressions = append(expressions, map[string]any{
			"key": fmt.Sprintf(".metadata.labels[%q]", selected.Key), "operator": "In", "values": []any{selected.Value}})
		if err := unstructured.SetNestedSlice(stage.Object, expressions, "spec", "selector", "matchExpressions"); err != nil {
			return fmt.Errorf("selecting pods labelled %s=%s: %w", selected.Key, selected.Value, err)
		}
	}
	if err := w.Space.Client.Create(ctx, stage); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating kwok stage %s in WEC %s: %w", stage.GetName(), w.Name, err)
	}
	// kwok applies a new Stage only on a pod's next change: touch the Ready
	// pods until none is left.
	err := w.tendPods(ctx, namespace, func(pod *corev1.Pod) bool {
		if !podReady(pod) || !selected.matches(pod) {
			return true
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, touchedAnnotation, time.Now().Format(time.RFC3339Nano))
		_ = w.Space.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(patch)))
		return false
	})
	if err != nil {
		return fmt.Errorf("the pods of %s in WEC %s are still Ready: %w", namespace, w.Name, err)
	}
	return nil
}

// RecoverPods undoes FailPods with the same label: it deletes the Stage,
// then deletes the pods that the Stage made not Ready (their controllers
// replace them with pods kwok makes Ready) until every such pod is Ready. A
// replacement that kwok gave the Stage before it saw it go is deleted again.
func (w *WEC) RecoverPods(ctx context.Context, namespace string, label ...PodLabel) error {
	selected := podSelector(label)
	stage := &unstructured.Unstructured{}
	stage.SetAPIVersion("kwok.x-k8s.io/v1alpha1")
	stage.SetKind("Stage")
	stage.SetName(notReadyStageName(namespace, selected))
	if err := w.Space.Client.Delete(ctx, stage); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting kwok stage %s in WEC %s: %w", stage.GetName(), w.Name, err)
	}
	err := w.tendPods(ctx, namespace, func(pod *corev1.Pod) bool {
		if podReady(pod) || !selected.matches(pod) {
			return true
		}
		if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			_ = w.Space.Client.Delete(ctx, pod)
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("the pods of %s in WEC %s are not all Ready again: %w", namespace, w.Name, err)
	}
	return nil
}

// podSelector returns the one label given, or the zero PodLabel.
func podSelector(label []PodLabel) PodLabel {
	if len(label) == 0 {
		return PodLabel{}
	}
	return label[0]
}

// matches reports whether a pod carries the label (every pod, for none).
func (l PodLabel) matches(pod *corev1.Pod) bool {
	return l.Key == "" || pod.Labels[l.Key] == l.Value
}

// notReadyStageName names the Stage of FailPods for a namespace and label.
func notReadyStageName(namespace string, label PodLabel) string {
	if label.Key == "" {
		return notReadyStagePrefix + namespace
	}
	sum := sha256.Sum256([]byte(label.Key + "=" + label.Value))
	return notReadyStagePrefix + namespace + "-" + hex.EncodeToString(sum[:4])
}

// tendPods calls tend with every pod of namespace, every half second, until
// tend says each is as wanted (at once when there is none), or readyTimeout
// passes.
func (w *WEC) tendPods(ctx context.Context, namespace string, tend func(*corev1.Pod) bool) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := w.Space.Client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
			return false, nil
		}
		done := true
		for i := range pods.Items {
			if !tend(&pods.Items[i]) {
				done = false
			}
		}
		return done, nil
	})
}

// podReady says whether a pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// notReadyStage is a kwok Stage (name, namespace) that turns the pods of one
// namespace that are Pending or Running and Ready into Running, not Ready
// pods. Its weight makes kwok choose it over its own pod-ready stage, which
// also matches Pending pods.
const notReadyStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: %s
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.namespace'
      operator: 'In'
      values: [%q]
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending', 'Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['False']
  weight: 1
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ReadinessProbeFailed
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ with .spec.nodeName }}
      hostIP: {{ NodeIPWith . | Quote }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

// Deployment is what a WEC runs of one Deployment.
type Deployment struct {
	Namespace, Name string
	// Images are its pod template's container images.
	Images []string
	// Replicas, ReadyReplicas and AvailableReplicas are from its status.
	Replicas, ReadyReplicas, AvailableReplicas int32
	// ManifestWorks are the names of the ManifestWorks that applied it,
	// read from its owners (the work agent's AppliedManifestWorks, named
	// "<hub hash>-<ManifestWork>"), sorted.
	ManifestWorks []string
}

// Deployments returns the Deployments the WEC runs in namespace ("" for
// all), read from its API server, sorted by namespace and name.
func (w *WEC) Deployments(ctx context.Context, namespace string) ([]Deployment, error) {
	var list appsv1.DeploymentList
	if err := w.Space.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the Deployments of WEC %s: %w", w.Name, err)
	}
	out := make([]Deployment, 0, len(list.Items))
	for _, d := range list.Items {
		dep := Deployment{Namespace: d.Namespace, Name: d.Name, Replicas: d.Status.Replicas,
			ReadyReplicas: d.Status.ReadyReplicas, AvailableReplicas: d.Status.AvailableReplicas}
		for _, c := range d.Spec.Template.Spec.Containers {
			dep.Images = append(dep.Images, c.Image)
		}
		for _, o := range d.OwnerReferences {
			if _, work, ok := strings.Cut(o.Name, "-"); ok && o.Kind == "AppliedManifestWork" {
				dep.ManifestWorks = append(dep.ManifestWorks, work)
			}
		}
		slices.Sort(dep.ManifestWorks)
		out = append(out, dep)
	}
	slices.SortFunc(out, func(a, b Deployment) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// Stop stops the status agent, the WEC's programs and its API server.
// Calling it again is harmless.
func (w *WEC) Stop() error {
	w.stopOnce.Do(func() {
		if w.cancel != nil {
			w.cancel()
			<-w.statusDone
		}
		errs := make([]error, len(w.procs))
		var wg sync.WaitGroup
		for i, p := range w.procs {
			wg.Go(func() { errs[i] = p.Stop() })
		}
		wg.Wait()
		if w.Space != nil {
			errs = append(errs, w.Space.Stop())
		}
		w.stopErr = errors.Join(errs...)
	})
	return w.stopErr
}

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

package stagedbindingpolicy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// The tests of this file run the reconciler's reads (snapshot) and writes
// (apply) against a real kube-apiserver holding KubeStellar's and the
// stager's CRDs. The package's other tests are pure and run with -short,
// which starts no API server; these skip then. Every test uses its own object
// names, as the space is shared by the whole package.

// testSpace is the API server the package's tests share; nil with -short.
var testSpace *environment.Space

func TestMain(m *testing.M) { os.Exit(framework.Main(m, "stagedbindingpolicy", setUp)) }

// setUp starts the shared space, unless the tests run with -short.
func setUp(s *framework.Suite) error {
	if testing.Short() {
		return nil
	}
	scheme := environment.Scheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	space, err := environment.StartSpace("reconciler",
		environment.WithKubeStellarCRDs(), environment.WithStagerCRDs(), environment.WithScheme(scheme))
	if err != nil {
		return err
	}
	s.Defer(space.Stop)
	testSpace = space
	return nil
}

// objectNames counts the uses of each name of each kind of object in this
// process, so that -count=N runs each test against the shared space under
// fresh names.
var objectNames = struct {
	sync.Mutex
	uses map[string]int
}{uses: map[string]int{}}

// objectName returns base on its first use for that kind of object in the
// process and base-<n> on its n-th.
func objectName(kind, base string) string {
	objectNames.Lock()
	defer objectNames.Unlock()
	key := kind + "/" + base
	objectNames.uses[key]++
	if n := objectNames.uses[key]; n > 1 {
		return fmt.Sprintf("%s-%d", base, n)
	}
	return base
}

// needsAPIServer skips a test that needs the shared space when the tests run
// with -short.
func needsAPIServer(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a kube-apiserver; run without -short (make test)")
	}
}

// newTestReconciler returns a reconciler writing straight to the shared
// space (no cache), whose clock shows clockTime.
func newTestReconciler(t *testing.T, clockTime time.Time) *Reconciler {
	t.Helper()
	return &Reconciler{
		Space:    "reconciler",
		Client:   testSpace.Client,
		Recorder: events.NewFakeRecorder(100),
		Engine:   rollouttest.NewEngine(t),
		Clock:    clocktesting.NewFakePassiveClock(clockTime),
	}
}

// createPolicy creates a policy named after base (objectName) with the
// default stages (dev, test, prod) and the given finalizers, and returns it
// as the API server stored it.
func createPolicy(t *testing.T, base string, finalizers ...string) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	name := objectName("StagedBindingPolicy", base)
	p := rollouttest.NewPolicy()
	p.Name, p.UID, p.Generation, p.Finalizers = name, "", 0, finalizers
	if err := testSpace.Client.Create(t.Context(), p); err != nil {
		t.Fatalf("creating StagedBindingPolicy %s: %v", name, err)
	}
	return p
}

// startPolicy records through the status subresource that the policy's
// rollout is at the named stage.
func startPolicy(t *testing.T, p *v1alpha1.StagedBindingPolicy, active string) {
	t.Helper()
	p.Status = v1alpha1.StagedBindingPolicyStatus{ActiveStage: active, Phase: v1alpha1.RolloutProgressing}
	if err := testSpace.Client.Status().Update(t.Context(), p); err != nil {
		t.Fatalf("recording the active stage %s of %s: %v", active, p.Name, err)
	}
}

// createBP creates the BindingPolicy of a stage of p as the policy generates
// it (labelled for p, owned by p) and returns it as stored.
func createBP(t *testing.T, p *v1alpha1.StagedBindingPolicy, stageName string) *ksv1alpha1.BindingPolicy {
	t.Helper()
	bp := rollouttest.OwnedBP(p, stageName, "")
	bp.ResourceVersion, bp.Generation, bp.Status = "", 0, ksv1alpha1.BindingPolicyStatus{}
	if err := testSpace.Client.Create(t.Context(), bp); err != nil {
		t.Fatalf("creating BindingPolicy %s: %v", bp.Name, err)
	}
	return bp
}

// createNamespace creates a namespace named after base (objectName) for a
// test's namespaced objects and returns its name.
func createNamespace(t *testing.T, base string) string {
	t.Helper()
	name := objectName("Namespace", base)
	if err := testSpace.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// createCombinedStatus creates KubeStellar's CombinedStatus of o under bp in
// the given namespace, labelled with bp's name.
func createCombinedStatus(t *testing.T, bp *ksv1alpha1.BindingPolicy, o rollouttest.WorkloadObject, namespace string) *ksv1alpha1.CombinedStatus {
	t.Helper()
	cs := rollouttest.CombinedStatus(bp, o, "1")
	cs.Namespace = namespace
	if err := testSpace.Client.Create(t.Context(), &cs); err != nil {
		t.Fatalf("creating CombinedStatus %s/%s: %v", cs.Namespace, cs.Name, err)
	}
	return &cs
}

// createBinding creates KubeStellar's Binding of bp, named after it.
func createBinding(t *testing.T, bp *ksv1alpha1.BindingPolicy) *ksv1alpha1.Binding {
	t.Helper()
	b := rollouttest.BindingFor(bp)
	b.UID = ""
	if err := testSpace.Client.Create(t.Context(), b); err != nil {
		t.Fatalf("creating Binding %s: %v", b.Name, err)
	}
	return b
}

func getPolicy(t *testing.T, name string) *v1alpha1.StagedBindingPolicy {
	t.Helper()
	p := &v1alpha1.StagedBindingPolicy{}
	if err := testSpace.Client.Get(t.Context(), types.NamespacedName{Name: name}, p); err != nil {
		t.Fatalf("reading StagedBindingPolicy %s: %v", name, err)
	}
	return p
}

func getBP(t *testing.T, name string) *ksv1alpha1.BindingPolicy {
	t.Helper()
	bp := &ksv1alpha1.BindingPolicy{}
	if err := testSpace.Client.Get(t.Context(), types.NamespacedName{Name: name}, bp); err != nil {
		t.Fatalf("reading BindingPolicy %s: %v", name, err)
	}
	return bp
}

// bpGone reports whether the BindingPolicy of that name is not found.
func bpGone(t *testing.T, name string) bool {
	t.Helper()
	err := testSpace.Client.Get(t.Context(), types.NamespacedName{Name: name}, &ksv1alpha1.BindingPolicy{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("reading BindingPolicy %s: %v", name, err)
	}
	return apierrors.IsNotFound(err)
}

// bumpPolicy makes another write to the policy (a label), so that a copy
// read before it is stale.
func bumpPolicy(t *testing.T, name string) {
	t.Helper()
	p := getPolicy(t, name)
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels["bumped"] = p.ResourceVersion
	if err := testSpace.Client.Update(t.Context(), p); err != nil {
		t.Fatalf("updating StagedBindingPolicy %s: %v", name, err)
	}
}

func csNames(statuses []ksv1alpha1.CombinedStatus) []string {
	names := make([]string, 0, len(statuses))
	for _, cs := range statuses {
		names = append(names, cs.Namespace+"/"+cs.Name)
	}
	slices.Sort(names)
	return names
}

func sortedBPNames(bps []ksv1alpha1.BindingPolicy) []string {
	names := rollouttest.BindingPolicyNames(bps)
	slices.Sort(names)
	return names
}

// ---------------------------------------------------------------------------
// snapshot
// ---------------------------------------------------------------------------

func TestSnapshotOfStartedPolicyReadsItsObjectsAroundTheActiveStage(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := createPolicy(t, "snap-started")
	startPolicy(t, p, "test")
	other := createPolicy(t, "snap-started-other")

	devBP := createBP(t, p, "dev")
	activeBP := createBP(t, p, "test")
	nextBP := createBP(t, p, "prod")
	otherBP := createBP(t, other, "test") // another policy's: not listed
	binding := createBinding(t, activeBP)
	createBinding(t, devBP) // named after a stage that is not active: not read
	createBinding(t, otherBP)
	nsA := createNamespace(t, "snap-started-a")
	nsB := createNamespace(t, "snap-started-b")
	// KubeStellar labels the CombinedStatuses of the active BindingPolicy, in
	// the namespaces of their workload objects (and kubestellar-report).
	want := []*ksv1alpha1.CombinedStatus{
		createCombinedStatus(t, activeBP, rollouttest.Deployment, nsA),
		createCombinedStatus(t, activeBP, rollouttest.ConfigMap, nsB),
	}
	createCombinedStatus(t, devBP, rollouttest.Deployment, nsA)
	createCombinedStatus(t, otherBP, rollouttest.Deployment, nsA)
	createCombinedStatus(t, otherBP, rollouttest.ConfigMap, nsB)

	clockTime := time.Date(2026, 3, 1, 12, 0, 0, 999_000_000, time.UTC)
	r := newTestReconciler(t, clockTime)
	snap, err := r.snapshot(ctx, types.NamespacedName{Name: p.Name})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if snap == nil {
		t.Fatal("snapshot of an existing policy is nil")
	}

	if snap.Policy.Name != p.Name || snap.Policy.UID != p.UID || snap.Policy.ResourceVersion != p.ResourceVersion {
		t.Errorf("Policy = %s (uid %s, resourceVersion %s), want %s (uid %s, resourceVersion %s)",
			snap.Policy.Name, snap.Policy.UID, snap.Policy.ResourceVersion, p.Name, p.UID, p.ResourceVersion)
	}
	if snap.Policy.Status.ActiveStage != "test" {
		t.Errorf("Policy.Status.ActiveStage = %q, want %q", snap.Policy.Status.ActiveStage, "test")
	}
	if got, want := sortedBPNames(snap.BindingPolicies), []string{devBP.Name, nextBP.Name, activeBP.Name}; !slices.Equal(got, want) {
		t.Errorf("BindingPolicies = %v, want %v (the policy's own, not %s)", got, want, otherBP.Name)
	}
	if snap.ActiveBindingPolicy == nil {
		t.Errorf("ActiveBindingPolicy = nil, want %s", activeBP.Name)
	} else if snap.ActiveBindingPolicy.Name != activeBP.Name || snap.ActiveBindingPolicy.UID != activeBP.UID {
		t.Errorf("ActiveBindingPolicy = %s (uid %s), want %s (uid %s)",
			snap.ActiveBindingPolicy.Name, snap.ActiveBindingPolicy.UID, activeBP.Name, activeBP.UID)
	}
	if snap.NextBindingPolicy == nil || snap.NextBindingPolicy.UID != nextBP.UID {
		t.Errorf("NextBindingPolicy = %v, want %s (uid %s)", snap.NextBindingPolicy, nextBP.Name, nextBP.UID)
	}
	switch {
	case snap.Binding == nil:
		t.Errorf("Binding = nil, want %s", binding.Name)
	case snap.Binding.Name != binding.Name || snap.Binding.UID != binding.UID:
		t.Errorf("Binding = %s (uid %s), want %s (uid %s)", snap.Binding.Name, snap.Binding.UID, binding.Name, binding.UID)
	case !equality.Semantic.DeepEqual(snap.Binding.Spec, binding.Spec):
		t.Errorf("Binding spec = %+v, want the one created: %+v", snap.Binding.Spec, binding.Spec)
	}
	var wantNames []string
	for _, cs := range want {
		wantNames = append(wantNames, cs.Namespace+"/"+cs.Name)
	}
	slices.Sort(wantNames)
	if got := csNames(snap.CombinedStatuses); !slices.Equal(got, wantNames) {
		t.Errorf("CombinedStatuses = %v, want %v (those labelled %s=%s, in every namespace)",
			got, wantNames, rollout.StatusLabelBindingPolicy, activeBP.Name)
	}
	for _, cs := range snap.CombinedStatuses {
		if len(cs.Results) != 1 || cs.Results[0].Name != "deployments-aggregator" {
			t.Errorf("CombinedStatus %s/%s results = %+v, want the deployments-aggregator result", cs.Namespace, cs.Name, cs.Results)
		}
	}
	wantNow := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if !snap.Now.Time.Equal(wantNow) {
		t.Errorf("Now = %s, want the clock's time truncated to the second, %s", snap.Now.UTC().Format(time.RFC3339Nano), wantNow.Format(time.RFC3339Nano))
	}
}

func TestSnapshotOfMissingPolicyIsNil(t *testing.T) {
	needsAPIServer(t)
	r := newTestReconciler(t, time.Now())
	snap, err := r.snapshot(t.Context(), types.NamespacedName{Name: "snap-missing"})
	if err != nil || snap != nil {
		t.Fatalf("snapshot of a missing policy = %+v, %v; want nil, nil", snap, err)
	}
}

// assertOnlyPolicyAndBindingPolicies checks a snapshot that must hold the
// policy and its BindingPolicies and nothing around an active stage.
func assertOnlyPolicyAndBindingPolicies(t *testing.T, snap *rollout.Snapshot, p *v1alpha1.StagedBindingPolicy, bpNames ...string) {
	t.Helper()
	if snap == nil {
		t.Fatal("snapshot of an existing policy is nil")
	}
	if snap.Policy.Name != p.Name || snap.Policy.UID != p.UID {
		t.Errorf("Policy = %s (uid %s), want %s (uid %s)", snap.Policy.Name, snap.Policy.UID, p.Name, p.UID)
	}
	slices.Sort(bpNames)
	if got := sortedBPNames(snap.BindingPolicies); !slices.Equal(got, bpNames) {
		t.Errorf("BindingPolicies = %v, want %v", got, bpNames)
	}
	if snap.ActiveBindingPolicy != nil {
		t.Errorf("ActiveBindingPolicy = %s, want nil", snap.ActiveBindingPolicy.Name)
	}
	if snap.Binding != nil {
		t.Errorf("Binding = %s, want nil", snap.Binding.Name)
	}
	if len(snap.CombinedStatuses) != 0 {
		t.Errorf("CombinedStatuses = %v, want none", csNames(snap.CombinedStatuses))
	}
}

func TestSnapshotOfPolicyNotStartedReadsOnlyPolicyAndBindingPolicies(t *testing.T) {
	needsAPIServer(t)
	r := newTestReconciler(t, time.Now())
	for _, tc := range []struct {
		name   string
		active string // the recorded active stage: none, or one removed from the spec
	}{
		{name: "snap-not-started"},
		{name: "snap-stage-removed", active: "staging"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := createPolicy(t, tc.name)
			if tc.active != "" {
				startPolicy(t, p, tc.active)
			}
			// Everything named after the first stage, which the rollout
			// starts at, is there; none of it may be read yet.
			devBP := createBP(t, p, "dev")
			createBinding(t, devBP)
			createCombinedStatus(t, devBP, rollouttest.Deployment, createNamespace(t, tc.name))

			snap, err := r.snapshot(t.Context(), types.NamespacedName{Name: p.Name})
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			assertOnlyPolicyAndBindingPolicies(t, snap, p, devBP.Name)
		})
	}
}

func TestSnapshotOfPolicyBeingDeletedReadsOnlyPolicyAndBindingPolicies(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := createPolicy(t, "snap-deleting", v1alpha1.CleanupFinalizer)
	startPolicy(t, p, "dev")
	devBP := createBP(t, p, "dev")
	createBinding(t, devBP)
	createCombinedStatus(t, devBP, rollouttest.Deployment, createNamespace(t, "snap-deleting"))
	if err := testSpace.Client.Delete(ctx, p); err != nil {
		t.Fatalf("deleting %s: %v", p.Name, err)
	}

	r := newTestReconciler(t, time.Now())
	snap, err := r.snapshot(ctx, types.NamespacedName{Name: p.Name})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if snap != nil && snap.Policy.DeletionTimestamp == nil {
		t.Fatalf("policy %s has no deletionTimestamp after its deletion", p.Name)
	}
	assertOnlyPolicyAndBindingPolicies(t, snap, p, devBP.Name)
}

// ---------------------------------------------------------------------------
// apply
// ---------------------------------------------------------------------------

func TestApplyAddFinalizer(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "apply-add-finalizer", "example.com/hold")

	if _, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionAddFinalizer}); err != nil {
		t.Fatalf("AddFinalizer: %v", err)
	}
	got := getPolicy(t, p.Name)
	if want := []string{"example.com/hold", v1alpha1.CleanupFinalizer}; !slices.Equal(got.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v (the other finalizer kept)", got.Finalizers, want)
	}
	if !equality.Semantic.DeepEqual(got.Spec, p.Spec) {
		t.Errorf("spec changed by AddFinalizer:\n got %+v\nwant %+v", got.Spec, p.Spec)
	}

	// A copy read before another write is stale: the patch must not
	// overwrite the list of finalizers written since.
	stale := createPolicy(t, "apply-add-finalizer-stale")
	bumpPolicy(t, stale.Name)
	_, err := r.apply(ctx, stale, rollout.Action{Type: rollout.ActionAddFinalizer})
	if !apierrors.IsConflict(err) {
		t.Fatalf("AddFinalizer on a stale policy: error %v, want a Conflict", err)
	}
	if got := getPolicy(t, stale.Name); len(got.Finalizers) != 0 {
		t.Errorf("finalizers after a conflicting AddFinalizer = %v, want none", got.Finalizers)
	}
}

func TestApplyRemoveFinalizer(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "apply-remove-finalizer", v1alpha1.CleanupFinalizer, "example.com/hold")

	if _, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionRemoveFinalizer}); err != nil {
		t.Fatalf("RemoveFinalizer: %v", err)
	}
	if got := getPolicy(t, p.Name); !slices.Equal(got.Finalizers, []string{"example.com/hold"}) {
		t.Errorf("finalizers = %v, want [example.com/hold] (only the stager's removed)", got.Finalizers)
	}

	// The real case: the last finalizer of a policy being deleted goes and
	// the policy with it.
	deleting := createPolicy(t, "apply-remove-finalizer-deleting", v1alpha1.CleanupFinalizer)
	if err := testSpace.Client.Delete(ctx, deleting); err != nil {
		t.Fatalf("deleting %s: %v", deleting.Name, err)
	}
	deleting = getPolicy(t, deleting.Name)
	if _, err := r.apply(ctx, deleting, rollout.Action{Type: rollout.ActionRemoveFinalizer}); err != nil {
		t.Fatalf("RemoveFinalizer on a policy being deleted: %v", err)
	}
	err := testSpace.Client.Get(ctx, types.NamespacedName{Name: deleting.Name}, &v1alpha1.StagedBindingPolicy{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("policy being deleted after RemoveFinalizer: error %v, want NotFound", err)
	}

	stale := createPolicy(t, "apply-remove-finalizer-stale", v1alpha1.CleanupFinalizer)
	bumpPolicy(t, stale.Name)
	_, err = r.apply(ctx, stale, rollout.Action{Type: rollout.ActionRemoveFinalizer})
	if !apierrors.IsConflict(err) {
		t.Fatalf("RemoveFinalizer on a stale policy: error %v, want a Conflict", err)
	}
	if got := getPolicy(t, stale.Name); !slices.Equal(got.Finalizers, []string{v1alpha1.CleanupFinalizer}) {
		t.Errorf("finalizers after a conflicting RemoveFinalizer = %v, want the stager's kept", got.Finalizers)
	}
}

func TestApplyCreateBindingPolicy(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "apply-create-bp", v1alpha1.CleanupFinalizer)

	if _, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionCreateBindingPolicy, BindingPolicy: rollout.DesiredBindingPolicy(p, p.Spec.Stages[0])}); err != nil {
		t.Fatalf("CreateBindingPolicy: %v", err)
	}
	want := rollout.DesiredBindingPolicy(p, p.Spec.Stages[0])
	got := getBP(t, want.Name)
	if !rollout.BindingPolicyInSync(got, want) {
		t.Errorf("created BindingPolicy differs from the desired one:\n got labels %v owners %+v spec %+v\nwant labels %v owners %+v spec %+v",
			got.Labels, got.OwnerReferences, got.Spec, want.Labels, want.OwnerReferences, want.Spec)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != p.UID {
		t.Errorf("owner references = %+v, want the policy (uid %s)", got.OwnerReferences, p.UID)
	}

	_, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionCreateBindingPolicy, BindingPolicy: rollout.DesiredBindingPolicy(p, p.Spec.Stages[0])})
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("second CreateBindingPolicy: error %v, want AlreadyExists", err)
	}
}

func TestApplyUpdateBindingPolicy(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "apply-update-bp", v1alpha1.CleanupFinalizer)
	current := createBP(t, p, "dev")
	stale := current.DeepCopy()

	// The stage now selects other clusters; Plan brings the BindingPolicy in line.
	p.Spec.Stages[0].ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "canary"}}}
	desired := rollout.DesiredBindingPolicy(p, p.Spec.Stages[0])
	updated := current.DeepCopy()
	updated.Labels = rollout.MergeLabels(updated.Labels, desired.Labels)
	updated.OwnerReferences = desired.OwnerReferences
	updated.Spec = desired.Spec
	if _, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionUpdateBindingPolicy, BindingPolicy: updated}); err != nil {
		t.Fatalf("UpdateBindingPolicy: %v", err)
	}
	got := getBP(t, current.Name)
	if !equality.Semantic.DeepEqual(got.Spec, desired.Spec) {
		t.Errorf("spec after UpdateBindingPolicy = %+v, want %+v", got.Spec, desired.Spec)
	}
	if got.UID != current.UID {
		t.Errorf("uid = %s, want %s: the BindingPolicy was replaced, not updated", got.UID, current.UID)
	}

	// An update built from a copy read before the last write conflicts.
	stale.Spec = desired.Spec
	stale.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "stale"}}}
	_, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionUpdateBindingPolicy, BindingPolicy: stale})
	if !apierrors.IsConflict(err) {
		t.Errorf("UpdateBindingPolicy from a stale copy: error %v, want a Conflict", err)
	}
	if got := getBP(t, current.Name); !equality.Semantic.DeepEqual(got.Spec, desired.Spec) {
		t.Errorf("spec after a conflicting UpdateBindingPolicy = %+v, want %+v", got.Spec, desired.Spec)
	}
}

func TestApplyDeleteBindingPolicy(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "apply-delete-bp", v1alpha1.CleanupFinalizer)
	bp := createBP(t, p, "dev")

	if _, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionDeleteBindingPolicy, BindingPolicy: bp.DeepCopy()}); err != nil {
		t.Fatalf("DeleteBindingPolicy: %v", err)
	}
	if !bpGone(t, bp.Name) {
		t.Errorf("BindingPolicy %s still there after DeleteBindingPolicy", bp.Name)
	}
	// The cache may lag: deleting a BindingPolicy already gone is done.
	if _, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionDeleteBindingPolicy, BindingPolicy: bp.DeepCopy()}); err != nil {
		t.Errorf("DeleteBindingPolicy of a BindingPolicy already gone: %v, want no error", err)
	}
}

func TestApplyDeleteBindingPolicyKeepsARecreatedOne(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "apply-delete-bp-uid", v1alpha1.CleanupFinalizer)
	old := createBP(t, p, "dev")
	if err := testSpace.Client.Delete(ctx, old.DeepCopy()); err != nil {
		t.Fatalf("deleting BindingPolicy %s: %v", old.Name, err)
	}
	// Someone re-creates it under the same name: a new object, a new UID.
	recreated := createBP(t, p, "dev")
	if recreated.UID == old.UID {
		t.Fatalf("re-created BindingPolicy has the old uid %s", old.UID)
	}

	// An action planned from a snapshot that still held the old one.
	_, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionDeleteBindingPolicy, BindingPolicy: old.DeepCopy()})
	if !apierrors.IsConflict(err) {
		t.Errorf("DeleteBindingPolicy with the old uid: error %v, want a Conflict (failed UID precondition)", err)
	}
	if bpGone(t, recreated.Name) {
		t.Fatalf("the re-created BindingPolicy %s (uid %s) was deleted by an action for uid %s", recreated.Name, recreated.UID, old.UID)
	}
	if got := getBP(t, recreated.Name); got.UID != recreated.UID {
		t.Errorf("BindingPolicy %s has uid %s, want the re-created %s", got.Name, got.UID, recreated.UID)
	}
}

func TestApplyUpdateStatus(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "apply-update-status", v1alpha1.CleanupFinalizer)
	stored := p.DeepCopy()

	started := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	status := &v1alpha1.StagedBindingPolicyStatus{
		ObservedGeneration: p.Generation,
		ActiveStage:        "dev",
		Phase:              v1alpha1.RolloutProgressing,
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonBindingPolicyPending, Message: "creating", LastTransitionTime: started, ObservedGeneration: p.Generation}},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageActive, StartTime: &started, BindingPolicy: v1alpha1.StagePlacement(p.Name, "dev").String()},
			{Name: "test", Phase: v1alpha1.StagePending},
			{Name: "prod", Phase: v1alpha1.StagePending},
		},
	}
	// The policy handed to apply differs in its spec: only the status may land.
	policy := p.DeepCopy()
	policy.Spec.Stages = policy.Spec.Stages[:1]
	before := policy.DeepCopy()
	if _, err := r.apply(ctx, policy, rollout.Action{Type: rollout.ActionUpdateStatus, Status: status.DeepCopy()}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	got := getPolicy(t, p.Name)
	if !equality.Semantic.DeepEqual(got.Status, *status) {
		t.Errorf("status after UpdateStatus:\n got %+v\nwant %+v", got.Status, *status)
	}
	if !equality.Semantic.DeepEqual(got.Spec, stored.Spec) || got.Generation != stored.Generation {
		t.Errorf("spec after UpdateStatus = %+v (generation %d), want it untouched: %+v (generation %d)",
			got.Spec, got.Generation, stored.Spec, stored.Generation)
	}
	// The reconciler compares the policy's status before and after the
	// change (CompletedStages): apply must not write into its policy.
	if !equality.Semantic.DeepEqual(policy, before) {
		t.Errorf("apply changed the policy it was given:\n got %+v\nwant %+v", policy, before)
	}

	// The status is the rollout's state: a stale copy must not overwrite it.
	status.ActiveStage = "test"
	_, err := r.apply(ctx, p, rollout.Action{Type: rollout.ActionUpdateStatus, Status: status.DeepCopy()})
	if !apierrors.IsConflict(err) {
		t.Errorf("UpdateStatus from a stale policy: error %v, want a Conflict", err)
	}
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "dev" {
		t.Errorf("active stage after a conflicting UpdateStatus = %q, want %q", got.Status.ActiveStage, "dev")
	}
}

func TestApplyUnknownActionFails(t *testing.T) {
	// No API server: an unknown action must fail before any request.
	r := &Reconciler{}
	p := rollouttest.NewPolicy()
	for _, actionType := range []rollout.ActionType{"Bogus", rollout.ActionNone} {
		_, err := r.apply(t.Context(), p, rollout.Action{Type: actionType})
		if err == nil || !strings.Contains(err.Error(), string(actionType)) {
			t.Errorf("apply %q: error %v, want an unknown action error naming it", actionType, err)
		}
	}
}

// ---------------------------------------------------------------------------
// Reconcile
// ---------------------------------------------------------------------------

func TestReconcileNewPolicyAddsFinalizerAndRequeues(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "reconcile-new")

	result, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if result.RequeueAfter <= 0 {
		t.Errorf("result = %+v, want a requeue", result)
	}
	// A run queued at low priority (a BindingPolicy's event) does not keep
	// its timers there.
	if result.Priority == nil || *result.Priority != 0 {
		t.Errorf("result priority %v, want 0", result.Priority)
	}
	got := getPolicy(t, p.Name)
	if !slices.Equal(got.Finalizers, []string{v1alpha1.CleanupFinalizer}) {
		t.Errorf("finalizers = %v, want [%s]", got.Finalizers, v1alpha1.CleanupFinalizer)
	}
	// One change per run: nothing placed, no status written yet.
	if !equality.Semantic.DeepEqual(got.Status, v1alpha1.StagedBindingPolicyStatus{}) {
		t.Errorf("status = %+v, want none after the first run", got.Status)
	}
	bps := &ksv1alpha1.BindingPolicyList{}
	if err := testSpace.Client.List(ctx, bps, client.MatchingLabels{v1alpha1.PolicyLabel: p.Name}); err != nil {
		t.Fatalf("listing BindingPolicies: %v", err)
	}
	if len(bps.Items) != 0 {
		t.Errorf("BindingPolicies = %v, want none after the first run", rollouttest.BindingPolicyNames(bps.Items))
	}
}

func TestReconcileDeletedPolicyDoesNothing(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	r := newTestReconciler(t, time.Now())
	p := createPolicy(t, "reconcile-gone")
	if err := testSpace.Client.Delete(ctx, p); err != nil {
		t.Fatalf("deleting %s: %v", p.Name, err)
	}

	result, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	if err != nil || result != (reconcile.Result{}) {
		t.Errorf("Reconcile of a deleted policy = %+v, %v; want an empty result and no error", result, err)
	}
}

// devDone records policy p's stage dev active and makes it done, as
// KubeStellar would report it: dev's BindingPolicy resolved into a Binding
// and a CombinedStatus that satisfies dev's condition. It returns dev's
// BindingPolicy.
func devDone(t *testing.T, p *v1alpha1.StagedBindingPolicy, base string) *ksv1alpha1.BindingPolicy {
	t.Helper()
	ctx := t.Context()
	rollouttest.AtStage(p, "dev")
	if err := testSpace.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("recording stage dev active: %v", err)
	}
	devBP := createBP(t, p, "dev")
	devBP.Status.ObservedGeneration = devBP.Generation
	if err := testSpace.Client.Status().Update(ctx, devBP); err != nil {
		t.Fatalf("recording BindingPolicy %s observed: %v", devBP.Name, err)
	}
	createBinding(t, devBP)
	createCombinedStatus(t, devBP, rollouttest.Deployment, createNamespace(t, base))
	return devBP
}

// TestReconcileHandsOverBeforeRecordingTheAdvance checks that the run that
// finds a stage done creates the next stage's BindingPolicy, marked with
// the done stage's start, and writes nothing else; the next run records the
// advance, keeping the done stage's BindingPolicy until the next stage
// places.
func TestReconcileHandsOverBeforeRecordingTheAdvance(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := createPolicy(t, "reconcile-advance", v1alpha1.CleanupFinalizer)
	devBP := devDone(t, p, "reconcile-advance")

	r := newTestReconciler(t, time.Now())
	run := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	run()
	testBP := &ksv1alpha1.BindingPolicy{}
	if err := testSpace.Client.Get(ctx, types.NamespacedName{Name: p.Name + ".stage.test"}, testBP); err != nil {
		t.Fatalf("BindingPolicy %s.stage.test after the run that found dev done: %v", p.Name, err)
	}
	if mark := testBP.Annotations[v1alpha1.HandedOverFromAnnotation]; !strings.HasPrefix(mark, "dev@") {
		t.Errorf("%s = %q, want dev's start", v1alpha1.HandedOverFromAnnotation, mark)
	}
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "dev" {
		t.Errorf("active stage %q after the handover, want dev until the next run records it", got.Status.ActiveStage)
	}

	// The next run (the BindingPolicy's event queues it) records the advance.
	run()
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "test" {
		t.Fatalf("active stage %q after the second run, want test", got.Status.ActiveStage)
	}
	if bpGone(t, devBP.Name) {
		t.Errorf("BindingPolicy %s was deleted (make-before-break waits for the next stage's Binding)", devBP.Name)
	}
}

// laggingClient returns a client that writes to the test space and reads
// from a real informer cache of it, synced now and then stopped: a cache
// that has not seen anything written from now on.
func laggingClient(t *testing.T) client.Client {
	t.Helper()
	frozen, err := cache.New(testSpace.Config, cache.Options{Scheme: testSpace.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	for _, obj := range WatchedObjects() {
		if _, err := frozen.GetInformer(ctx, obj); err != nil {
			t.Fatalf("informer for %T: %v", obj, err)
		}
	}
	go func() { _ = frozen.Start(ctx) }()
	if !frozen.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	lagging, err := client.New(testSpace.Config, client.Options{Scheme: testSpace.Client.Scheme(),
		Cache: &client.CacheOptions{Reader: frozen}})
	if err != nil {
		t.Fatal(err)
	}
	return lagging
}

// TestReconcileReadsItsOwnCreatesBeforeTheCache runs the reconciler on a
// cache that stopped before the handover (a real informer cache, synced and
// then stopped: a cache lagging behind the API server): the run after the
// handover records the advance, through the BindingPolicy it knows it
// created, instead of creating it again (AlreadyExists).
func TestReconcileReadsItsOwnCreatesBeforeTheCache(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := createPolicy(t, "reconcile-own-creates", v1alpha1.CleanupFinalizer)
	devDone(t, p, "reconcile-own-creates")

	r := newTestReconciler(t, time.Now())
	r.Client = laggingClient(t)
	for run := 1; run <= 2; run++ {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "test" {
		t.Errorf("active stage %q after the handover and the next run, on a cache without test's BindingPolicy, want test", got.Status.ActiveStage)
	}
}

// TestReconcileReadsItsOwnDeletesBeforeTheCache withdraws a handover (test
// was handed over, then its approval made Required) on a cache that stopped
// before the delete: the next run sees test's BindingPolicy being deleted
// and records dev's advance to the gate, instead of deleting it again.
func TestReconcileReadsItsOwnDeletesBeforeTheCache(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()
	p := createPolicy(t, "reconcile-own-deletes", v1alpha1.CleanupFinalizer)
	p.Spec.Stages[1].Approval = v1alpha1.ApprovalRequired
	if err := testSpace.Client.Update(ctx, p); err != nil {
		t.Fatalf("making test's approval Required: %v", err)
	}
	devDone(t, p, "reconcile-own-deletes")
	testBP := rollouttest.OwnedBP(p, "test", "")
	testBP.ResourceVersion, testBP.Generation, testBP.Status = "", 0, ksv1alpha1.BindingPolicyStatus{}
	testBP.Annotations = map[string]string{v1alpha1.HandedOverFromAnnotation: rollout.HandoverKey{}.Mark(p.UID, "dev", rollouttest.Earlier.Time)}
	if err := testSpace.Client.Create(ctx, testBP); err != nil {
		t.Fatalf("creating test's handed-over BindingPolicy: %v", err)
	}

	request := reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	// A run on fresh reads asks for test's approval first.
	if _, err := newTestReconciler(t, time.Now()).Reconcile(ctx, request); err != nil {
		t.Fatalf("the run that asks for approval: %v", err)
	}
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "dev" {
		t.Fatalf("active stage %q after asking for approval, want dev", got.Status.ActiveStage)
	}

	r := newTestReconciler(t, time.Now())
	r.Client = laggingClient(t)
	if _, err := r.Reconcile(ctx, request); err != nil {
		t.Fatalf("the run that withdraws the handover: %v", err)
	}
	if !bpGone(t, testBP.Name) {
		t.Fatalf("BindingPolicy %s still there after the run that withdraws it", testBP.Name)
	}
	if _, err := r.Reconcile(ctx, request); err != nil {
		t.Fatalf("the run after the withdrawal: %v", err)
	}
	if got := getPolicy(t, p.Name); got.Status.ActiveStage != "test" {
		t.Errorf("active stage %q after the run that followed the withdrawal, on a cache that still has test's BindingPolicy, want test (at its gate)",
			got.Status.ActiveStage)
	}
}

// selectedClient returns a client that writes to the test space and reads
// from a running informer cache of it narrowed as a space's is
// (NarrowCache), with the reconciler's indexes.
func selectedClient(t *testing.T) client.Client {
	t.Helper()
	selected, err := cache.New(testSpace.Config, NarrowCache(cache.Options{Scheme: testSpace.Client.Scheme()}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	if err := IndexFields(ctx, selected); err != nil {
		t.Fatal(err)
	}
	go func() { _ = selected.Start(ctx) }()
	if !selected.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	c, err := client.New(testSpace.Config, client.Options{Scheme: testSpace.Client.Scheme(),
		Cache: &client.CacheOptions{Reader: selected}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createForeignBP creates a BindingPolicy named name that no policy
// generated: not labelled, not owned.
func createForeignBP(t *testing.T, name string) {
	t.Helper()
	bp := &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := testSpace.Client.Create(t.Context(), bp); err != nil {
		t.Fatalf("creating BindingPolicy %s: %v", name, err)
	}
}

// TestReconcileSeesForeignBindingPoliciesTheCacheDoesNotHold runs the
// reconciler on a cache narrowed as a space's (NarrowCache), which never
// holds a BindingPolicy that no policy generated: one that takes the name of
// the active stage's BindingPolicy blocks the rollout (BindingPolicyConflict)
// as it does when the cache holds it, and one that takes the next stage's
// has the advance recorded rather than handed over, instead of a create
// refused at every run.
func TestReconcileSeesForeignBindingPoliciesTheCacheDoesNotHold(t *testing.T) {
	needsAPIServer(t)
	ctx := t.Context()

	t.Run("active stage", func(t *testing.T) {
		p := createPolicy(t, "foreign-active", v1alpha1.CleanupFinalizer)
		startPolicy(t, p, "dev")
		createForeignBP(t, v1alpha1.StagePlacement(p.Name, "dev").At(p.Status.UpdateRevision).String())
		r := newTestReconciler(t, time.Now())
		r.Client, r.APIReader, r.IndexedCache = selectedClient(t), testSpace.Client, true
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		got := getPolicy(t, p.Name)
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Reason != v1alpha1.ReasonBindingPolicyConflict {
			t.Errorf("Ready condition %+v, want reason %s", c, v1alpha1.ReasonBindingPolicyConflict)
		}
	})

	t.Run("next stage", func(t *testing.T) {
		p := createPolicy(t, "foreign-next", v1alpha1.CleanupFinalizer)
		devDone(t, p, "foreign-next")
		createForeignBP(t, v1alpha1.StagePlacement(p.Name, "test").At(p.Status.UpdateRevision).String())
		r := newTestReconciler(t, time.Now())
		r.Client, r.APIReader, r.IndexedCache = selectedClient(t), testSpace.Client, true
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if got := getPolicy(t, p.Name); got.Status.ActiveStage != "test" {
			t.Errorf("active stage %q, want test: the next stage's name is taken, so the advance is recorded first", got.Status.ActiveStage)
		}
	})
}

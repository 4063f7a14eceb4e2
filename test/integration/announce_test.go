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

package integration

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
	"github.com/kubestellar/workload-stager/test/framework/process"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// crashKillsEnv, set to a number, is how many times
// TestEventsSurviveKillsAroundStatusWrites kills the stager (default 16);
// crashLogEnv, set to a path, keeps the stager's log there.
const (
	crashKillsEnv = "STAGER_ANNOUNCE_KILLS"
	crashLogEnv   = "STAGER_ANNOUNCE_LOG"
)

// TestEventsSurviveKillsAroundStatusWrites runs the stager binary on a
// space of its own and SIGKILLs it, a random few milliseconds after it
// wrote a policy's status, while two rollouts go on (dev -> test -> prod,
// and dev -> prod placed a cluster at a time, one cluster failing), its
// Events throttled, then starts it again; at the end, every Event the writes promise (each stage
// started, each stage before the last done, the cluster failed, the
// rollouts completed) is in the API server at least once, and was
// delivered as a notification to the receiver both policies subscribe
// (issue 60).
func TestEventsSurviveKillsAroundStatusWrites(t *testing.T) {
	kills := 16
	if v := os.Getenv(crashKillsEnv); v != "" {
		if _, err := fmt.Sscan(v, &kills); err != nil {
			t.Fatalf("$%s: %v", crashKillsEnv, err)
		}
	}
	wds := newSpace(t, "wds-announce", true)
	// The space is the stager's hosting cluster too (--provider=single):
	// a destination there, served by a receiver here, gets the policies'
	// notifications, which must survive the kills as the Events do.
	receiver := notifyReceiver(t, wds)
	dir := t.TempDir()
	binary, err := stack.StagerBinary(dir)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, wds.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func() ([]string, error) {
		addr, err := process.FreeAddress()
		if err != nil {
			return nil, err
		}
		// Events drain at 1 a second, one at a time: a write's Events and a
		// restart's posts queue for seconds, so kills fall while some are
		// handed over but not yet taken by the API server (issue 60: an
		// entry counted posted 2 s after it was handed was lost then).
		return []string{"--kubeconfig=" + kubeconfig, "--provider=single", "--leader-elect=false",
			"--metric-provider-secret-namespace=" + announceSecretNamespace,
			"--space-event-qps=1", "--space-event-burst=1",
			"--metrics-bind-address=0", "--health-probe-bind-address=" + addr}, nil
	}
	logPath := filepath.Join(dir, "stager.log")
	if debugLog := os.Getenv(crashLogEnv); debugLog != "" {
		logPath = debugLog
	}
	start := func() *process.Process {
		t.Helper()
		p, err := stack.StartStager(suite.ctx, binary, args, logPath)
		if err != nil {
			t.Fatalf("starting the stager: %v", err)
		}
		return p
	}
	stager := start()
	t.Cleanup(func() { _ = stager.Stop() })

	const name = "announce"
	createWorkload(t, wds, name)
	for _, stage := range []string{"dev", "test", "prod"} {
		wds.openGate(name, stage)
	}
	policy := newPolicy(name, name)
	policy.Spec.Notifications = []v1alpha1.Notification{{Destination: announceDestination, Events: []v1alpha1.NotificationEvent{
		v1alpha1.NotifyStageStarted, v1alpha1.NotifyStageSucceeded, v1alpha1.NotifyFailed, v1alpha1.NotifyCompleted}}}
	create(t, wds, policy)
	// batch's prod is placed a cluster at a time, prod1 first, which
	// never gets the workload available: it fails past its 3 s deadline,
	// within the budget of one, and prod2 completes the rollout.
	const batch = "announce-batch"
	createWorkload(t, wds, batch)
	wds.openGate(batch, "dev")
	wds.availability.SetAvailable(v1alpha1.StagePlacement(batch, "prod").On("prod2").String(), true)
	prod := policytest.Stage("prod", policytest.Deployments, policytest.Available)
	one := intstr.FromInt32(1)
	prod.MaxConcurrency, prod.MaxFailures, prod.ProgressDeadline = &one, &one, &metav1.Duration{Duration: 3 * time.Second}
	batchPolicy := policytest.Policy(batch, map[string]string{policytest.AppLabel: batch},
		policytest.Stage("dev", policytest.Deployments, policytest.Available), prod)
	batchPolicy.Spec.Notifications = policy.Spec.Notifications
	create(t, wds, batchPolicy)

	// Kill the stager a random 0-10 ms after it wrote the status, as a
	// watch tells, up to kills times, and start it again.
	wc, err := client.NewWithWatch(wds.Config, client.Options{Scheme: wds.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	watch, err := wc.Watch(suite.ctx, &v1alpha1.StagedBindingPolicyList{})
	if err != nil {
		t.Fatalf("watching the policy: %v", err)
	}
	defer watch.Stop()
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill times drawn with seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 60))
	last := map[string]*v1alpha1.StagedBindingPolicyStatus{}
	killed := 0
	deadline := time.After(3 * time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	done := func() bool {
		for _, n := range []string{name, batch} {
			p := &v1alpha1.StagedBindingPolicy{}
			if err := wds.Client.Get(suite.ctx, types.NamespacedName{Name: n}, p); err != nil {
				t.Fatalf("reading policy %s: %v", n, err)
			}
			if p.Status.Phase != v1alpha1.RolloutCompleted || len(p.Status.PendingEvents) > 0 {
				return false
			}
		}
		return true
	}
	for !done() {
		select {
		case <-deadline:
			t.Fatalf("the rollout did not complete and announce everything in time after %d kills; the stager's log %s ends with:\n%s",
				killed, logPath, stager.Tail())
		case <-tick.C:
		case ev, ok := <-watch.ResultChan():
			if !ok {
				t.Fatal("the watch ended")
			}
			p, isPolicy := ev.Object.(*v1alpha1.StagedBindingPolicy)
			if !isPolicy {
				continue
			}
			before := last[p.Name]
			changed := before != nil && !equality.Semantic.DeepEqual(before, &p.Status)
			last[p.Name] = p.Status.DeepCopy()
			if !changed || killed >= kills {
				continue
			}
			// Every write that clears posted Events (the moment an
			// entry counted posted too soon is lost), half the others:
			// the kills reach into the rollouts' ends.
			if cleared := len(p.Status.PendingEvents) < len(before.PendingEvents); !cleared && rng.IntN(2) == 0 {
				continue
			}
			time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
			if err := stager.Kill(); err != nil {
				t.Fatal(err)
			}
			killed++
			t.Logf("killed the stager after a status write of %s (%d): phase %s, active stage %s, %d Events pending",
				p.Name, killed, p.Status.Phase, p.Status.ActiveStage, len(p.Status.PendingEvents))
			stager = start()
		}
	}
	if killed < min(kills, 3) {
		t.Fatalf("the rollouts completed after %d kills, want at least %d: the test proves too little", killed, min(kills, 3))
	}

	want := []struct{ policy, reason, note string }{
		{name, v1alpha1.EventReasonStageStarted, `stage "dev" started`},
		{name, v1alpha1.EventReasonStageSucceeded, `stage "dev" is done`},
		{name, v1alpha1.EventReasonStageStarted, `stage "test" started`},
		{name, v1alpha1.EventReasonStageSucceeded, `stage "test" is done`},
		{name, v1alpha1.EventReasonStageStarted, `stage "prod" started`},
		{name, v1alpha1.ReasonRolloutCompleted, ""},
		{batch, v1alpha1.EventReasonStageStarted, `stage "prod" started`},
		{batch, v1alpha1.EventReasonClusterFailed, `stage "prod": cluster prod1 is`},
		{batch, v1alpha1.ReasonRolloutCompleted, ""},
	}
	environment.Eventually(t, 10*time.Second, "every promised notification delivered", func() error {
		got := receiver.received()
		var missing []string
		for _, w := range want {
			if !slices.ContainsFunc(got, func(n notice) bool {
				return n.Policy == w.policy && n.Reason == w.reason && strings.HasPrefix(n.Message, w.note)
			}) {
				missing = append(missing, fmt.Sprintf("%s: %s %q", w.policy, w.reason, w.note))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("after %d kills, missing the notifications %s; the receiver has %+v", killed, strings.Join(missing, ", "), got)
		}
		return nil
	})
	environment.Eventually(t, 10*time.Second, "every promised Event posted", func() error {
		list := &eventsv1.EventList{}
		if err := wds.Client.List(suite.ctx, list); err != nil {
			return err
		}
		var missing []string
		for _, w := range want {
			found := false
			for _, e := range list.Items {
				if e.Regarding.Name == w.policy && e.Reason == w.reason && strings.HasPrefix(e.Note, w.note) {
					found = true
				}
			}
			if !found {
				missing = append(missing, fmt.Sprintf("%s: %s %q", w.policy, w.reason, w.note))
			}
		}
		if len(missing) > 0 {
			var all []string
			for _, e := range list.Items {
				all = append(all, fmt.Sprintf("%s/%s %s %q", e.Namespace, e.Name, e.Reason, e.Note))
			}
			return fmt.Errorf("after %d kills, missing %s; the API server has %s", killed, strings.Join(missing, ", "), strings.Join(all, "; "))
		}
		return nil
	})
}

// The destination of TestEventsSurviveKillsAroundStatusWrites, and the
// namespace of its Secret.
const (
	announceDestination     = "announce-receiver"
	announceSecretNamespace = "stager-secrets"
	announceToken           = "announce-token"
)

// notice is what a receiver keeps of a CloudEvent.
type notice struct {
	ID                      string
	Policy, Reason, Message string
}

// ceReceiver is a loopback TLS receiver of the stager's CloudEvents.
type ceReceiver struct {
	mu      sync.Mutex
	notices []notice
}

func (r *ceReceiver) received() []notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notices)
}

// notifyReceiver starts a receiver and declares it in wds, which the
// stager takes for its hosting cluster: the hosting CRDs, a
// NotificationDestination for every space, and its CA and token in a
// Secret labelled for notifications.
func notifyReceiver(t *testing.T, wds *space) *ceReceiver {
	t.Helper()
	r := &ceReceiver{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer "+announceToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev struct {
			ID   string `json:"id"`
			Data struct {
				Policy, Reason, Message string
			} `json:"data"`
		}
		if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.notices = append(r.notices, notice{ID: ev.ID, Policy: ev.Data.Policy, Reason: ev.Data.Reason, Message: ev.Data.Message})
		r.mu.Unlock()
		// A slow receiver: notifications queue behind each other, so a
		// kill finds some queued, not yet delivered, past the Events'
		// grace, which a stager clearing entries on less than delivery
		// would lose.
		time.Sleep(time.Second)
	}))
	t.Cleanup(srv.Close)
	crds, err := environment.HostingCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(wds.Config, envtest.CRDInstallOptions{Paths: []string{crds}}); err != nil {
		t.Fatalf("installing the hosting CRDs: %v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: announceSecretNamespace}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: announceSecretNamespace, Name: announceDestination,
		Labels: map[string]string{hostingv1alpha1.NotificationCredentialLabel: "true"}},
		Data: map[string][]byte{"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
			"token": []byte(announceToken)}}
	dest := &hostingv1alpha1.NotificationDestination{ObjectMeta: metav1.ObjectMeta{Name: announceDestination},
		Spec: hostingv1alpha1.NotificationDestinationSpec{Address: srv.URL, Format: hostingv1alpha1.FormatCloudEvents,
			Spaces:               []string{"*"},
			CASecretRef:          &hostingv1alpha1.SecretKeyRef{Name: secret.Name, Key: "ca.crt"},
			BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: secret.Name, Key: "token"}}}
	for _, obj := range []client.Object{ns, secret, dest} {
		if err := wds.Client.Create(suite.ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	return r
}

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
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	mckubeflex "github.com/kubestellar/workload-stager/internal/providers/kubeflex"
	"github.com/kubestellar/workload-stager/providers"
	"github.com/kubestellar/workload-stager/providers/kubeflex"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// TestKubeFlexControlPlanesAreSpaces serves the WDSes a hosting space knows
// as KubeFlex ControlPlanes (KubeFlex's own CRD), with
// --provider=kubeconfig,kubeflex (so its spaces are named kubeflex#<name>):
// a Ready WDS ControlPlane becomes a space and a rollout completes in it
// while its kubeconfig Secret is rotated, with exactly one controller
// throughout; an ITS ControlPlane is ignored; a WDS ControlPlane that is not
// Ready is reported (an Event on it and the metric) and engaged once Ready;
// it is disengaged and reported when its kubeconfig skips TLS verification
// and when its Secret goes, and no longer reported once not selected; a
// served ControlPlane that stops being Ready is disengaged and reported, and
// engaged again once Ready; a deleted one is disengaged and its series go.
func TestKubeFlexControlPlanesAreSpaces(t *testing.T) {
	const name = "found"
	kubeflexCRDs, err := stack.KubeFlexCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := app.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	hosting, err := environment.StartSpace("kubeflex-hosting", environment.WithCRDDirs(kubeflexCRDs), environment.WithScheme(scheme))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hosting.Stop() })
	wds, pending := newSpace(t, "kf-wds", true), newSpace(t, "kf-pending", true)
	register := func(s *space, cpType string) {
		t.Helper()
		kubeconfig, err := s.AddUser(stagerUser)
		if err != nil {
			t.Fatal(err)
		}
		if err := stack.RegisterControlPlane(suite.ctx, hosting.Client, s.Name, cpType, kubeconfig); err != nil {
			t.Fatal(err)
		}
	}
	register(wds, stack.ControlPlaneTypeWDS)
	register(pending, stack.ControlPlaneTypeWDS)
	if err := stack.SetControlPlaneReady(suite.ctx, hosting.Client, pending.Name, false); err != nil {
		t.Fatal(err)
	}
	its := newSpace(t, "kf-its", false)
	register(its, stack.ControlPlaneTypeITS)

	opts := app.NewOptions()
	opts.Providers.Kind = providers.KindKubeconfig + "," + providers.KindKubeFlex
	opts.Providers.Kubeconfig.Namespace = secretNamespace
	opts.Providers.KubeFlex.KubeconfigKey = "external"
	opts.Providers.KubeFlex.Resync = time.Second
	opts.LeaderElectionNamespace = metav1.NamespaceDefault
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.SpaceProbeInterval = time.Second
	opts.AllowSeveralInProcess = true
	r, err := startStagerWith(suite.ctx, hosting, opts, suite.logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.stop)
	spaceOf := func(s *space) string { return providers.KindKubeFlex + providers.Separator + s.Name }

	waitForSpace(t, r, spaceOf(wds), true, spaces.ReasonReady)

	// A second ControlPlane with the WDS's kubeconfig would serve it under
	// a second name, rolling every policy out twice.
	wdsSecret := &corev1.Secret{}
	if err := hosting.Client.Get(suite.ctx, client.ObjectKey{Namespace: stack.ControlPlaneSecretNamespace(wds.Name), Name: stack.ControlPlaneSecretName}, wdsSecret); err != nil {
		t.Fatal(err)
	}
	const copied = "kf-copy"
	if err := stack.RegisterControlPlane(suite.ctx, hosting.Client, copied, stack.ControlPlaneTypeWDS, wdsSecret.Data[stack.ControlPlaneSecretKey]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ControlPlane with a copy of the WDS's kubeconfig reported", func() error {
		if v, ok := metricValue(t, "stager_kubeflex_controlplane_unusable", map[string]string{"controlplane": copied, "reason": kubeflex.ReasonSharedKubeconfig}); !ok || v != 1 {
			return fmt.Errorf("stager_kubeflex_controlplane_unusable{controlplane=%s,reason=%s} = %v (present %t)", copied, kubeflex.ReasonSharedKubeconfig, v, ok)
		}
		return nil
	})
	if _, engaged := spaceState(r, providers.KindKubeFlex+providers.Separator+copied); engaged {
		t.Errorf("the ControlPlane %s serves the WDS %s a second time", copied, wds.Name)
	}
	copiedCP := &unstructured.Unstructured{}
	copiedCP.SetGroupVersionKind(kubeflex.ControlPlaneGVK)
	copiedCP.SetName(copied)
	if err := hosting.Client.Delete(suite.ctx, copiedCP); err != nil {
		t.Fatal(err)
	}

	waitFor(t, "the ControlPlane that is not Ready reported", func() error {
		if v, ok := metricValue(t, "stager_kubeflex_controlplane_unusable", map[string]string{"controlplane": pending.Name, "reason": kubeflex.ReasonNotReady}); !ok || v != 1 {
			return fmt.Errorf("stager_kubeflex_controlplane_unusable{controlplane=%s,reason=NotReady} = %v (present %t)", pending.Name, v, ok)
		}
		return controlPlaneEvent(hosting.Client, pending.Name)
	})
	if _, engaged := spaceState(r, spaceOf(its)); engaged {
		t.Errorf("the ITS ControlPlane %s is a space", its.Name)
	}
	if _, engaged := spaceState(r, spaceOf(pending)); engaged {
		t.Errorf("the ControlPlane %s is a space though not Ready", pending.Name)
	}

	// A rollout, while the WDS's kubeconfig Secret is rotated twice.
	most := sampleControllers(t, r, spaceOf(wds))
	rotate := func() {
		t.Helper()
		kubeconfig, err := wds.AddUser(stagerUser) // a new client certificate
		if err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{}
		key := client.ObjectKey{Namespace: stack.ControlPlaneSecretNamespace(wds.Name), Name: stack.ControlPlaneSecretName}
		if err := hosting.Client.Get(suite.ctx, key, secret); err != nil {
			t.Fatal(err)
		}
		secret.Data[stack.ControlPlaneSecretKey] = kubeconfig
		if err := hosting.Client.Update(suite.ctx, secret); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // a resync reads it
	}
	createWorkload(t, wds, name)
	create(t, wds, newPolicy(name, name))
	policies(wds).WaitForActiveStage(t, name, "dev")
	rotate()
	wds.openGate(name, "dev")
	policies(wds).WaitForActiveStage(t, name, "test")
	rotate()
	wds.openGate(name, "test")
	policies(wds).WaitForPhase(t, name, v1alpha1.RolloutCompleted)
	if m := most(); m != 1 {
		t.Errorf("the space had up to %d controllers at once across two rotations, want 1", m)
	}
	waitForSpace(t, r, spaceOf(wds), true, spaces.ReasonReady)

	// Ready at last: engaged, and no longer reported.
	if err := stack.SetControlPlaneReady(suite.ctx, hosting.Client, pending.Name, true); err != nil {
		t.Fatal(err)
	}
	waitForSpace(t, r, spaceOf(pending), true, spaces.ReasonReady)
	waitFor(t, "the report of the ready ControlPlane gone", func() error {
		if n := series(t, map[string]string{"controlplane": pending.Name}); n != 0 {
			return fmt.Errorf("%d series left", n)
		}
		return nil
	})

	// Served, then refused, unreadable, no longer selected.
	secretKey := client.ObjectKey{Namespace: stack.ControlPlaneSecretNamespace(pending.Name), Name: stack.ControlPlaneSecretName}
	goneAndReported := func(what, reason string) {
		t.Helper()
		waitFor(t, what, func() error {
			if _, engaged := spaceState(r, spaceOf(pending)); engaged {
				return fmt.Errorf("%s is still a space", spaceOf(pending))
			}
			if v, ok := metricValue(t, "stager_kubeflex_controlplane_unusable", map[string]string{"controlplane": pending.Name, "reason": reason}); !ok || v != 1 {
				return fmt.Errorf("stager_kubeflex_controlplane_unusable{controlplane=%s,reason=%s} = %v (present %t)", pending.Name, reason, v, ok)
			}
			return nil
		})
	}
	secret := &corev1.Secret{}
	if err := hosting.Client.Get(suite.ctx, secretKey, secret); err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.Load(secret.Data[stack.ControlPlaneSecretKey])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range config.Clusters {
		c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
	}
	if secret.Data[stack.ControlPlaneSecretKey], err = clientcmd.Write(*config); err != nil {
		t.Fatal(err)
	}
	if err := hosting.Client.Update(suite.ctx, secret); err != nil {
		t.Fatal(err)
	}
	goneAndReported("the ControlPlane whose kubeconfig skips TLS verification disengaged and reported", "InsecureTLS")
	if err := hosting.Client.Delete(suite.ctx, secret); err != nil {
		t.Fatal(err)
	}
	goneAndReported("the ControlPlane whose Secret went disengaged and reported", kubeflex.ReasonSecretUnreadable)
	// Its Events go to the namespace "default": they say neither where its
	// Secret is nor whether it exists, nor what its kubeconfig names. (The
	// Event recorder folds later reports into a series of the first Event
	// with the same reason and action, keeping its note.)
	waitFor(t, "the Events of the ControlPlane", func() error {
		notes, err := controlPlaneNotes(hosting.Client, pending.Name)
		if err != nil {
			return err
		}
		if len(notes) < 2 { // NotReady, InsecureTLS
			return fmt.Errorf("%d %s Events so far: %q", len(notes), mckubeflex.EventReasonUnusable, notes)
		}
		for _, note := range notes {
			if strings.Contains(note, secretKey.Namespace) || strings.Contains(note, secretKey.Name) || strings.Contains(note, "127.0.0.1") ||
				strings.Contains(note, "not found") {
				t.Errorf("a %s Event of the ControlPlane says %q", mckubeflex.EventReasonUnusable, note)
			}
		}
		return nil
	})
	relabeled := &unstructured.Unstructured{}
	relabeled.SetGroupVersionKind(kubeflex.ControlPlaneGVK)
	if err := hosting.Client.Get(suite.ctx, client.ObjectKey{Name: pending.Name}, relabeled); err != nil {
		t.Fatal(err)
	}
	relabeled.SetLabels(map[string]string{stack.ControlPlaneTypeLabel: stack.ControlPlaneTypeITS})
	if err := hosting.Client.Update(suite.ctx, relabeled); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ControlPlane no longer selected no longer reported", func() error {
		if n := series(t, map[string]string{"controlplane": pending.Name}); n != 0 {
			return fmt.Errorf("%d series left", n)
		}
		return nil
	})

	// No longer Ready: disengaged and reported; Ready again: engaged.
	policies(wds).Delete(t, name)
	if err := stack.SetControlPlaneReady(suite.ctx, hosting.Client, wds.Name, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ControlPlane no longer Ready disengaged and reported", func() error {
		if _, engaged := spaceState(r, spaceOf(wds)); engaged {
			return fmt.Errorf("%s is still a space", spaceOf(wds))
		}
		if v, ok := metricValue(t, "stager_kubeflex_controlplane_unusable", map[string]string{"controlplane": wds.Name, "reason": kubeflex.ReasonNotReady}); !ok || v != 1 {
			return fmt.Errorf("stager_kubeflex_controlplane_unusable{controlplane=%s,reason=NotReady} = %v (present %t)", wds.Name, v, ok)
		}
		return nil
	})
	if err := stack.SetControlPlaneReady(suite.ctx, hosting.Client, wds.Name, true); err != nil {
		t.Fatal(err)
	}
	waitForSpace(t, r, spaceOf(wds), true, spaces.ReasonReady)

	// Deleted: disengaged, its series gone.
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(kubeflex.ControlPlaneGVK)
	cp.SetName(wds.Name)
	if err := hosting.Client.Delete(suite.ctx, cp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted ControlPlane's space disengaged and its series gone", func() error {
		if _, engaged := spaceState(r, spaceOf(wds)); engaged {
			return fmt.Errorf("%s is still a space", wds.Name)
		}
		if n := series(t, map[string]string{"space": spaceOf(wds)}); n != 0 {
			return fmt.Errorf("%d series of %s left", n, wds.Name)
		}
		return nil
	})
}

// controlPlaneNotes returns the notes of the ControlPlaneUnusable Events
// that regard the ControlPlane.
func controlPlaneNotes(c client.Client, controlPlane string) ([]string, error) {
	list := &eventsv1.EventList{}
	if err := c.List(suite.ctx, list); err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ControlPlane" && e.Regarding.Name == controlPlane && e.Reason == mckubeflex.EventReasonUnusable {
			notes = append(notes, e.Note)
		}
	}
	return notes, nil
}

// controlPlaneEvent returns an error unless a ControlPlaneUnusable Event
// regards the ControlPlane.
func controlPlaneEvent(c client.Client, controlPlane string) error {
	list := &eventsv1.EventList{}
	if err := c.List(suite.ctx, list); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == "ControlPlane" && e.Regarding.Name == controlPlane && e.Reason == mckubeflex.EventReasonUnusable {
			return nil
		}
	}
	return fmt.Errorf("no %s Event regards ControlPlane %s", mckubeflex.EventReasonUnusable, controlPlane)
}

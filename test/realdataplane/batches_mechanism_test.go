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

package realdataplane

// The tests in this file hold KubeStellar v0.30.0's data plane to what the
// stager's batches rely on, with BindingPolicies written by hand and no
// stager involved. docs/proposals/batches.md says what each shows.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

// TestBindingPolicyWithoutDownsyncListsItsClusters shows how a stage can
// learn its clusters without placing anything there: a BindingPolicy with
// the stage's clusterSelectors and no downsync gets a Binding that names
// every selected cluster, follows clusters that join or leave the
// selectors, and makes no ManifestWork.
func TestBindingPolicyWithoutDownsyncListsItsClusters(t *testing.T) {
	const name, mark = "census-experiment", "stager-experiment"
	bp := &ksv1alpha1.BindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: ksv1alpha1.BindingPolicySpec{ClusterSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"env": "dev"}},
			{MatchLabels: map[string]string{mark: "census"}},
		}},
	}
	createHandBindingPolicy(t, bp)
	waitForDestinations(t, name, "dev1", "dev2")

	begin := time.Now()
	labelCluster(t, "edge1", mark, "census")
	waitForDestinations(t, name, "dev1", "dev2", "edge1")
	t.Logf("a cluster that joins the selectors is a destination %s after its label is set", time.Since(begin).Round(10*time.Millisecond))
	begin = time.Now()
	labelCluster(t, "edge1", mark, "")
	waitForDestinations(t, name, "dev1", "dev2")
	t.Logf("a cluster that leaves the selectors is no destination %s after its label is removed", time.Since(begin).Round(10*time.Millisecond))

	environment.Consistently(t, 5*time.Second, "no ManifestWork for a BindingPolicy without downsync", func() error {
		for _, mw := range itsList(t, "ManifestWork", "work.open-cluster-management.io", "v1") {
			if mw.GetLabels()["transport.kubestellar.io/originOwnerReferenceBindingKey"] == name {
				return fmt.Errorf("ManifestWork %s/%s", mw.GetNamespace(), mw.GetName())
			}
		}
		return nil
	})
}

// TestBindingPolicyPerClusterPlacesOneWEC shows how a stage can place one
// cluster at a time: a BindingPolicy whose clusterSelectors are the stage's
// and the cluster's name label (KubeStellar's convention, set when the
// cluster is registered) places the workload on that cluster only, and its
// CombinedStatus reports on that cluster only.
func TestBindingPolicyPerClusterPlacesOneWEC(t *testing.T) {
	const space, app = "wds1", "percluster"
	createWorkload(t, space, app)
	bp := devBindingPolicy(app+"-dev2", []metav1.LabelSelector{{MatchLabels: map[string]string{policytest.AppLabel: app}}})
	bp.Spec.ClusterSelectors[0].MatchExpressions = []metav1.LabelSelectorRequirement{
		{Key: kubestellar.NameLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"dev2"}}}
	createHandBindingPolicy(t, bp)
	waitForWECs(t, app, "dev2")
	waitForDestinations(t, bp.Name, "dev2")
	environment.Eventually(t, timeout, "the CombinedStatus of the Deployment on dev2 alone", func() error {
		wecs, err := combinedStatusWECs(space, app)
		if err != nil {
			return err
		}
		if !slices.Equal(wecs, []string{"dev2"}) {
			return fmt.Errorf("it reports on %v", wecs)
		}
		return nil
	})
}

// waitForDestinations waits until the Binding of a BindingPolicy of wds1
// names exactly the given clusters.
func waitForDestinations(t testing.TB, name string, want ...string) {
	t.Helper()
	environment.Eventually(t, timeout, fmt.Sprintf("Binding %s naming %v", name, want), func() error {
		got, err := policies("wds1").Destinations(name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("it names %v", got)
		}
		return nil
	})
}

// labelCluster sets (or, with value "", removes) a label of a ManagedCluster.
func labelCluster(t testing.TB, cluster, key, value string) {
	t.Helper()
	environment.Eventually(t, timeout, "labelling ManagedCluster "+cluster, func() error {
		mc := &unstructured.Unstructured{}
		mc.SetAPIVersion("cluster.open-cluster-management.io/v1")
		mc.SetKind("ManagedCluster")
		if err := suite.stack.ITS.Client.Get(suite.ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			return err
		}
		labels := mc.GetLabels()
		if value == "" {
			delete(labels, key)
		} else {
			labels[key] = value
		}
		mc.SetLabels(labels)
		return suite.stack.ITS.Client.Update(suite.ctx, mc)
	})
}

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

package v1alpha1_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// newPolicy is a suspended policy of that name with one stage and, unless
// revision is "", spec.revision.
func newPolicy(name, stage, revision string) *v1alpha1.StagedBindingPolicy {
	p := &v1alpha1.StagedBindingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.StagedBindingPolicySpec{Suspend: true, Stages: []v1alpha1.Stage{{Name: stage,
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"env": "dev"}}}}}},
	}
	if revision != "" {
		p.Spec.Revision = &v1alpha1.Revision{Name: revision}
	}
	return p
}

// isNameRule reports whether a rule of the CRD is one of the rules on names
// that the stager's generated names rely on.
func isNameRule(r apiextensionsv1.ValidationRule) bool {
	return r.OptionalOldSelf != nil && *r.OptionalOldSelf
}

// TestNameRulesOfTheAPIServer checks, against a real API server, the CRD
// rules that make generated names unambiguous: the policies of issue 54
// whose names collided are not both admitted; the API server admits
// exactly the names TestPlacementNameRoundTrip draws under (its reading
// of the generated CRD); and a policy stored before the rules keeps accepting
// updates of its spec and status.
func TestNameRulesOfTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver; run without -short (make test)")
	}
	scheme := environment.Scheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	space, err := environment.StartSpace("names", environment.WithStagerCRDs(), environment.WithScheme(scheme))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := space.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, c := t.Context(), space.Client

	t.Run("two names that would read alike are not both admitted", func(t *testing.T) {
		if err := c.Create(ctx, newPolicy("web", "prod", "stage")); err != nil {
			t.Fatalf("policy web, stage prod, revision stage: %v", err)
		}
		err := c.Create(ctx, newPolicy("web.stage.prod", "on", "c1"))
		if err == nil || !strings.Contains(err.Error(), "may not have stage as a dot-separated part") {
			t.Errorf("policy web.stage.prod: %v, want it refused", err)
		}
		err = c.Create(ctx, newPolicy("rev-on", "prod", "on"))
		if err == nil || !strings.Contains(err.Error(), "a revision may not be named on") {
			t.Errorf("revision on: %v, want it refused", err)
		}
		web := &v1alpha1.StagedBindingPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: "web"}, web); err != nil {
			t.Fatal(err)
		}
		web.Spec.Revision.Name = "on"
		if err := c.Update(ctx, web); err == nil || !strings.Contains(err.Error(), "a revision may not be named on") {
			t.Errorf("revision changed to on: %v, want it refused", err)
		}
		if err := c.Delete(ctx, web); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the API server admits what the property draws under", func(t *testing.T) {
		rules := loadNameRules(t)
		rapid.Check(t, func(rt *rapid.T) {
			name := dotted(3).Filter(func(n string) bool { return len(validation.IsDNS1123Subdomain(n)) == 0 }).Draw(rt, "policy")
			stage := part().Draw(rt, "stage")
			revision := rapid.OneOf(rapid.Just(""), part()).Draw(rt, "revision")
			want := rules.policyAdmitted(t, name) && rules.stage.admits(t, stage) && (revision == "" || rules.revision.admits(t, revision))
			p := newPolicy(name, stage, revision)
			err := c.Create(ctx, p)
			if err == nil {
				if err := c.Delete(ctx, p); err != nil {
					rt.Fatal(err)
				}
			}
			if got := err == nil; got != want {
				rt.Fatalf("policy %q, stage %q, revision %q: admitted %v (%v), the CRD's rules as the property reads them say %v",
					name, stage, revision, got, err, want)
			}
		})
	})

	t.Run("a policy stored before the rules keeps working", func(t *testing.T) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		key := client.ObjectKey{Name: "stagedbindingpolicies.community.kubestellar.io"}
		if err := c.Get(ctx, key, crd); err != nil {
			t.Fatal(err)
		}
		withRules := crd.DeepCopy()
		// The CRD of before: without the rules on names.
		schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		schema.XValidations = slices.DeleteFunc(schema.XValidations, isNameRule)
		revision := schema.Properties["spec"].Properties["revision"]
		name := revision.Properties["name"]
		name.XValidations = slices.DeleteFunc(name.XValidations, isNameRule)
		revision.Properties["name"] = name
		schema.Properties["spec"].Properties["revision"] = revision
		if err := c.Update(ctx, crd); err != nil {
			t.Fatalf("removing the rules: %v", err)
		}
		legacy := newPolicy("old.stage.web", "on", "on")
		eventually(t, "the policy of before admitted", func() error { return c.Create(ctx, legacy) })

		if err := c.Get(ctx, key, crd); err != nil {
			t.Fatal(err)
		}
		crd.Spec = withRules.Spec
		if err := c.Update(ctx, crd); err != nil {
			t.Fatalf("restoring the rules: %v", err)
		}
		eventually(t, "a new policy of such a name refused", func() error {
			p := newPolicy("new.stage.web", "prod", "")
			err := c.Create(ctx, p)
			if err == nil {
				return errors.Join(errAdmitted, c.Delete(ctx, p))
			}
			if !strings.Contains(err.Error(), "may not have stage as a dot-separated part") {
				return err
			}
			return nil
		})

		if err := c.Get(ctx, client.ObjectKeyFromObject(legacy), legacy); err != nil {
			t.Fatal(err)
		}
		legacy.Spec.Suspend = false
		if err := c.Update(ctx, legacy); err != nil {
			t.Errorf("updating the spec of the policy of before: %v", err)
		}
		legacy.Status.Phase, legacy.Status.ActiveStage = v1alpha1.RolloutProgressing, "on"
		if err := c.Status().Update(ctx, legacy); err != nil {
			t.Errorf("updating the status of the policy of before: %v", err)
		}
	})
}

// errAdmitted says the API server admitted what it should have refused.
var errAdmitted = errors.New("admitted")

// eventually retries f until it returns nil, for up to 30 seconds: a CRD's
// change reaches the API server's handlers a little after its update.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

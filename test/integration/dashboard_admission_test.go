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
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// TestDashboardShowsAnAdmissionRefusal runs the dashboard with the
// kubeconfig of wds2's promoter pat, whose RBAC (the shipped promoter role)
// lets him patch policies: a confirmed suspend reaches the API server, the
// shipped admission policy workload-stager-promotions refuses it (a change
// of the spec beyond spec.promotion needs the verb update), and the result
// page shows the API server's message verbatim, escaped; the rollout is
// not suspended.
func TestDashboardShowsAnAdmissionRefusal(t *testing.T) {
	s, ctx := suite.wds2, suite.ctx
	if err := s.InstallPromotions(ctx); err != nil {
		t.Fatal(err)
	}
	const user, name = "pat", "dash-admission"
	kubeconfig, err := s.AddUser(user)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(ctx, user, environment.PromoterRole); err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pat, err := client.New(config, client.Options{Scheme: s.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	createWorkload(t, s, name)
	create(t, s, newPolicy(name, name))
	t.Cleanup(func() { policies(s).Delete(t, name) })

	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: v1alpha1.GroupVersion.Group, Resource: "stagedbindingpolicies",
			Verb: "patch", Name: name}}}
	if err := pat.Create(ctx, review); err != nil || !review.Status.Allowed {
		t.Fatalf("%s's RBAC does not let him patch %s (%v): the refusal would be RBAC's, not the admission policy's", user, name, err)
	}
	// What the API server answers pat's suspend, asked in a dry run.
	p := &v1alpha1.StagedBindingPolicy{}
	if err := pat.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	err = pat.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)), client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'workload-stager-promotions'") {
		t.Fatalf("pat's suspend, in a dry run: %v, want the admission policy's refusal", err)
	}
	want := html.EscapeString(err.Error())

	b := newBrowser(t, runDashboard(t, kubeconfig))
	if status, body := b.get("/"); status != http.StatusOK || b.token == "" {
		t.Fatalf("GET /: %d, token %q\n%s", status, b.token, body)
	}
	status, body := b.post(url.Values{"csrf": {b.token}, "space": {""}, "name": {name}, "verb": {"suspend"}, "confirmed": {"yes"}}, "", "")
	if status != http.StatusOK || !strings.Contains(body, `class="refusal"`) || !strings.Contains(body, want) {
		t.Errorf("suspending as %s: %d, want the admission policy's refusal %s\n%s", user, status, want, body)
	}
	if strings.Contains(body, "'workload-stager-promotions'") {
		t.Error("the refusal's quotes are not escaped")
	}
	if policies(s).Get(t, name).Spec.Suspend {
		t.Error("the refused suspend suspended the rollout")
	}
}

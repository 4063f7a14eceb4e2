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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestPlacementNameString: the names of objects already stored, byte for
// byte.
func TestPlacementNameString(t *testing.T) {
	for _, c := range []struct {
		n    v1alpha1.PlacementName
		want string
	}{
		{v1alpha1.StagePlacement("web", "prod"), "web.stage.prod"},
		{v1alpha1.StagePlacement("web.app", "prod").At(""), "web.app.stage.prod"},
		{v1alpha1.StagePlacement("web", "prod").At(v1alpha1.Unrevisioned), "web.stage.prod"},
		{v1alpha1.PlacementName{Policy: "web", Stage: "prod", Revision: v1alpha1.Unrevisioned}, "web.stage.prod"},
		{v1alpha1.StagePlacement("web", "prod").At("v2"), "web.stage.prod.v2"},
		{v1alpha1.StageCensus("web", "prod"), "web.stage.prod.clusters.selected"},
		{v1alpha1.StagePlacement("web", "prod").On("store-a"), "web.stage.prod.on.store-a"},
		{v1alpha1.StagePlacement("web", "prod").At("v2").On("store.a"), "web.stage.prod.v2.on.store.a"},
		{v1alpha1.StagePlacement("web", "prod").At(v1alpha1.Unrevisioned).On("c1"), "web.stage.prod.on.c1"},
	} {
		if got := c.n.String(); got != c.want {
			t.Errorf("%#v: %q, want %q", c.n, got, c.want)
		}
	}
}

// TestActivePlacement: a stage placed in batches keeps its census, any
// other stage its placement at the revision.
func TestActivePlacement(t *testing.T) {
	plain := v1alpha1.Stage{Name: "prod"}
	batched := v1alpha1.Stage{Name: "prod", MaxConcurrency: ptr.To(intstr.FromInt32(1))}
	for _, c := range []struct {
		stage    v1alpha1.Stage
		revision string
		want     string
	}{
		{plain, "", "web.stage.prod"},
		{plain, v1alpha1.Unrevisioned, "web.stage.prod"},
		{plain, "v2", "web.stage.prod.v2"},
		{batched, "", "web.stage.prod.clusters.selected"},
		{batched, "v2", "web.stage.prod.clusters.selected"},
	} {
		if got := v1alpha1.ActivePlacement("web", c.stage, c.revision).String(); got != c.want {
			t.Errorf("stage %+v at %q: %q, want %q", c.stage, c.revision, got, c.want)
		}
	}
}

// placementName draws a PlacementName of names the CRD admits (read from
// the generated CRD by loadNameRules), mostly made of the parts the
// grammar gives a meaning to, and any cluster name: a DNS subdomain, dots
// and all, as KubeStellar takes it from OCM.
func placementName(t *testing.T, rules nameRules) *rapid.Generator[v1alpha1.PlacementName] {
	return rapid.Custom(func(rt *rapid.T) v1alpha1.PlacementName {
		policy := dotted(4).Filter(func(n string) bool { return rules.policyAdmitted(t, n) }).Draw(rt, "policy")
		stage := part().Filter(func(n string) bool { return rules.stage.admits(t, n) }).Draw(rt, "stage")
		if rapid.Bool().Draw(rt, "census") {
			return v1alpha1.StageCensus(policy, stage)
		}
		revision := rapid.OneOf(rapid.Just(""), part().Filter(func(n string) bool { return rules.revision.admits(t, n) })).Draw(rt, "revision")
		cluster := rapid.OneOf(rapid.Just(""),
			dotted(3).Filter(func(n string) bool { return len(validation.IsDNS1123Subdomain(n)) == 0 })).Draw(rt, "cluster")
		return v1alpha1.StagePlacement(policy, stage).At(revision).On(cluster)
	})
}

// TestPlacementNameRoundTrip: every PlacementName of names the CRD admits
// parses back from its String, so no two share a name, across policies and
// kinds. TestNameRulesOfTheAPIServer checks that a real API server admits
// what the CRD's rules, as read here, admit.
func TestPlacementNameRoundTrip(t *testing.T) {
	rules := loadNameRules(t)
	rapid.Check(t, func(rt *rapid.T) {
		n := placementName(t, rules).Draw(rt, "n")
		got, err := v1alpha1.ParsePlacementName(n.String())
		if err != nil || got != n {
			rt.Fatalf("%s parses as %#v (%v), want %#v", n, got, err, n)
		}
	})
}

// TestPlacementNamesDistinct: no two PlacementNames of names the CRD
// admits share a String, whatever the parser says. It tries every
// PlacementName made of the parts the grammar gives a meaning to and one
// plain part (policy names of up to two parts, cluster names of up to
// three, stage and revision names of one): a grammar that two names read alike in is
// ambiguous on these parts already.
func TestPlacementNamesDistinct(t *testing.T) {
	rules := loadNameRules(t)
	parts := []string{"stage", "on", "clusters", "selected", "a"}
	var two, three []string // every name of up to two, three parts
	for _, a := range parts {
		two, three = append(two, a), append(three, a)
		for _, b := range parts {
			two, three = append(two, a+"."+b), append(three, a+"."+b)
			for _, c := range parts {
				three = append(three, a+"."+b+"."+c)
			}
		}
	}
	admitted := func(names []string, admits func(string) bool) []string {
		var out []string
		for _, n := range names {
			if admits(n) {
				out = append(out, n)
			}
		}
		return out
	}
	policies := admitted(two, func(n string) bool { return rules.policyAdmitted(t, n) })
	stages := admitted(parts, func(n string) bool { return rules.stage.admits(t, n) })
	revisions := append([]string{""}, admitted(parts, func(n string) bool { return rules.revision.admits(t, n) })...)
	clusters := append([]string{""}, three...)
	seen := map[string]v1alpha1.PlacementName{}
	add := func(n v1alpha1.PlacementName) {
		if other, ok := seen[n.String()]; ok {
			t.Fatalf("%#v and %#v are both named %s", other, n, n)
		}
		seen[n.String()] = n
	}
	for _, p := range policies {
		for _, s := range stages {
			add(v1alpha1.StageCensus(p, s))
			for _, r := range revisions {
				for _, c := range clusters {
					add(v1alpha1.StagePlacement(p, s).At(r).On(c))
				}
			}
		}
	}
	t.Logf("%d names, all distinct", len(seen))
}

// TestParsePlacementNameReadsOnlyGeneratedNames: a name the parser accepts
// is the String of what it parses to, and names String never gives are
// refused.
func TestParsePlacementNameReadsOnlyGeneratedNames(t *testing.T) {
	for _, name := range []string{"", "web", "stage", "stage.prod", "web.stage", "web.stage.prod.a.b",
		"web.stage.prod.-", "web.stage.prod.-.on.c1", "web..stage.prod", "web.stage.prod.", "web.stage.prod.v1.on",
		"web.stage.prod.on.", "web.stage.prod.clusters.selected.on.c1"} {
		if n, err := v1alpha1.ParsePlacementName(name); err == nil {
			t.Errorf("%q parses as %#v", name, n)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		name := strings.Join(rapid.SliceOfN(rapid.OneOf(part(), rapid.Just(""), rapid.Just("-")), 1, 8).Draw(rt, "parts"), ".")
		n, err := v1alpha1.ParsePlacementName(name)
		if err == nil && n.String() != name {
			rt.Fatalf("%q parses as %#v, whose name is %q", name, n, n)
		}
	})
}

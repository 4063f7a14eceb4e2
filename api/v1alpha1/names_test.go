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
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// crdPath is the generated CRD of StagedBindingPolicy, whose rules
// TestPlacementNameRoundTrip draws its names under.
const crdPath = "../../config/crd/bases/community.kubestellar.io_stagedbindingpolicies.yaml"

// nameRules are the CRD's rules on the names that go into generated names.
type nameRules struct {
	policy   []cel.Program // the rules on the whole object, which read metadata.name
	stage    stringRules
	revision stringRules
}

// stringRules are a string field's schema: its pattern, length bounds and
// CEL rules (self the string).
type stringRules struct {
	pattern  *regexp.Regexp
	min, max int64
	rules    []cel.Program
}

// loadNameRules reads the CRD's rules on the policy's name, its stages'
// names and its revision's name, and compiles their CEL rules as the API
// server runs them on a create (oldSelf has no value).
func loadNameRules(t *testing.T) nameRules {
	t.Helper()
	raw, err := os.ReadFile(filepath.FromSlash(crdPath))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	env, err := cel.NewEnv(cel.OptionalTypes(), ext.Strings(),
		cel.Variable("self", cel.DynType), cel.Variable("oldSelf", cel.OptionalType(cel.DynType)))
	if err != nil {
		t.Fatal(err)
	}
	compile := func(rules apiextensionsv1.ValidationRules) []cel.Program {
		var programs []cel.Program
		for _, r := range rules {
			ast, iss := env.Compile(r.Rule)
			if iss.Err() != nil {
				t.Fatalf("rule %q: %v", r.Rule, iss.Err())
			}
			p, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			programs = append(programs, p)
		}
		return programs
	}
	field := func(s apiextensionsv1.JSONSchemaProps) stringRules {
		r := stringRules{pattern: regexp.MustCompile(s.Pattern), rules: compile(s.XValidations)}
		if s.MinLength != nil {
			r.min = *s.MinLength
		}
		if s.MaxLength != nil {
			r.max = *s.MaxLength
		}
		return r
	}
	spec := root.Properties["spec"]
	return nameRules{
		policy:   compile(root.XValidations),
		stage:    field(spec.Properties["stages"].Items.Schema.Properties["name"]),
		revision: field(spec.Properties["revision"].Properties["name"]),
	}
}

// admits runs CEL rules on self as on a create.
func admits(t *testing.T, programs []cel.Program, self any) bool {
	for _, p := range programs {
		out, _, err := p.Eval(map[string]any{"self": self, "oldSelf": types.OptionalNone})
		if err != nil {
			t.Fatalf("evaluating a rule: %v", err)
		}
		if out != types.True {
			return false
		}
	}
	return true
}

func (r stringRules) admits(t *testing.T, s string) bool {
	return int64(len(s)) >= r.min && (r.max == 0 || int64(len(s)) <= r.max) && r.pattern.MatchString(s) && admits(t, r.rules, s)
}

// policyAdmitted reports whether the API server admits a new policy of
// that name: a DNS subdomain (every custom resource's name) that the CRD's
// rules admit.
func (r nameRules) policyAdmitted(t *testing.T, name string) bool {
	return len(validation.IsDNS1123Subdomain(name)) == 0 &&
		admits(t, r.policy, map[string]any{"metadata": map[string]any{"name": name}})
}

// tricky are the parts the grammar gives a meaning to, and a few others;
// names are drawn mostly from them, so that collisions are tried often.
var tricky = []string{"stage", "on", "clusters", "selected", "web", "prod", "c1", "s", "a-b", "0"}

// part draws a DNS label, mostly a tricky one.
func part() *rapid.Generator[string] {
	return rapid.OneOf(rapid.SampledFrom(tricky), rapid.StringMatching(`[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?`))
}

// dotted draws from 1 to max parts joined by dots.
func dotted(max int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(part(), 1, max).Draw(t, "parts"), ".")
	})
}

// TestNameRulesRejectTheCollision: the names of issue 54 that collided
// (policy web, stage prod, revision stage, cluster c1; policy
// web.stage.prod, stage on, revision c1) are no longer both admitted, nor
// is a revision that would make a cluster's name ambiguous.
func TestNameRulesRejectTheCollision(t *testing.T) {
	rules := loadNameRules(t)
	if v1alpha1.StagePlacement("web", "prod").At("stage").On("c1").String() != v1alpha1.StagePlacement("web.stage.prod", "on").At("c1").String() {
		t.Fatal("the example does not collide: the test no longer shows what it is for")
	}
	for _, name := range []string{"web.stage.prod", "stage", "stage.web", "web.stage"} {
		if rules.policyAdmitted(t, name) {
			t.Errorf("policy name %q admitted", name)
		}
	}
	for _, name := range []string{"web", "web.prod", "stages.web", "web.stager", "backstage.web"} {
		if !rules.policyAdmitted(t, name) {
			t.Errorf("policy name %q refused", name)
		}
	}
	if rules.revision.admits(t, "on") || !rules.revision.admits(t, "one") {
		t.Error("revision on admitted, or one refused")
	}
}
